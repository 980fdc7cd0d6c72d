#!/usr/bin/env node
/**
 * The `toolbelt` command: list the tools, run one, serve them over MCP, or run an agent with them.
 * Output goes to stdout, progress and diagnostics to stderr. Exit codes: 0 ok, 1 the tool (or
 * agent) failed, 2 usage error (unknown command, flag, tool, bad JSON, bad model config).
 */
import { createHash, randomUUID } from 'node:crypto';
import { mkdir, readFile, stat, writeFile, rename } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { createRegistry, type ToolRegistryImpl } from './registry.js';
import { ALL_PERMISSIONS, parsePermissionList, type ToolPermission, type ToolPermissions } from './permissions.js';
import { registerBuiltinTools } from './tools/index.js';
import { readTracker, type FileStamp } from './workspace.js';
import type { Tool } from './tool.js';
import type { ToolUpdate } from './pipeline/types.js';
import { isEntryPoint } from './entry.js';
import { disconnectMcp } from './mcp/index.js';

/** Session ids `--session` accepts (they name a state file). */
export const SESSION_ID_PATTERN = /^[A-Za-z0-9_.-]{1,128}$/;
/** Files one persisted CLI session remembers as read (most recent kept). */
export const MAX_SESSION_FILES = 10_000;

const VERSION = '0.1.0';

const HELP = `toolbelt ${VERSION} - agent-toolbelt's tools from the command line

Usage:
  toolbelt list [--permissions LIST] [--json]
  toolbelt run <tool> ['<json args>'] [--workspace DIR] [--session ID] [--timeout MS] [--json]
  toolbelt mcp [--http PORT] [--host HOST] [--permissions LIST] [--workspace DIR]
  toolbelt agent "<task>" --model provider:model [--permissions LIST] [--workspace DIR]

Commands:
  list    The tools the permissions allow, with their permissions and a one-line description.
  run     Run one tool. Progress goes to stderr as it happens, the output to stdout.
          Exit code 1 when the tool fails. --session ID shares read-before-edit state across runs.
  mcp     Serve the tools as an MCP server over stdio (default) or Streamable HTTP (--http PORT,
          0 picks a free port; binds 127.0.0.1 unless --host is given).
  agent   Run a LangChain agent (createAgent) with the tools on a task. --model defaults to
          $TOOLBELT_MODEL; the provider's package (e.g. @langchain/openai) and key must be present.

Options (every command):
  --workspace DIR     Workspace root the file tools are sandboxed to (default: current directory).
  --permissions LIST  Comma-separated: read, write, execute, network, or all (default: all).
  --tools FILE        Load more tools from an ES module (repeatable): its default export is
                      (registry) => void, or an array of { info, permissions, descriptionPath? }.
  --mcp-config FILE   Import tools from the MCP servers in a JSON config (see docs/mcp.md).
  --no-builtins       Do not register the built-in tools.
  -h, --help          Show this help.   -v, --version   Show the version.

Examples:
  toolbelt run read '{"filePath":"README.md"}'
  toolbelt run grep '{"pattern":"TODO","include":"*.ts"}' --workspace ./src
  toolbelt mcp --permissions read            # a read-only MCP server over stdio
  toolbelt agent "Summarise README.md" --model openai:gpt-4o-mini
`;

/** A usage mistake: exit code 2 and a hint. */
class UsageError extends Error {}

