/**
 * Danger classification for shell commands. The command line is parsed (bash-parser.ts, on
 * tree-sitter-bash) into every simple command it would run — lists, pipelines, subshells,
 * substitutions, and what wrappers and shell strings run (bash-unwrap.ts) — and each one is
 * classified on its own, so `ls && rm -rf /` cannot hide behind `ls`. Substitution and file
 * redirection raise the level; text that does not parse, and command names computed at run time,
 * are dangerous. This is advice for the policy layer (allow / ask / deny), not a sandbox.
 * Must not parse shell text (bash-parser.ts) nor decide allow / ask / deny (policy/).
 */
import type { Parser } from 'web-tree-sitter';
import { bashParser, parseWith } from './parser.js';
import { MAX_NESTING_DEPTH, type ShellCommand, type ShellRedirect } from './shell-command.js';
import { commandName, isTransparentWrapper, unwrapAll } from './unwrap.js';
import {
  DANGEROUS_COMMANDS,
  GIT_SAFE,
  INTERPRETERS,
  PKG_DANGEROUS,
  PKG_MANAGERS,
  PKG_SAFE,
  RISKY_VARIABLES,
  SAFE_COMMANDS,
  SHELLS,
} from './danger-tables.js';

export { MAX_NESTING_DEPTH };

/** How risky a command is: read-only, changes things locally, or destructive / privileged. */
export type DangerLevel = 'safe' | 'moderate' | 'dangerous';

/** One simple command of a command line, with its own level and the reasons for it. */
export interface CommandSegment {
  /** The simple command as written (for a wrapped one, the words it runs). */
  command: string;
  level: DangerLevel;
  /** Why the level is above `safe` (empty for safe commands). */
  reasons: string[];
}

/** The classification of a whole command line: the highest level of any segment. */
export interface CommandClassification {
  level: DangerLevel;
  segments: CommandSegment[];
}

const RANK: Record<DangerLevel, number> = { safe: 0, moderate: 1, dangerous: 2 };

/** The higher of two levels. */
function maxLevel(a: DangerLevel, b: DangerLevel): DangerLevel {
  return RANK[a] >= RANK[b] ? a : b;
}

/** Whether `a` is at least as high as `b`. */
export function atLeast(a: DangerLevel, b: DangerLevel): boolean {
  return RANK[a] >= RANK[b];
}

/** Parses a command line into the tree of simple commands it runs, wrappers unwrapped. */
export async function shellCommands(command: string): Promise<ShellCommand[]> {
  return commandsWith(await bashParser(), command);
}

/** Same as `shellCommands`, with an already loaded parser (synchronous). */
function commandsWith(parser: Parser, command: string): ShellCommand[] {
  return unwrapAll(parser, parseWith(parser, String(command ?? '')));
}

/** Classifies a shell command line; see the module comment. Never throws. */
export async function classifyCommand(command: string): Promise<CommandClassification> {
  return classifyCommands(await shellCommands(command));
}

/** Classifies already parsed commands. */
function classifyCommands(commands: ShellCommand[]): CommandClassification {
  const segments: CommandSegment[] = [];
  for (const cmd of commands) classifyInto(cmd, segments);
  const level = segments.reduce<DangerLevel>((acc, s) => maxLevel(acc, s.level), 'safe');
  return { level, segments };
}

/** Every command that would run, depth first, each with its own level (wrappers skipped). */
function classifyInto(cmd: ShellCommand, out: CommandSegment[]): DangerLevel {
  const at = out.length;
  const verdict = new Verdict();
  const transparent = isTransparentWrapper(cmd);
  if (!transparent || cmd.redirects.length) out.push({ command: cmd.text, level: 'safe', reasons: [] });
  let nestedMax: DangerLevel = 'safe';
  for (const group of cmd.nested) {
    let inner: DangerLevel = 'safe';
    for (const c of group.commands) inner = maxLevel(inner, classifyInto(c, out));
    nestedMax = maxLevel(nestedMax, inner);
    if (group.how === 'substitution')
      verdict.raise(maxLevel('moderate', inner), `command substitution: ${abbreviate(group.source)}`);
    else if (group.how === 'shell')
      verdict.raise(maxLevel('moderate', inner), `${commandName(cmd)} runs a nested command line`);
    else if (group.how === 'exec')
      verdict.raise(maxLevel('moderate', inner), `${commandName(cmd)} runs a command per match`);
    else if (!transparent) verdict.raise(inner, `${commandName(cmd)} runs ${abbreviate(group.source)}`);
  }
  if (transparent && !cmd.redirects.length) return nestedMax;
  classifyOwn(cmd, verdict);
  out[at] = { command: cmd.text, level: verdict.level, reasons: verdict.reasons };
  return maxLevel(verdict.level, nestedMax);
}

