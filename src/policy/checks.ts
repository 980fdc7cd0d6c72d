/**
 * What a call does, as the policy sees it: one check per tool call, with its subject — the
 * resolved path for file tools, the host and URL for webfetch and http_request, the server for MCP tools — and for
 * bash one check per simple command it would run plus one per file it redirects to or from.
 * Must not judge checks against rules (evaluate.ts) nor parse shell text itself (tools/bash-parser.ts).
 */
import type { SandboxPolicyFacts } from '../sandbox/auto-allow.js';
import type { SkillGrants } from '../skills/allowed-tools.js';
import path from 'node:path';
import os from 'node:os';
import fs from 'node:fs/promises';
import net from 'node:net';
import ipaddr from 'ipaddr.js';
import { normaliseHost } from '../net/host.js';
import type { Dirent } from 'node:fs';
import { realpathAllowingMissing } from '../workspace/workspace.js';
import type { ToolPermission } from '../authoring/permissions.js';
import { shellCommands, commandLevel } from '../tools/bash/danger.js';
import { isTransparentWrapper } from '../tools/bash/unwrap.js';
import type { ShellCommand } from '../tools/bash/shell-command.js';
import type { DangerLevel, PolicyCheck, PolicySubject } from './types.js';
import { RISKY_VARIABLES } from '../tools/bash/danger-tables.js';
import { fileArguments } from './bash-files.js';
import { patchFiles } from '../tools/patch/parse.js';

/** What the policy needs to know about the tool being called. */
export interface ToolFacts {
  permissions: ToolPermission[];
  /** The tool's own danger level; calls of bash get one per command instead. */
  danger?: DangerLevel;
  /** `useless`: the tool declares that an identical call in a row never gives anything new (the loop guard refuses it on count alone). */
  repeats?: 'useless';
}

/** Where paths resolve and what the tools are. */
export interface CheckEnvironment {
  workspaceRoot: string;
  additionalRoots?: string[];
  /**
   * The calls' files live on a deepagents backend (`initCtx.backend`): a path is the backend's,
   * judged relative to its root `/`, and never resolved (or realpath'd) on this host.
   */
  backendPaths?: boolean;
  /** Facts about a tool by id (from the registry); unknown tools are treated as moderate with no permissions. */
  toolFacts?: (toolId: string) => ToolFacts | undefined;
  /** The OS sandbox calls under this environment would run in (for `sandbox.autoAllow`). */
  sandbox?: SandboxPolicyFacts;
  /** The skills each session loaded and their `allowed-tools`, when the registry honours them (src/skills/allowed-tools.ts). */
  skills?: SkillGrants;
}

/**
 * Entries read under a directory a call acts on as a whole, to judge rules that name a file at any
 * depth (`.env`); past it the walk stops and such a rule is taken to match (the call is refused or asked).
 */
export const POLICY_TREE_MAX_ENTRIES = 10_000;

/** Argument names that hold a path, for file tools and tools authored the same way (move has two). */
const PATH_KEYS = ['filePath', 'path', 'file', 'directory', 'dir', 'from', 'to'];

/** The checks a call makes; see the module comment. */
export async function checksOf(toolId: string, rawArgs: unknown, env: CheckEnvironment): Promise<PolicyCheck[]> {
  const args = asObject(rawArgs);
  const facts = env.toolFacts?.(toolId) ?? undefined;
  const permissions = facts?.permissions ?? [];
  const danger = facts?.danger ?? defaultDanger(permissions);
  if (toolId === 'bash' && typeof args.command === 'string') {
    const cwd = typeof args.workdir === 'string' ? args.workdir : '.';
    return bashChecks(args.command, cwd, env);
  }
  if (URL_TOOLS.has(toolId) && typeof args.url === 'string') {
    const subject = urlSubject(args.url);
    return [{ tool: toolId, permissions, danger, subject, label: `${toolId} of ${subject.value}` }];
  }
  if (toolId === 'apply_patch' && typeof args.input === 'string') return patchChecks(args.input, permissions, env);
  const server = mcpServer(toolId);
  if (server)
    return [
      { tool: toolId, permissions, danger, subject: { kind: 'server', value: server }, label: `MCP tool ${toolId}` },
    ];
  // One check per path the call names: a move is judged at both ends.
  const keys = PATH_KEYS.filter((k) => typeof args[k] === 'string');
  if (keys.length) {
    // A tool that changes files acts on a directory as a whole (delete, move); one that only reads
    // looks inside it (list, grep).
    const tree = permissions.includes('write') ? 'whole' : 'inside';
    return Promise.all(
      keys.map(async (key) => {
        const subject = await pathSubject(args[key] as string, '.', env, tree);
        return { tool: toolId, permissions, danger, subject, label: `${toolId} of ${shownPath(subject)}` };
      }),
    );
  }
  return [{ tool: toolId, permissions, danger, label: `${toolId} call` }];
}