const COMMON: ParseArgsConfig['options'] = {
  workspace: { type: 'string' },
  permissions: { type: 'string' },
  tools: { type: 'string', multiple: true },
  'mcp-config': { type: 'string' },
  'no-builtins': { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
};

const COMMANDS: Record<string, { options: ParseArgsConfig['options']; positionals: [number, number]; usage: string }> =
  {
    list: {
      options: { json: { type: 'boolean' } },
      positionals: [0, 0],
      usage: 'toolbelt list [--permissions LIST] [--json]',
    },
    run: {
      options: { session: { type: 'string' }, timeout: { type: 'string' }, json: { type: 'boolean' } },
      positionals: [1, 2],
      usage: `toolbelt run <tool> ['<json args>'] [--workspace DIR] [--session ID]`,
    },
    mcp: {
      options: { http: { type: 'string' }, host: { type: 'string' } },
      positionals: [0, 0],
      usage: 'toolbelt mcp [--http PORT] [--permissions LIST]',
    },
    agent: {
      options: { model: { type: 'string' } },
      positionals: [1, 1],
      usage: 'toolbelt agent "<task>" --model provider:model',
    },
  };

type Values = Record<string, string | boolean | string[] | undefined>;

/** Runs the CLI with `argv` (without node and the script); resolves to the exit code. */
export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === '-h' || command === '--help' || command === 'help') {
    process.stdout.write(HELP);
    return command ? 0 : 2;
  }
  if (command === '-v' || command === '--version') {
    process.stdout.write(`${VERSION}\n`);
    return 0;
  }
  const spec = COMMANDS[command];
  try {
    if (!spec) throw new UsageError(`Unknown command "${command}". Commands: ${Object.keys(COMMANDS).join(', ')}.`);
    let parsed;
    try {
      parsed = parseArgs({ args: rest, options: { ...COMMON, ...spec.options }, allowPositionals: true, strict: true });
    } catch (err) {
      throw new UsageError(
        `${(err as Error).message.replace(/\. To specify a positional argument.*$/s, '.')}\nUsage: ${spec.usage}`,
      );
    }
    const values = parsed.values as Values;
    if (values.help) {
      process.stdout.write(HELP);
      return 0;
    }
    const [min, max] = spec.positionals;
    if (parsed.positionals.length < min || parsed.positionals.length > max) {
      throw new UsageError(
        `"toolbelt ${command}" takes ${min === max ? min : `${min}-${max}`} argument${max === 1 ? '' : 's'}, got ${parsed.positionals.length}` +
          `${parsed.positionals.length ? ` (${parsed.positionals.map((p) => JSON.stringify(p)).join(' ')})` : ''}.\nUsage: ${spec.usage}`,
      );
    }
    const setup = await makeRegistry(values);
    try {
      switch (command) {
        case 'list':
          return await list(setup, values);
        case 'run':
          return await run(setup, values, parsed.positionals);
        case 'mcp':
          return await mcp(setup, values);
        default:
          return await agent(setup, values, parsed.positionals[0]);
      }
    } finally {
      await disconnectMcp(setup.registry).catch(() => undefined);
    }
  } catch (err) {
    if (err instanceof UsageError || (err as Error).name === 'ModelConfigError') {
      process.stderr.write(`toolbelt: ${(err as Error).message}\n`);
      if (err instanceof UsageError) process.stderr.write(`Run "toolbelt --help" for usage.\n`);
      return 2;
    }
    process.stderr.write(`toolbelt: ${(err as Error).stack ?? String(err)}\n`);
    return 1;
  }
}

interface Setup {
  registry: ToolRegistryImpl;
  initCtx: Tool.InitContext;
  grant: ToolPermission[];
}