/** The level one command earns by itself; the commands it nests are judged on their own. */
export function commandLevel(cmd: ShellCommand): DangerLevel {
  const v = new Verdict();
  classifyOwn(cmd, v);
  return v.level;
}

/** The level and reasons a command earns. */
class Verdict {
  level: DangerLevel = 'safe';
  reasons: string[] = [];

  raise(level: DangerLevel, reason: string): void {
    this.level = maxLevel(this.level, level);
    if (level !== 'safe' && !this.reasons.includes(reason)) this.reasons.push(reason);
  }
}

/** What the command itself (its name, arguments, variables and redirections) earns. */
function classifyOwn(cmd: ShellCommand, v: Verdict): void {
  if (cmd.opaque) return v.raise('dangerous', `cannot be checked: ${cmd.opaque}`);
  for (const r of cmd.redirects) classifyRedirect(r, v);
  for (const a of cmd.assignments) {
    if (RISKY_VARIABLES.test(a.name)) v.raise('moderate', `sets ${a.name}, which changes what runs`);
  }
  if (!cmd.words.length) return;
  if (cmd.dynamic[0])
    return v.raise('dangerous', `the command name ${JSON.stringify(cmd.words[0])} is only known at run time`);
  classifyWords(cmd, v);
}

const WRITE_REDIRECTS = new Set(['>', '>>', '>|', '&>', '&>>', '<>', '>&']);

function classifyRedirect(r: ShellRedirect, v: Verdict): void {
  if (!WRITE_REDIRECTS.has(r.op)) return;
  // `2>&1`, `>&2`, `>&-`: duplicating or closing descriptors writes no file.
  if ((r.op === '>&' || r.op === '<>') && /^(\d+|-)$/.test(r.target)) return;
  if (/^\/dev\/(null|stdout|stderr|tty|fd\/\d+)$/.test(r.target)) return;
  if (/^\/dev\/(sd|hd|nvme|vd|xvd|mmcblk|disk|mapper|md|loop)/.test(r.target)) {
    return v.raise('dangerous', `redirection ${r.op} writes to the block device ${r.target}`);
  }
  v.raise('moderate', `redirection ${r.op} writes to ${r.target || '(missing file)'}`);
}

/** The rules by command name. */
function classifyWords(cmd: ShellCommand, v: Verdict): void {
  const name = commandName(cmd)!;
  const args = cmd.words.slice(1);
  if (DANGEROUS_COMMANDS[name]) return v.raise('dangerous', DANGEROUS_COMMANDS[name]);
  if (/^mkfs(\..+)?$/.test(name)) return v.raise('dangerous', 'formats a filesystem');
  if (name === 'env' || name === 'command' || name === 'xargs') return; // wrappers that ran nothing
  if (SHELLS.has(name) || name === 'eval' || name === 'source' || name === '.')
    return classifyShell(cmd, name, args, v);
  if (INTERPRETERS.has(name) || /^python\d/.test(name)) return classifyInterpreter(cmd, name, args, v);
  if (classifyKnown(name, args, v)) return;
  if (name === 'git') return classifyGit(args, v);
  if (PKG_MANAGERS.has(name)) return classifyPackageManager(name, args, v);
  if (SAFE_COMMANDS.has(name)) return;
  v.raise('moderate', `${name} is not a known read-only command`);
}

function pipedText(cmd: ShellCommand): string {
  return cmd.pipedFrom ? `the output of ${cmd.pipedFrom.split('/').pop()} ` : '';
}

function classifyShell(cmd: ShellCommand, name: string, args: string[], v: Verdict): void {
  if (cmd.nested.some((g) => g.how === 'shell')) return v.raise('moderate', `${name} runs a nested command line`);
  const script = args.find((a) => !a.startsWith('-'));
  if ((!script || args.includes('-s')) && cmd.pipedInto) {
    return v.raise('dangerous', `pipes ${pipedText(cmd)}into ${name}, executing it as a script`);
  }
  v.raise('moderate', script ? `runs the script ${script}` : `starts ${name}`);
}

