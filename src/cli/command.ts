/**
 * What every `toolbelt` command shares: the parsed flags, the registry set up from them, the usage error,
 * and the shape a command module exports.
 * Must not hold any command's own logic: each command is its own module beside this one.
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ParseArgsConfig } from 'node:util';
import { createRegistry, type Registry } from '../registry/registry.js';
import {
  ALL_PERMISSIONS,
  parsePermissionList,
  type ToolPermission,
  type ToolPermissions,
} from '../authoring/permissions.js';
import { builtinTools, registerBuiltinTools } from '../tools/index.js';
import type { Tool } from '../authoring/tool.js';
import { createPolicy, findPolicyFile, loadPolicyFile } from '../policy/policy.js';
import { isSandboxMode, SANDBOX_MODES } from '../sandbox/options.js';
import type { SandboxOptions } from '../sandbox/types.js';
import type { OpenedStore } from '../store/postgres.js';
import { openCliStore, storeNamespaceOf, storeUrlOf } from './store.js';
import { cliOutputDir, pruneSavedOutputs } from './state.js';
import { nearestName } from '../text/similarity.js';
import { describeThrown } from '../text/describe.js';

/** A usage mistake: exit code 2 and a hint. */
export class UsageError extends Error {}

/**
 * The name the user most likely meant (`raed` -> `read`, `--workspce` -> `workspace`, `rnu` -> `run`):
 * two neighbouring letters swapped, else the nearest name (text/similarity.ts); undefined when none is close.
 */
export function didYouMean(name: string, candidates: readonly string[]): string | undefined {
  const swapped = (c: string) => {
    if (c.length !== name.length) return false;
    const at = [...c].flatMap((ch, i) => (ch === name[i] ? [] : [i]));
    return at.length === 2 && at[1] === at[0] + 1 && c[at[0]] === name[at[1]] && c[at[1]] === name[at[0]];
  };
  return candidates.find(swapped) ?? nearestName(name, candidates);
}