async function makeRegistry(values: Values): Promise<Setup> {
  let grant: ToolPermission[];
  try {
    grant = values.permissions === undefined ? [...ALL_PERMISSIONS] : parsePermissionList(String(values.permissions));
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const initCtx: Tool.InitContext = { workingDir: process.cwd() };
  if (values.workspace !== undefined) {
    const root = path.resolve(String(values.workspace));
    const st = await stat(root).catch(() => undefined);
    if (!st?.isDirectory())
      throw new UsageError(
        `--workspace ${JSON.stringify(values.workspace)} is not a directory (${root}). Create it or pass another.`,
      );
    initCtx.workspaceRoot = root;
  }
  const registry = createRegistry();
  if (!values['no-builtins']) registerBuiltinTools(registry);
  for (const file of (values.tools as string[] | undefined) ?? []) await loadToolsModule(registry, file);
  if (values['mcp-config'] !== undefined) {
    const { loadMcpConfig, connectMcp } = await import('./mcp/index.js');
    let servers;
    try {
      servers = await loadMcpConfig(String(values['mcp-config']));
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
    const conn = await connectMcp(registry, { servers, workspaceFolder: initCtx.workspaceRoot ?? process.cwd() });
    for (const s of conn.servers) {
      if (s.state === 'failed') process.stderr.write(`toolbelt: MCP server "${s.name}" did not start: ${s.error}\n`);
    }
  }
  return { registry, initCtx, grant };
}

async function loadToolsModule(registry: ToolRegistryImpl, file: string): Promise<void> {
  const abs = path.resolve(file);
  let mod: { default?: unknown };
  try {
    mod = (await import(pathToFileURL(abs).href)) as { default?: unknown };
  } catch (err) {
    throw new UsageError(`Cannot load tools from ${abs}: ${(err as Error).message}`);
  }
  const exported = mod.default;
  if (typeof exported === 'function') {
    await (exported as (r: ToolRegistryImpl) => unknown)(registry);
  } else if (Array.isArray(exported)) {
    for (const t of exported as Array<{ info: Tool.Info; permissions: ToolPermissions; descriptionPath?: string }>) {
      registry.register(t.info, { permissions: t.permissions, descriptionPath: t.descriptionPath, replace: true });
    }
  } else {
    throw new UsageError(
      `${abs} must default-export (registry) => void or an array of { info, permissions, descriptionPath? }.`,
    );
  }
}

async function list({ registry, initCtx, grant }: Setup, values: Values): Promise<number> {
  const ids = registry.enabled(grant);
  const rows = await Promise.all(
    ids.map(async (id) => {
      const tool = await registry.initialized(id, initCtx);
      const permissions = registry.permissions(id)!;
      return { name: id, permissions, description: tool.description, tool };
    }),
  );
  if (values.json) {
    const { z } = await import('zod');
    const out = rows.map(({ name, permissions, description, tool }) => ({
      name,
      permissions,
      description,
      inputSchema: tool.jsonSchema ?? z.toJSONSchema(tool.parameters, { io: 'input', unrepresentable: 'any' }),
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
    process.stdout.write(
      `${r.name.padEnd(width)}  [${perms}]  ${first.length > 100 ? `${first.slice(0, 97)}...` : first}\n`,
    );
  }
  return 0;
}

async function run({ registry, initCtx, grant }: Setup, values: Values, positionals: string[]): Promise<number> {
  const [toolId, json = '{}'] = positionals;
  if (!registry.has(toolId))
    throw new UsageError(registry.unknownToolMessage(toolId).replace(' Call one of those instead.', ''));
  let args: unknown;
  try {
    args = JSON.parse(json);
  } catch (err) {
    throw new UsageError(
      `The arguments for "${toolId}" are not valid JSON (${(err as Error).message}): ${json.length > 200 ? `${json.slice(0, 200)}...` : json}\n` +
        `Quote them for the shell, e.g. toolbelt run ${toolId} '{"key":"value"}'`,
    );
  }
  let timeoutMs: number | undefined;
  if (values.timeout !== undefined) {
    timeoutMs = Number(values.timeout);
    if (!Number.isFinite(timeoutMs) || timeoutMs <= 0)
      throw new UsageError(
        `--timeout must be a positive number of milliseconds, got ${JSON.stringify(values.timeout)}.`,
      );
  }
  const sessionArg = values.session as string | undefined;
  if (sessionArg !== undefined && !SESSION_ID_PATTERN.test(sessionArg)) {
    throw new UsageError(
      `--session ${JSON.stringify(sessionArg)} is not a valid session id: use 1-128 letters, digits, ".", "_" or "-".`,
    );
  }
  const sessionID = sessionArg ?? `cli-${randomUUID()}`;
  const session = sessionArg ? await PersistedSession.open(sessionArg, initCtx) : undefined;

  const controller = new AbortController();
  const onSignal = () => controller.abort(new Error('interrupted by the user'));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const final = await registry.execute(toolId, args, { sessionID, agent: 'toolbelt-cli' }, initCtx, {
      enabledPermissions: grant,
      signal: controller.signal,
      timeoutMs,
      onToolResult: (u) => {
        if (u.status === 'running') process.stderr.write(`${progressLine(u)}\n`);
      },
    });
    await session?.save();
    if (values.json) {
      process.stdout.write(`${JSON.stringify(final, null, 2)}\n`);
      return final.success ? 0 : 1;
    }
    for (const a of final.result.attachments ?? []) {
      const size = a.data
        ? `${Math.floor((a.data.length * 3) / 4)} bytes`
        : a.text !== undefined
          ? `${a.text.length} chars`
          : 'link';
      process.stderr.write(`[${toolId}] attachment: ${a.type} ${a.mime}${a.uri ? ` ${a.uri}` : ''} (${size})\n`);
    }
    if (!final.success) {
      process.stderr.write(`${final.error ?? final.result.output}\n`);
      return 1;
    }
    process.stdout.write(final.result.output.endsWith('\n') ? final.result.output : `${final.result.output}\n`);
    return 0;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/** One progress report as a stderr line: `[tool] title {metadata}`. */
export function progressLine(u: ToolUpdate): string {
  const meta = Object.keys(u.result.metadata).length ? ` ${safeJson(u.result.metadata, 300)}` : '';
  return `[${u.toolId}] ${u.result.title || 'running'}${meta}`;
}

function safeJson(value: unknown, max: number): string {
  let s: string;
  try {
    s = JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? v.toString() : v));
  } catch {
    s = String(value);
  }
  return s.length > max ? `${s.slice(0, max - 3)}...` : s;
}

async function mcp({ registry, initCtx, grant }: Setup, values: Values): Promise<number> {
  const { serveMcp } = await import('./mcp/server.js');
  if (values.http === undefined) {
    const serving = await serveMcp(registry, { transport: 'stdio', permissions: grant, initCtx });
    const stop = () => void serving.close();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    process.stderr.write(`toolbelt: serving ${registry.enabled(grant).length} tools over MCP stdio\n`);
    await serving.closed;
    return 0;
  }
  const port = Number(values.http);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new UsageError(
      `--http needs a port number 0-65535 (0 picks a free one), got ${JSON.stringify(values.http)}.`,
    );
  const host = values.host === undefined ? undefined : String(values.host);
  const serving = await serveMcp(registry, { transport: 'http', port, host, permissions: grant, initCtx });
  process.stderr.write(
    `toolbelt: serving ${registry.enabled(grant).length} tools over MCP Streamable HTTP at ${serving.url}\n`,
  );
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await serving.close();
  return 0;
}

async function agent({ registry, initCtx, grant }: Setup, values: Values, task: string): Promise<number> {
  const { loadChatModel } = await import('./chat-model.js');
  const spec = (values.model as string | undefined) ?? process.env.TOOLBELT_MODEL;
  if (!spec)
    throw new UsageError(
      'toolbelt agent needs a model: pass --model provider:model (e.g. openai:gpt-4o-mini) or set TOOLBELT_MODEL.',
    );
  const model = await loadChatModel(spec);
  const tools = await registry.tools({
    enabledPermissions: grant,
    initCtx,
    onToolResult: (u) => {
      if (u.status === 'running') process.stderr.write(`${progressLine(u)}\n`);
      else process.stderr.write(`[${u.toolId}] ${u.success ? 'done' : `failed: ${u.error}`} (${u.durationMs} ms)\n`);
    },
  });
  const { createAgent } = await import('langchain');
  const { HumanMessage, AIMessage } = await import('@langchain/core/messages');
  const controller = new AbortController();
  const onSignal = () => controller.abort(new Error('interrupted by the user'));
  process.once('SIGINT', onSignal);
  try {
    const created = createAgent({ model: model as never, tools });
    const result = await created.invoke({ messages: [new HumanMessage(task)] }, { signal: controller.signal });
    const last = result.messages[result.messages.length - 1];
    const text = AIMessage.isInstance(last) ? last.text : String(last?.content ?? '');
    process.stdout.write(`${text}\n`);
    return 0;
  } finally {
    process.off('SIGINT', onSignal);
  }
}

/**
 * A `--session` whose read-before-edit records outlive the process: files the session has read
 * (with their size/mtime/inode) are saved in the OS temp directory and given back to the shared
 * read tracker on the next run, so `toolbelt run read` then `toolbelt run edit` works.
 */
class PersistedSession {
  private readonly files = new Map<string, FileStamp>();

  private constructor(
    private readonly id: string,
    private readonly file: string,
  ) {}

  static async open(id: string, initCtx: Tool.InitContext): Promise<PersistedSession> {
    const root = String(initCtx.workspaceRoot ?? initCtx.workingDir ?? process.cwd());
    const dir =
      process.env.TOOLBELT_STATE_DIR ?? path.join(os.tmpdir(), `agent-toolbelt-${os.userInfo().uid}`, 'sessions');
    const key = createHash('sha256').update(`${root}\0${id}`).digest('hex').slice(0, 32);
    const session = new PersistedSession(id, path.join(dir, `${key}.json`));
    try {
      const saved = JSON.parse(await readFile(session.file, 'utf8')) as Array<{
        path: string;
        mtimeNs: string;
        size: string;
        ino: string;
      }>;
      for (const r of saved) {
        const stamp = { mtimeNs: BigInt(r.mtimeNs), size: BigInt(r.size), ino: BigInt(r.ino) };
        session.files.set(r.path, stamp);
        readTracker.record(id, r.path, stamp);
      }
    } catch {
      // no saved state yet (or unreadable): start fresh
    }
    // Hear every record the tools make for this session (the tracker keeps no list we could read back).
    const record = readTracker.record.bind(readTracker);
    readTracker.record = (s, p, stamp) => {
      if (s === id) {
        session.files.delete(p);
        session.files.set(p, stamp);
      }
      record(s, p, stamp);
    };
    return session;
  }

  async save(): Promise<void> {
    const entries = [...this.files]
      .slice(-MAX_SESSION_FILES)
      .map(([p, s]) => ({ path: p, mtimeNs: String(s.mtimeNs), size: String(s.size), ino: String(s.ino) }));
    await mkdir(path.dirname(this.file), { recursive: true, mode: 0o700 });
    const tmp = `${this.file}.${process.pid}.tmp`;
    await writeFile(tmp, JSON.stringify(entries), { mode: 0o600 });
    await rename(tmp, this.file);
  }
}

if (await isEntryPoint(import.meta.url)) {
  const code = await main(process.argv.slice(2));
  // Let stdout drain, then exit even if a tool left a handle open.
  process.exitCode = code;
  setImmediate(() => process.exit(code));
}