/**
 * apply_patch's checks: one per file, judged also as the tool that would make that change (`as`), so
 * rules naming write, delete or move apply. A patch that does not parse is one check (the tool refuses it).
 */
async function patchChecks(
  input: string,
  permissions: ToolPermission[],
  env: CheckEnvironment,
): Promise<PolicyCheck[]> {
  const files = patchFiles(input) ?? [];
  if (!files.length) return [{ tool: 'apply_patch', permissions, danger: 'moderate', label: 'apply_patch call' }];
  return Promise.all(
    files.map(async ({ as, path: given }) => {
      const subject = await pathSubject(given, '.', env);
      const danger: DangerLevel = as === 'delete' ? 'dangerous' : 'moderate';
      return { tool: 'apply_patch', as, permissions, danger, subject, label: `apply_patch ${as} of ${subject.value}` };
    }),
  );
}

/** The check of a URL a call reaches besides its arguments' (a redirect hop), judged like webfetch's URL. */
export function urlChecks(toolId: string, url: string, env: CheckEnvironment): PolicyCheck[] {
  const facts = env.toolFacts?.(toolId);
  const permissions = facts?.permissions ?? [];
  const subject = urlSubject(url);
  const danger = facts?.danger ?? defaultDanger(permissions);
  return [{ tool: toolId, permissions, danger, subject, label: `${toolId} redirect to ${subject.value}` }];
}

/** A tool's level when it does not declare one: read-only tools are safe, the rest moderate. */
export function defaultDanger(permissions: ToolPermission[]): DangerLevel {
  return permissions.length > 0 && permissions.every((p) => p === 'read') ? 'safe' : 'moderate';
}

function asObject(args: unknown): Record<string, unknown> {
  if (typeof args === 'string') {
    try {
      args = JSON.parse(args);
    } catch {
      return {};
    }
  }
  return args && typeof args === 'object' && !Array.isArray(args) ? (args as Record<string, unknown>) : {};
}

/** `server__tool` names an imported MCP tool. */
function mcpServer(toolId: string): string | undefined {
  const at = toolId.indexOf('__');
  return at > 0 ? toolId.slice(0, at) : undefined;
}

/** Built-ins whose `url` argument is the request's target: judged by URL and host. */
const URL_TOOLS = new Set(['webfetch', 'http_request']);

/**
 * The URL (credentials removed: they never reach a rule, a label or an explanation), its host as
 * the connection will reach it, and that host's other names (see `hostSpellings`).
 */
export function urlSubject(url: string): PolicySubject {
  try {
    const parsed = new URL(url.trim());
    parsed.username = '';
    parsed.password = '';
    const hosts = hostSpellings(parsed.hostname);
    // The URL as reached: `LOCALHOST..` is `localhost`, `[::ffff:7f00:1]` is 127.0.0.1.
    if (hosts[0] && parsed.hostname !== hosts[0]) parsed.hostname = net.isIPv6(hosts[0]) ? `[${hosts[0]}]` : hosts[0];
    return { kind: 'url', value: parsed.href, also: hosts };
  } catch {
    return { kind: 'url', value: url };
  }
}

/**
 * A host as the connection reaches it, first, then its other names: lower case, no brackets, no
 * trailing dots (as src/net/ssrf.ts connects); an IPv4-mapped IPv6 address is its IPv4 address; the
 * unspecified address (0.0.0.0, ::) reaches 127.0.0.1 (::1); every loopback address is also
 * `localhost`, and `localhost` (or a name under `.localhost`) is 127.0.0.1 and ::1. (WHATWG URL
 * parsing already turned `127.1`, `2130706433` and `0x7f.0.0.1` into 127.0.0.1.)
 */