function classifyInterpreter(cmd: ShellCommand, name: string, args: string[], v: Verdict): void {
  if (args.length === 1 && /^(--version|-v|-V)$/.test(args[0])) return;
  const program = args.some((a) => !a.startsWith('-')) || args.some((a) => /^(-c|-e|--eval|-p|--print)$/.test(a));
  if (!program && cmd.pipedInto)
    return v.raise('dangerous', `pipes ${pipedText(cmd)}into ${name}, executing it as a program`);
  v.raise('moderate', `runs ${name} code`);
}

/** Commands whose arguments decide their level; returns whether `name` was one of them. */
function classifyKnown(name: string, args: string[], v: Verdict): boolean {
  const has = (re: RegExp) => args.some((a) => re.test(a));
  switch (name) {
    case 'rm':
      if (has(/^(--recursive|-[a-zA-Z]*[rR][a-zA-Z]*)$/)) v.raise('dangerous', 'rm -r deletes directory trees');
      else if (has(/^(\/|~|\*|\.|\/\*|~\/\*?)$/)) v.raise('dangerous', 'rm on a root, home or wildcard path');
      else v.raise('moderate', 'rm deletes files');
      return true;
    case 'chmod':
    case 'chown':
    case 'chgrp':
      if (has(/^(--recursive|-[a-zA-Z]*R[a-zA-Z]*)$/)) v.raise('dangerous', `${name} -R changes a whole tree`);
      else v.raise('moderate', `${name} changes file permissions or ownership`);
      return true;
    case 'find':
      if (args.includes('-delete')) v.raise('dangerous', 'find -delete deletes every match');
      else if (has(/^-(fprint|fprintf|fls)/)) v.raise('moderate', 'find writes to a file');
      return true;
    case 'sed':
      if (has(/^(-i|--in-place)/) || has(/^-[a-zA-Z]*i/)) v.raise('moderate', 'sed -i edits files in place');
      else if (sedScripts(args).some((p) => SED_RUNS_OR_WRITES.test(p)))
        v.raise('moderate', 'sed program runs commands or writes files');
      return true;
    case 'awk':
    case 'gawk':
      if (has(/system\s*\(|\|\s*getline|print[^;]*[>|]/))
        v.raise('moderate', 'awk program runs commands or writes files');
      return true;
    case 'kill':
    case 'pkill':
    case 'killall':
      if (name === 'kill' && args.includes('-1')) v.raise('dangerous', 'kill -1 signals every process you own');
      else v.raise('moderate', `${name} stops processes`);
      return true;
    case 'tee':
      if (!args.filter((a) => !a.startsWith('-')).every((a) => a === '/dev/null'))
        v.raise('moderate', 'tee writes to files');
      return true;
    case 'curl':
    case 'wget':
      v.raise('moderate', `${name} accesses the network`);
      return true;
    case 'crontab':
      v.raise(
        args.includes('-r') ? 'dangerous' : 'moderate',
        args.includes('-r') ? 'crontab -r deletes the crontab' : 'crontab changes scheduled jobs',
      );
      return true;
  }
  return false;
}

/** sed's `e` command and `e`/`w` flags run commands or write files. */
const SED_RUNS_OR_WRITES = /(^|[;\n{}])\s*[0-9,$/!]*\s*[ewW](\s|;|$)|\/[gpiImM0-9]*[ewW](\s|;|$)/;

/** The scripts of a sed call: each `-e`/`--expression` value, else the first operand. */
function sedScripts(args: string[]): string[] {
  const given = args.flatMap((a, k) => (a === '-e' || a === '--expression' ? [args[k + 1] ?? ''] : []));
  if (given.length) return given;
  const first = args.find((a) => !a.startsWith('-'));
  return first === undefined ? [] : [first];
}

function classifyPackageManager(name: string, args: string[], v: Verdict): void {
  const sub = args.find((a) => !a.startsWith('-') || a === '--version' || a === '-v');
  if (sub === undefined) return name === 'yarn' ? v.raise('moderate', 'yarn installs dependencies') : undefined;
  if (PKG_DANGEROUS.has(sub)) return v.raise('dangerous', `${name} ${sub} changes a public registry`);
  if (sub === 'config' && args.some((a) => a === 'set' || a === 'delete'))
    return v.raise('moderate', `${name} config changes settings`);
  if (sub === 'audit' && args.includes('fix')) return v.raise('moderate', `${name} audit fix changes dependencies`);
  if (PKG_SAFE.has(sub) || sub === 'audit') return;
  v.raise('moderate', `${name} ${sub} runs scripts or changes dependencies`);
}

/** git: the subcommand (after global options) decides; see GIT_SAFE for the read-only ones. */
function classifyGit(args: string[], v: Verdict): void {
  let k = 0;
  while (k < args.length && args[k].startsWith('-')) k += /^-(C|c)$/.test(args[k]) ? 2 : 1;
  const sub = args[k];
  if (sub === undefined) return;
  const rest = args.slice(k + 1);
  if (args.slice(0, k).some((a) => /^(core\.(pager|editor|sshCommand|fsmonitor|hooksPath)|alias\.)/.test(a))) {
    return v.raise('moderate', 'git -c sets an option that runs commands');
  }
  const verdict = gitRule(sub, rest);
  if (verdict) return v.raise(verdict[0], verdict[1]);
  if (!GIT_SAFE.has(sub)) v.raise('moderate', `git ${sub} changes the repository`);
}

type Rule = [DangerLevel, string] | undefined;

function gitRule(sub: string, rest: string[]): Rule {
  const has = (re: RegExp) => rest.some((a) => re.test(a));
  switch (sub) {
    case 'push':
      if (
        has(/^(--force|--force-with-lease.*|--force-if-includes|-f|--mirror|--prune)$/) ||
        has(/^-[a-zA-Z]*f/) ||
        has(/^\+/)
      )
        return ['dangerous', 'git push --force rewrites remote history'];
      if (has(/^(--delete|-d)$/) || has(/^:/)) return ['dangerous', 'git push --delete deletes remote refs'];
      return ['moderate', 'git push publishes commits'];
    case 'reset':
      return has(/^--(hard|merge|keep)$/)
        ? ['dangerous', 'git reset --hard discards uncommitted work']
        : ['moderate', 'git reset moves HEAD'];
    case 'clean':
      return has(/^(--force|-[a-zA-Z]*f)/)
        ? ['dangerous', 'git clean -f deletes untracked files']
        : ['moderate', 'git clean'];
    case 'branch':
      if (has(/^-D$/) || (has(/^(-d|--delete)$/) && has(/^(--force|-f)$/)))
        return ['dangerous', 'git branch -D deletes unmerged branches'];
      if (has(/^(-d|--delete|-m|-M|--move|-c|-C|--copy|-f|--force|-u|--set-upstream-to.*|--unset-upstream)$/))
        return ['moderate', 'git branch changes branches'];
      return rest.some((a) => !a.startsWith('-')) ? ['moderate', 'git branch creates a branch'] : ['safe', ''];
    case 'stash':
      if (rest[0] === 'drop' || rest[0] === 'clear') return ['dangerous', `git stash ${rest[0]} discards stashed work`];
      return rest[0] === 'list' || rest[0] === 'show'
        ? ['safe', '']
        : ['moderate', 'git stash changes the working tree'];
    case 'checkout':
    case 'restore':
      if (has(/^(-f|--force)$/) || (sub === 'checkout' && rest.includes('--') && rest.includes('.')))
        return ['dangerous', `git ${sub} discards local changes`];
      return ['moderate', `git ${sub} changes the working tree`];
    case 'filter-branch':
    case 'filter-repo':
      return ['dangerous', `git ${sub} rewrites history`];
    case 'gc':
    case 'reflog':
      if (has(/^(--prune=now|expire|delete)$/))
        return ['dangerous', `git ${sub} permanently drops unreachable commits`];
      return sub === 'reflog' ? ['safe', ''] : ['moderate', 'git gc rewrites the object store'];
    case 'remote':
      if (rest.every((a) => a === '-v' || a === '--verbose' || a === 'show' || a === 'get-url')) return ['safe', ''];
      return ['moderate', 'git remote changes remotes'];
    case 'tag':
      if (rest.length === 0 || has(/^(-l|--list|-n\d*|--contains|--points-at)$/)) return ['safe', ''];
      return ['moderate', has(/^(-d|--delete)$/) ? 'git tag -d deletes a tag' : 'git tag creates a tag'];
    case 'config':
      return has(/^(--get|--get-all|--get-regexp|--list|-l)$/)
        ? ['safe', '']
        : ['moderate', 'git config changes settings'];
  }
  return undefined;
}

/** A command line shortened for a reason text. */
export function abbreviate(text: string): string {
  const t = text.trim().replace(/\s+/g, ' ');
  return t.length > 60 ? `${t.slice(0, 57)}...` : t;
}
