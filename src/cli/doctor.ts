/**
 * `toolbelt doctor`: loads what a user would run (built-ins, --tools modules, --mcp-config servers,
 * --rest-config APIs, under --permissions) and reports, per provider API, which tools it would
 * refuse and why (src/schema/provider-rules.ts, the rules the provider mocks enforce), the size of
 * the definitions sent, and what the environment offers (ripgrep, the OS sandbox, the store).
 * Exit 1 when any tool would be refused. Must not call any model: it judges the definitions only.
 */
import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import path from 'node:path';
import type { StructuredToolInterface } from '@langchain/core/tools';
import { UsageError, type Command, type Setup, type Values } from './command.js';
import { apiViolations, type Api, type SentTool } from '../schema/provider-rules.js';
import { lspDoctorLine } from './lsp.js';
import { errorText } from '../pipeline/errors.js';
import { MIN_DESCRIPTION_CHARS } from '../registry/description-fit.js';

/** The description length some OpenAI-compatible endpoints (Azure OpenAI, several proxies) refuse past. */
export const SHORT_DESCRIPTION_ENDPOINT_CHARS = 1024;

/** One row of the report: an API as a provider class would call it. */
interface Target {
  label: string;
  api: Api;
  strict?: boolean;
  /** The definitions in this API's request format, for their size. */
  wire: (t: StructuredToolInterface) => unknown;
}

const TARGETS: Target[] = [
  {
    label: 'OpenAI Chat',
    api: 'openai-chat',
    wire: (t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.schema } }),
  },
  {
    label: 'OpenAI strict',
    api: 'openai-chat',
    strict: true,
    wire: (t) => ({
      type: 'function',
      function: { name: t.name, description: t.description, parameters: t.schema, strict: true },
    }),
  },
  {
    label: 'OpenAI Responses',
    api: 'openai-responses',
    wire: (t) => ({ type: 'function', name: t.name, description: t.description, parameters: t.schema }),
  },
  {
    label: 'Anthropic',
    api: 'anthropic',
    wire: (t) => ({ name: t.name, description: t.description, input_schema: t.schema }),
  },
  {
    label: 'Gemini',
    api: 'gemini',
    wire: (t) => ({ name: t.name, description: t.description, parameters: t.schema }),
  },
];

/** Where `name` is on PATH, if it is. */
async function onPath(name: string): Promise<string | undefined> {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter).filter(Boolean)) {
    const file = path.join(dir, name);
    if (
      await access(file, constants.X_OK).then(
        () => true,
        () => false,
      )
    )
      return file;
  }
  return undefined;
}

const n = (v: number) => v.toLocaleString('en-US');

/**
 * Initialises each tool the grant enables, one at a time: a tool whose init throws (a schema built
 * there that JSON Schema cannot hold, such as a z.date() parameter) is that tool's refusal, with
 * the error's sentence (tool, parameter, fix), and the others are still judged.
 */
async function initialise(registry: Setup['registry'], grant: Setup['grant'], initCtx: Setup['initCtx']) {
  const ok: string[] = [];
  const broken: string[] = [];
  for (const id of registry.enabled(grant)) {
    const failure = await registry.initialized(id, initCtx).then(
      () => undefined,
      (err: unknown) => errorText(err, id),
    );
    if (failure === undefined) ok.push(id);
    else broken.push(`  - ${id}: ${failure}`);
  }
  return { ok, broken };
}