export function hostSpellings(hostname: string): string[] {
  const host = normaliseHost(hostname);
  const out = new Set<string>([host]);
  let ip: ipaddr.IPv4 | ipaddr.IPv6 | undefined;
  try {
    ip = net.isIP(host) ? ipaddr.parse(host) : undefined;
  } catch {
    ip = undefined;
  }
  if (ip?.kind() === 'ipv6' && (ip as ipaddr.IPv6).isIPv4MappedAddress()) ip = (ip as ipaddr.IPv6).toIPv4Address();
  if (ip) {
    const text = ip.kind() === 'ipv6' ? (ip as ipaddr.IPv6).toRFC5952String() : ip.toString();
    out.delete(host);
    out.add(text);
    out.add(host);
    const range = ip.range();
    // Connecting to the unspecified address reaches this machine's loopback listeners.
    if (range === 'unspecified') out.add(ip.kind() === 'ipv4' ? '127.0.0.1' : '::1');
    if (range === 'unspecified' || range === 'loopback') out.add('localhost');
  } else if (host === 'localhost' || host.endsWith('.localhost')) {
    out.add('localhost');
    out.add('127.0.0.1');
    out.add('::1');
  }
  return [...out];
}

/**
 * A path as rules see it: workspace-relative when inside, absolute when outside; its real path too.
 * With `tree`, a directory is marked as one (judged as the paths under it, evaluate.ts).
 */
async function pathSubject(
  given: string,
  cwd: string,
  env: CheckEnvironment,
  tree?: 'whole' | 'inside',
): Promise<PolicySubject> {
  // A backend's paths are its own (nothing on this disk to resolve or walk).
  if (env.backendPaths) return backendPathSubject(given, cwd);
  const roots = [env.workspaceRoot, ...(env.additionalRoots ?? [])].map((r) => path.resolve(r));
  const expanded = given === '~' || given.startsWith('~/') ? path.join(os.homedir(), given.slice(1)) : given;
  const lexical = path.resolve(env.workspaceRoot, cwd, expanded);
  let real = lexical;
  try {
    real = await realpathAllowingMissing(lexical);
  } catch {
    // A link loop or an unreadable parent: judge the lexical path (the tool itself will refuse it).
  }
  const realRoots = await Promise.all(roots.map((r) => realpathAllowingMissing(r).catch(() => r)));
  const show = (p: string, rs: string[]) => {
    const inside = within(p, rs[0]);
    return inside === undefined ? p : inside || '.';
  };
  const value = show(lexical, roots);
  const realValue = show(real, realRoots);
  const outside =
    ![...roots, ...realRoots].some((r) => within(lexical, r) !== undefined) ||
    !realRoots.some((r) => within(real, r) !== undefined);
  const subject: PolicySubject = { kind: 'path', value, also: realValue !== value ? [realValue] : undefined, outside };
  if (
    tree &&
    (await fs.stat(real).then(
      (st) => st.isDirectory(),
      () => false,
    ))
  ) {
    subject.tree = tree;
    subject.absolute = real;
  }
  return subject;
}

/** A path for a label: a directory acted on as a whole says so. */
function shownPath(subject: PolicySubject): string {
  return subject.tree === 'whole' ? `${subject.value} (a directory, with everything under it)` : subject.value;
}

/**
 * Reads the paths under a `whole` tree subject (links are not followed), at most
 * POLICY_TREE_MAX_ENTRIES of them; `entriesCut` says the walk stopped early or a directory could not be read.
 */
export async function readTreeEntries(subject: PolicySubject): Promise<void> {
  if (subject.entries || !subject.absolute) return;
  const found: string[] = [];
  let cut = false;
  const queue = [''];
  while (queue.length && !cut) {
    const rel = queue.shift()!;
    let entries: Dirent[];
    try {
      entries = await fs.readdir(path.join(subject.absolute, rel), { withFileTypes: true });
    } catch {
      cut = true; // unreadable: what is under it cannot be judged
      break;
    }
    for (const e of entries) {
      if (found.length >= POLICY_TREE_MAX_ENTRIES) {
        cut = true;
        break;
      }
      const child = rel ? `${rel}/${e.name}` : e.name;
      found.push(child);
      if (e.isDirectory()) queue.push(child);
    }
  }
  // Not enumerable: a decision printed as JSON need not list thousands of paths.
  Object.defineProperty(subject, 'entries', { value: found, enumerable: false });
  subject.entriesCut = cut;
}

/** A backend's path as rules see it: relative to the backend's root (`.` for the root); never outside. */
function backendPathSubject(given: string, cwd: string): PolicySubject {
  const p = path.posix.resolve('/', cwd, given);
  return { kind: 'path', value: p === '/' ? '.' : p.slice(1), outside: false };
}

/** `p` relative to `root` when inside it, else undefined. */
function within(p: string, root: string): string | undefined {
  if (p === root) return '';
  const prefix = root.endsWith(path.sep) ? root : root + path.sep;
  return p.startsWith(prefix) ? p.slice(prefix.length).split(path.sep).join('/') : undefined;
}

