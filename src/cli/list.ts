/**
 * `toolbelt list`: the tools the permissions allow, as a table or JSON with input schemas; a tool
 * that cannot run here (its `unavailable` reason, which agents are never offered it for) is listed
 * as not offered, with the reason.
 * Must not run a tool: it only initialises tools to describe them.
 */
import type { Command, Setup, Values } from './command.js';
import { builtinTools, unregisteredBuiltins } from '../tools/index.js';
import { isAllowed } from '../authoring/permissions.js';

/** Built-in tools whose processes the sandbox contains. */
const CONTAINED_TOOLS = ['bash', 'grep'];

async function list({ registry, initCtx, grant }: Setup, values: Values): Promise<number> {
  const ids = registry.enabled(grant);
  // Built-ins the permissions allow but that need configuration and have none: said on stderr, so
  // stdout stays the list.
  if (!values['no-builtins'])
    for (const { id, reason } of unregisteredBuiltins()) {
      const declared = builtinTools.find((t) => t.info.id === id)!.permissions;
      if (!registry.has(id) && isAllowed(declared, grant))
        process.stderr.write(`toolbelt: ${id} is not registered: ${reason}\n`);
    }
  const toolSet = registry.toolSet({ enabledPermissions: grant });
  const rows = await Promise.all(
    ids.map(async (id) => {
      const tool = await registry.initialized(id, initCtx, toolSet);
      const permissions = registry.permissions(id)!;
      return { name: id, permissions, description: tool.description, tool, unavailable: tool.unavailable };
    }),
  );
  if (values.json) {
    const { z } = await import('zod');
    // The tools that start processes say whether those run in the OS sandbox, and why (not).
    const sandbox = rows.some((r) => CONTAINED_TOOLS.includes(r.name))
      ? await registry.sandboxStatus(initCtx)
      : undefined;
    const out = rows.map(({ name, permissions, description, tool, unavailable }) => ({
      name,
      permissions,
      description,
      inputSchema: tool.jsonSchema ?? z.toJSONSchema(tool.parameters, { io: 'input', unrepresentable: 'any' }),
      ...(sandbox && CONTAINED_TOOLS.includes(name) ? { sandbox } : {}),
      // Agents are not offered this tool here (registry.tools() leaves it out): why.
      ...(unavailable ? { unavailable } : {}),
    }));
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
    return 0;
  }
  if (!rows.length) {
    process.stderr.write(
      `toolbelt: no tools allowed by permissions ${grant.join(',') || '(none)'} (${registry.size} registered).\n`,
    );
    return 0;
  }
  const width = Math.max(...rows.map((r) => r.name.length));
  for (const r of rows) {
    const perms = [...r.permissions.required, ...(r.permissions.optional ?? []).map((p) => `${p}?`)].join(',') || '-';
    const first = r.description.split('\n').find((l) => l.trim()) ?? '';
    const text = r.unavailable
      ? `not offered: ${r.unavailable}`
      : first.length > 100
        ? `${first.slice(0, 97)}...`
        : first;
    process.stdout.write(`${r.name.padEnd(width)}  [${perms}]  ${text}\n`);
  }
  return 0;
}

export const listCommand: Command = {
  options: { json: { type: 'boolean' } },
  positionals: [0, 0],
  usage: 'toolbelt list [--permissions LIST] [--json]',
  run: (setup, values) => list(setup, values),
};