async function doctor({ registry, initCtx, grant, store }: Setup, values: Values): Promise<number> {
  const max = parseMax(values['max-description-chars']);
  const fit = max === undefined ? {} : { maxDescriptionChars: max };
  const { ok, broken } = await initialise(registry, grant, initCtx);
  const plain = await registry.tools({ ids: ok, enabledPermissions: grant, initCtx, ...fit });
  const strict = await registry.tools({ ids: ok, enabledPermissions: grant, initCtx, strict: true, ...fit });
  const out: string[] = [
    `toolbelt doctor: ${plain.length + broken.length} tools (permissions: ${grant.join(', ') || 'none'})`,
    '',
  ];
  let refused = broken.length;
  if (broken.length) out.push(`${'Every API'.padEnd(22)} ${broken.length} refused: set up fails`, ...broken);
  for (const target of TARGETS) {
    const tools = target.strict ? strict : plain;
    const problems = tools.flatMap((t) => {
      const schema = t.schema as { properties?: Record<string, unknown> };
      // @langchain/google-genai leaves out the parameters of a tool that takes none.
      const none = target.api === 'gemini' && !Object.keys(schema.properties ?? {}).length;
      const sent: SentTool = {
        name: t.name,
        description: t.description,
        parameters: none ? undefined : schema,
        strict: target.strict,
      };
      const found = apiViolations(target.api, sent);
      return found.length
        ? [`  - ${t.name}: ${found[0]}${found.length > 1 ? ` (and ${found.length - 1} more)` : ''}`]
        : [];
    });
    refused += problems.length;
    const size = JSON.stringify(tools.map(target.wire)).length;
    out.push(
      `${target.label.padEnd(22)} ${problems.length ? `${problems.length} refused` : 'ok'.padEnd(9)}  ${n(size)} characters of definitions`,
      ...problems,
    );
  }
  // Endpoints with a description limit: counted when --max-description-chars says you target one.
  const long = plain.filter((t) => t.description.length > SHORT_DESCRIPTION_ENDPOINT_CHARS);
  const label = `${n(SHORT_DESCRIPTION_ENDPOINT_CHARS)}-char endpoints`.padEnd(22);
  if (!long.length) out.push(`${label} ok`);
  else {
    if (max !== undefined) refused += long.length;
    out.push(
      `${label} ${long.length} refused${max === undefined ? ' (pass --max-description-chars 1024 to fit them)' : ''}`,
      ...long.map((t) => `  - ${t.name}: description of ${n(t.description.length)} characters`),
    );
  }
  const rg = await onPath('rg');
  // The real probes: the registry's sandbox starts bubblewrap once; the store answers one read.
  const sandbox = await registry.sandboxStatus(initCtx);
  const reached = store
    ? await Promise.resolve(store.get(['doctor'], 'probe')).then(
        () => 'answers',
        (err: Error) => `does not answer: ${err.message}`,
      )
    : undefined;
  out.push(
    '',
    'Environment:',
    `  ripgrep          ${rg ? `${rg} (grep and glob use it)` : 'not found: grep uses its JavaScript fallback (install ripgrep)'}`,
    `  OS sandbox       ${sandbox.enabled ? `bubblewrap at ${sandbox.enginePath ?? 'bwrap'}: commands run contained (mode ${sandbox.mode})` : sandbox.reason}`,
    `  store            ${store ? `${store.label} ${reached}` : 'in-process (state lives as long as the process; --store URL to share it)'}`,
    `  language servers ${await lspDoctorLine(initCtx)}`,
    '',
    refused
      ? `${refused} refusal${refused > 1 ? 's' : ''}: fix the tools above before running an agent on those APIs.`
      : 'No tool would be refused.',
  );
  process.stdout.write(`${out.join('\n')}\n`);
  return refused ? 1 : 0;
}

function parseMax(value: unknown): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !/^\d+$/.test(value.trim()) || Number(value) < MIN_DESCRIPTION_CHARS)
    throw new UsageError(
      `--max-description-chars must be a whole number of at least ${MIN_DESCRIPTION_CHARS}, got ${JSON.stringify(value)}.`,
    );
  return Number(value);
}

export const doctorCommand: Command = {
  options: { 'max-description-chars': { type: 'string' } },
  positionals: [0, 0],
  usage: 'toolbelt doctor [--tools FILE] [--mcp-config FILE] [--max-description-chars N] [--permissions LIST]',
  run: (setup, values) => doctor(setup, values),
};
