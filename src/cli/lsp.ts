/**
 * `toolbelt lsp diagnostics FILE` (and the other operations of the lsp tool): one call of the lsp
 * tool through registry.execute, its answer on stdout; the servers it started are stopped before the
 * command returns. Exit 1 when the call fails (no server, not known in time).
 * Must not talk to servers itself: the lsp tool does.
 */
import path from 'node:path';
import type { Tool } from '../authoring/tool.js';
import { serverTableOf } from '../lsp/config.js';
import { locateServer } from '../lsp/locate.js';
import { workspaceRootFor } from '../workspace/workspace.js';
import { UsageError, unknownTool, type Command, type Setup } from './command.js';
import { resultText } from '../pipeline/result-text.js';

const OPERATIONS = ['diagnostics', 'documentSymbols', 'definition', 'references', 'hover', 'workspaceSymbols'];

async function lsp({ registry, initCtx, grant }: Setup, _values: unknown, positionals: string[]): Promise<number> {
  const [operation, file, where] = positionals;
  if (!OPERATIONS.includes(operation)) {
    throw new UsageError(`Unknown lsp operation "${operation}". Operations: ${OPERATIONS.join(', ')}.`);
  }
  if (!registry.has('lsp')) throw unknownTool(registry, 'lsp');
  const args: Record<string, unknown> = { operation, filePath: file };
  if (where !== undefined) {
    // LINE:COLUMN, LINE:NAME, or (workspaceSymbols) the name searched for.
    const m = /^(\d+):(.+)$/.exec(where);
    if (operation === 'workspaceSymbols') args.symbol = where;
    else if (!m)
      throw new UsageError(
        `The position must be LINE:COLUMN or LINE:NAME (e.g. 12:7 or 12:add), got ${JSON.stringify(where)}.`,
      );
    else {
      args.line = Number(m[1]);
      if (/^\d+$/.test(m[2])) args.column = Number(m[2]);
      else args.symbol = m[2];
    }
  }
  try {
    const final = await registry.execute('lsp', args, { sessionID: 'toolbelt-lsp', agent: 'toolbelt-cli' }, initCtx, {
      enabledPermissions: grant,
    });
    if (!final.success) {
      process.stderr.write(`${resultText(final)}\n`);
      return 1;
    }
    process.stdout.write(final.result.output.endsWith('\n') ? final.result.output : `${final.result.output}\n`);
    return 0;
  } finally {
    // The servers this command started end with it.
    await registry.dispose();
  }
}

export const lspCommand: Command = {
  options: {},
  positionals: [2, 3],
  usage:
    'toolbelt lsp diagnostics|documentSymbols|definition|references|hover|workspaceSymbols FILE [LINE:COLUMN|LINE:NAME|NAME]',
  run: (setup, values, positionals) => lsp(setup, values, positionals),
};

/** `toolbelt doctor`'s line: each language server and where it was found, or that it was not. */
export async function lspDoctorLine(initCtx: Tool.InitContext): Promise<string> {
  const table = serverTableOf(initCtx);
  if (!table) return 'switched off (initCtx.lsp is false)';
  const root = path.resolve(workspaceRootFor(initCtx));
  const found = await Promise.all(
    table.specs.map(async (spec) => {
      const launch = await locateServer(spec, root, root);
      return typeof launch === 'string'
        ? `${spec.name} not found`
        : `${spec.name} (${spec.command}, from ${launch.foundIn})`;
    }),
  );
  return `${found.join('; ')}: write and edit report the errors a change introduced; the lsp tool navigates code`;
}