/** The CLI's answer for a tool it does not have; task gets its own reason (see makeRegistry). */
export function unknownTool(registry: Registry, toolId: string): UsageError {
  if (toolId === 'task')
    return new UsageError(
      'The task tool needs sub-agents, which are chat models configured in code (initCtx.subagents), so the command ' +
        'line does not offer it. Do the work with the other tools, or register task with sub-agents in a --tools module.',
    );
  const near = didYouMean(toolId, registry.ids());
  const message = registry.unknownToolMessage(toolId).replace(' Call one of those instead.', '');
  return new UsageError(near ? message.replace(/^(Unknown tool "[^"]*")\./, `$1 — did you mean "${near}"?`) : message);
}

/** The flags every command takes. */
export const COMMON: ParseArgsConfig['options'] = {
  workspace: { type: 'string' },
  permissions: { type: 'string' },
  tools: { type: 'string', multiple: true },
  'mcp-config': { type: 'string' },
  'rest-config': { type: 'string' },
  'no-builtins': { type: 'boolean' },
  policy: { type: 'string' },
  'no-policy': { type: 'boolean' },
  sandbox: { type: 'string' },
  store: { type: 'string' },
  'store-namespace': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
};

/** Parsed flag values. */
export type Values = Record<string, string | boolean | string[] | undefined>;

/** A command: its own flags, how many positional arguments it takes, its usage line, and what it does. */
export interface Command {
  options: ParseArgsConfig['options'];
  positionals: [number, number];
  usage: string;
  run(setup: Setup, values: Values, positionals: string[]): Promise<number>;
  /** The command reads policy files itself (`toolbelt policy`): an invalid one is its output, not a usage error. */
  ownsPolicy?: boolean;
}

/** The registry and grant built from the common flags. */
export interface Setup {
  registry: Registry;
  initCtx: Tool.InitContext;
  grant: ToolPermission[];
  /** The policy file in use (--policy FILE, else ./toolbelt.policy.json when present); without one the default policy applies (none with --no-policy). */
  policyFile?: string;
  /** The state store of --store / $TOOLBELT_STORE_URL, when one was given (closed by `close`). */
  store?: OpenedStore;
  /** Where the registry saves full outputs across runs (state.ts); undefined when the state directory could not be used. */
  outputDir?: string;
  /** Ends what the setup opened (the store's connections) after the last pruning of saved outputs. */
  close?: () => Promise<void>;
}

/** Builds the registry the common flags describe (built-ins, --tools modules, --mcp-config servers, --rest-config APIs). */
export async function makeRegistry(values: Values, ownsPolicy = false): Promise<Setup> {
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
  if (values['no-policy'] && (values.policy !== undefined || ownsPolicy))
    throw new UsageError(
      ownsPolicy
        ? '--no-policy does not apply to "toolbelt policy", which only reads policies.'
        : '--no-policy and --policy contradict each other: pass one of them.',
    );
  const found = await policyFileFor(values);
  if (values['no-policy'] && found)
    process.stderr.write(`toolbelt: --no-policy: ${found} is not applied, and neither is the default policy.\n`);
  const policyFile = values['no-policy'] ? undefined : found;
  // The default policy applies unless --no-policy says otherwise (or the file says "extends": false).
  const policy = ownsPolicy
    ? undefined
    : policyFile
      ? await readPolicy(policyFile)
      : values['no-policy']
        ? undefined
        : createPolicy();
  // `toolbelt policy` reads its file itself, but explain needs the file's sandbox (autoAllow) too.
  const fileSandbox =
    policy?.sandbox ??
    (ownsPolicy && policyFile
      ? await loadPolicyFile(policyFile).then(
          (p) => p.sandbox,
          () => undefined,
        )
      : undefined);
  const sandbox = sandboxOptions(values, fileSandbox);
  const storeUrl = storeUrlOf(values);
  const namespace = storeNamespaceOf(values);
  if (typeof namespace === 'string') throw new UsageError(namespace);
  const store =
    storeUrl === undefined
      ? undefined
      : await openCliStore(storeUrl).catch((err: Error) => {
          throw new UsageError(err.message);
        });
  // Full outputs go to the state directory, so a path a run printed outlives the run (bounded: state.ts).
  const outputs = await cliOutputDir();
  if ('problem' in outputs)
    process.stderr.write(`toolbelt: saved outputs are kept only while this command runs: ${outputs.problem}.\n`);
  const outputDir = 'dir' in outputs ? outputs.dir : undefined;
  const registry = createRegistry({
    policy,
    sandbox,
    store,
    namespace: store && namespace,
    storeLabel: store?.label,
    // Agent Skills in the standard places (docs/skills.md); `toolbelt agent --no-skills` turns them off.
    skills: { defaults: true },
    ...(outputDir ? { truncate: { outputDir } } : {}),
  });
  // Pruned at start and after every call that finished, one pass at a time; `close` waits for the last.
  let pruning: Promise<unknown> = outputDir ? pruneSavedOutputs(outputDir) : Promise.resolve();
  const prune = () => {
    if (outputDir) pruning = pruning.then(() => pruneSavedOutputs(outputDir));
  };
  if (outputDir) {
    registry.on('completed', prune);
    registry.on('failed', prune);
  }
  // The sandbox is probed when bash is first set up; when it cannot contain commands, say so once.
  registry.on('sandbox', ({ sandbox: status }) => {
    if (!status.enabled && status.mode !== 'off') process.stderr.write(`toolbelt: ${status.reason}\n`);
  });
  // task delegates to sub-agents, which are chat models configured in code (initCtx.subagents); the
  // command line cannot configure them, so task could only ever fail here and is not offered.
  // A --tools module can register it with sub-agents. web_search without a configured backend is
  // left out too (`toolbelt list` says what to set).
  if (!values['no-builtins'])
    registerBuiltinTools(
      registry,
      // apply_patch joins with --edits (agent.ts), as registerBuiltinTools' `edits` option adds it.
      builtinTools
        .filter((t) => !['task', 'apply_patch'].includes(t.info.id) && !t.unregisteredReason?.())
        .map((t) => t.info.id),
    );
  for (const file of (values.tools as string[] | undefined) ?? []) await loadToolsModule(registry, file);
  if (values['mcp-config'] !== undefined) {
    const { loadMcpConfig, connectMcp } = await import('../mcp/index.js');
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
  if (values['rest-config'] !== undefined) {
    const { loadRestConfig } = await import('../rest/config.js');
    try {
      const { skipped } = await loadRestConfig(registry, String(values['rest-config']));
      for (const s of skipped)
        process.stderr.write(`toolbelt: OpenAPI operation "${s.operation}" left out: ${s.reason}\n`);
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
  }
  const close = async () => {
    await pruning;
    await store?.close();
  };
  return { registry, initCtx, grant, policyFile, store, outputDir, close };
}

/** The sandbox: the policy file's `"sandbox"`, its mode replaced by `--sandbox` (default `auto`). */
function sandboxOptions(values: Values, fromFile: SandboxOptions | undefined): SandboxOptions {
  const flag = values.sandbox;
  if (flag !== undefined && !isSandboxMode(flag))
    throw new UsageError(`--sandbox ${JSON.stringify(flag)} is not a mode. Use one of ${SANDBOX_MODES.join(', ')}.`);
  return { ...fromFile, mode: flag ?? fromFile?.mode ?? 'auto' };
}

/** `--policy FILE`, else `toolbelt.policy.json` in the working directory when there is one. */
async function policyFileFor(values: Values): Promise<string | undefined> {
  if (values.policy !== undefined) {
    const file = path.resolve(String(values.policy));
    if (!(await stat(file).catch(() => undefined))?.isFile())
      throw new UsageError(
        `--policy ${JSON.stringify(values.policy)} is not a file (${file}). Pass the path of a policy file.`,
      );
    return file;
  }
  return findPolicyFile(process.cwd());
}

async function readPolicy(file: string) {
  try {
    return await loadPolicyFile(file);
  } catch (err) {
    throw new UsageError(`${(err as Error).message}\nFix the file (check it with "toolbelt policy check ${file}").`);
  }
}

async function loadToolsModule(registry: Registry, file: string): Promise<void> {
  const abs = path.resolve(file);
  let mod: { default?: unknown };
  try {
    mod = (await import(pathToFileURL(abs).href)) as { default?: unknown };
  } catch (err) {
    throw new UsageError(`Cannot load tools from ${abs}: ${describeThrown(err)}`);
  }
  const exported = mod.default;
  if (typeof exported === 'function') {
    await (exported as (r: Registry) => unknown)(registry);
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