const FILE_WRITES = new Set(['>', '>>', '>|', '&>', '&>>', '<>']);
const FILE_READS = new Set(['<', '<>']);
const CHANGES_DIRECTORY = new Set(['cd', 'pushd', 'popd']);

/** One check per command the line runs and per file it redirects to or from. */
async function bashChecks(command: string, cwd: string, env: CheckEnvironment): Promise<PolicyCheck[]> {
  const all = flatten(await shellCommands(command));
  const movesAround = all.some((c) => CHANGES_DIRECTORY.has(c.words[0] ?? ''));
  const checks: PolicyCheck[] = [];
  for (const cmd of all) {
    if (cmd.words.length || cmd.opaque) checks.push(commandCheck(cmd));
    for (const r of cmd.redirects) {
      const check = await redirectCheck(r.op, r.target, r.dynamic, cwd, movesAround, env);
      if (check) checks.push(check);
    }
    // Files named as arguments (`cat .env`, `cp .env /tmp`): judged by path rules, and only ever
    // restricting — a command an allow rule lets run needs no separate allow for its files.
    for (const f of fileArguments(cmd)) {
      const check = await fileCheck(f.access === 'write', f.path, f.dynamic, cwd, movesAround, env, 'whole');
      checks.push({ ...check, restrictsOnly: true });
    }
  }
  return checks.length
    ? checks
    : [{ tool: 'bash', permissions: ['execute'], danger: 'safe', label: 'empty bash command' }];
}

/** Every command of the tree, wrappers left out where only what they run counts. */
function flatten(commands: ShellCommand[], out: ShellCommand[] = []): ShellCommand[] {
  for (const cmd of commands) {
    if (!isTransparentWrapper(cmd) || cmd.redirects.length) out.push(transparentLess(cmd));
    for (const g of cmd.nested) flatten(g.commands, out);
  }
  return out;
}

function transparentLess(cmd: ShellCommand): ShellCommand {
  return isTransparentWrapper(cmd) ? { ...cmd, words: [], dynamic: [] } : cmd;
}

/** The text command patterns match: the words' values, with variables that change what runs kept in front. */
export function commandText(cmd: ShellCommand): string {
  const risky = cmd.assignments.filter((a) => RISKY_VARIABLES.test(a.name)).map((a) => `${a.name}=${a.value}`);
  return [...risky, ...cmd.words].join(' ');
}

function commandCheck(cmd: ShellCommand): PolicyCheck {
  const text = commandText(cmd) || cmd.text;
  const check: PolicyCheck = {
    tool: 'bash',
    permissions: ['execute'],
    danger: commandLevel(cmd),
    subject: { kind: 'command', value: text },
    label: `bash command ${JSON.stringify(text)}`,
  };
  if (cmd.opaque) check.unknown = cmd.opaque;
  else if (cmd.dynamic[0]) check.unknown = `the command name ${JSON.stringify(cmd.words[0])} is only known at run time`;
  return check;
}

async function redirectCheck(
  op: string,
  target: string,
  dynamic: boolean,
  cwd: string,
  movesAround: boolean,
  env: CheckEnvironment,
): Promise<PolicyCheck | undefined> {
  const writes = FILE_WRITES.has(op) || (op === '>&' && !/^(\d+|-)$/.test(target));
  if (!writes && !FILE_READS.has(op)) return undefined;
  if (/^\/dev\/(null|stdout|stderr|stdin|tty|fd\/\d+)$/.test(target)) return undefined;
  return fileCheck(writes, target, dynamic, cwd, movesAround, env);
}

/** A check of one file a bash line reads or writes. */
async function fileCheck(
  writes: boolean,
  target: string,
  dynamic: boolean,
  cwd: string,
  movesAround: boolean,
  env: CheckEnvironment,
  tree?: 'whole',
): Promise<PolicyCheck> {
  const permission: ToolPermission = writes ? 'write' : 'read';
  const verb = writes ? 'writes to' : 'reads';
  const base = { tool: 'bash', permissions: [permission], danger: (writes ? 'moderate' : 'safe') as DangerLevel };
  if (dynamic)
    return {
      ...base,
      label: `bash ${verb} ${target}`,
      unknown: `the file ${JSON.stringify(target)} is only known at run time`,
    };
  const subject = await pathSubject(target, cwd, env, tree);
  const check: PolicyCheck = { ...base, subject, label: `bash ${verb} ${shownPath(subject)}` };
  if (movesAround && !path.isAbsolute(target) && !target.startsWith('~')) {
    check.unknown = `the line changes directory, so the relative file ${JSON.stringify(target)} may be anywhere`;
  }
  return check;
}
