/**
 * Commands that run other commands: `env FOO=1 rm`, `sudo rm`, `xargs rm`, `nohup`, `timeout`,
 * `bash -c '...'`, `eval '...'`, `su -c`, `env -S`, `watch`, `find -exec`. Each one gets the command
 * it runs as a nested group, read from its arguments (strings are parsed again as shell), so a rule
 * or a classifier sees `rm -rf /` in `sudo env X=1 sh -c "rm -rf /"`.
 * Must not classify commands (bash-danger.ts) nor load the grammar (bash-parser.ts).
 */
import type { Parser } from 'web-tree-sitter';
import { opaqueCommand, parseWith } from './parser.js';
import { MAX_NESTING_DEPTH, type ShellCommand } from './shell-command.js';

/** A wrapper whose own name says nothing: only the command it runs counts. */
interface WrapperSpec {
  /** Options that take a value (the next word). */
  valued: RegExp;
  /** Operands before the wrapped command (`timeout 5 cmd`, `flock file cmd`). */
  operands?: number;
  /** Runs its command as another user: the wrapper itself matters too. */
  privileged?: boolean;
}

const WRAPPERS: Record<string, WrapperSpec> = {
  env: { valued: /^-(u|C|P)$|^--(unset|chdir)$/ },
  nohup: { valued: /^$/ },
  time: { valued: /^-(o|f)$/ },
  nice: { valued: /^-n$|^--adjustment$/ },
  ionice: { valued: /^-(c|n|p|P|u)$/ },
  timeout: { valued: /^-(s|k)$|^--(signal|kill-after)$/, operands: 1 },
  stdbuf: { valued: /^-(i|o|e)$/ },
  command: { valued: /^$/ },
  builtin: { valued: /^$/ },
  exec: { valued: /^-a$/ },
  setsid: { valued: /^$/ },
  coproc: { valued: /^$/ },
  chronic: { valued: /^$/ },
  caffeinate: { valued: /^-(t|w)$/ },
  unbuffer: { valued: /^$/ },
  xargs: { valued: /^-(I|L|n|P|s|d|E|a|i|l)$|^--(max-args|max-procs|delimiter|arg-file|replace)$/ },
  flock: { valued: /^-(w|E)$|^--(timeout|conflict-exit-code)$/, operands: 1 },
  chroot: { valued: /^--(userspec|groups)$/, operands: 1, privileged: true },
  sudo: { valued: /^-(u|g|h|p|C|D|U|r|t|T)$|^--(user|group|host|prompt|chdir)$/, privileged: true },
  doas: { valued: /^-(u|C)$/, privileged: true },
  pkexec: { valued: /^--user$/, privileged: true },
  runuser: { valued: /^-(u|g|G)$|^--(user|group)$/, privileged: true },
};

const SHELLS = new Set(['sh', 'bash', 'zsh', 'dash', 'ksh', 'mksh', 'fish', 'csh', 'tcsh', 'ash', 'busybox']);

/** Whether the command runs nothing by itself (a transparent wrapper): rules look only at what it runs. */
export function isTransparentWrapper(cmd: ShellCommand): boolean {
  const name = commandName(cmd);
  const spec = name === undefined ? undefined : WRAPPERS[name];
  return !!spec && !spec.privileged && cmd.nested.some((n) => n.how === 'wrapper');
}

/** The command name without its directory (`/bin/rm` -> `rm`), or undefined when there is none. */
export function commandName(cmd: ShellCommand): string | undefined {
  const word = cmd.words[0];
  if (word === undefined) return undefined;
  const slash = word.lastIndexOf('/');
  return slash === -1 ? word : word.slice(slash + 1);
}

/** Adds the nested commands that wrappers and shell strings run, in place, through every level. */
export function unwrapAll(parser: Parser, commands: ShellCommand[], depth = 0): ShellCommand[] {
  for (const cmd of commands) {
    for (const group of cmd.nested) unwrapAll(parser, group.commands, depth + 1);
    const inner = runs(parser, cmd, depth);
    if (inner) {
      unwrapAll(parser, inner.commands, depth + 1);
      cmd.nested.push(inner);
    }
  }
  return commands;
}

type Group = ShellCommand['nested'][number];

/** The command group `cmd` runs as a wrapper or shell, if it is one. */
function runs(parser: Parser, cmd: ShellCommand, depth: number): Group | undefined {
  const name = commandName(cmd);
  if (name === undefined || cmd.opaque) return undefined;
  const args = cmd.words.slice(1);
  if (SHELLS.has(name)) return shellString(parser, cmd, args, depth);
  if (name === 'eval') return parseString(parser, cmd, 1, depth, 'eval');
  if (name === 'su') return suString(parser, cmd, depth);
  if (name === 'watch') return afterOptions(parser, cmd, /^-(n|d|g|q|x)$|^--(interval|differences)$/, depth, 'watch');
  if (name === 'find') return findExec(cmd);
  if (name === 'env') {
    const split = args.findIndex((a) => a === '-S' || a.startsWith('--split-string'));
    if (split !== -1)
      return parseString(
        parser,
        cmd,
        split + (args[split].includes('=') ? 1 : 2),
        depth,
        'env -S',
        args[split].split('=')[1],
      );
  }
  if (name === 'command' && args.some((a) => a === '-v' || a === '-V')) return undefined;
  if (name === 'flock' && args.includes('-c'))
    return parseString(parser, cmd, args.indexOf('-c') + 2, depth, 'flock -c');
  const spec = WRAPPERS[name];
  return spec ? wrapped(cmd, spec, name) : undefined;
}

/** `bash -c 'string'` (also `-lc`, `-ec`, ...): the string is parsed as a command line. */
function shellString(parser: Parser, cmd: ShellCommand, args: string[], depth: number): Group | undefined {
  const flag = args.findIndex((a) => /^-[a-zA-Z]*c[a-zA-Z]*$/.test(a) && !a.startsWith('--'));
  if (flag === -1) return shellInput(parser, cmd, depth);
  // Options may follow -c before the string (`bash -c -e 'cmd'`); `-o name` takes a value.
  let at = flag + 1;
  while (at < args.length && /^[-+]./.test(args[at])) at += /^[-+]o$/.test(args[at]) ? 2 : 1;
  return parseString(parser, cmd, at + 1, depth, `${commandName(cmd)} -c`);
}

/** `sh <<< 'cmd'` and `sh <<EOF ... EOF`: the shell runs the here-string or here-document. */
function shellInput(parser: Parser, cmd: ShellCommand, depth: number): Group | undefined {
  const input = cmd.redirects.find((r) => r.op === '<<<' || r.op === '<<' || r.op === '<<-');
  if (!input) return undefined;
  return parseString(parser, cmd, 0, depth, `${commandName(cmd)} <<`, input.target, input.dynamic);
}

function suString(parser: Parser, cmd: ShellCommand, depth: number): Group | undefined {
  const c = cmd.words.findIndex((w, i) => i > 0 && (w === '-c' || w === '--command'));
  return c === -1 ? undefined : parseString(parser, cmd, c + 1, depth, 'su -c');
}

/** Parses the word at `index` (or, for eval/watch, every word from there, joined) as a command line. */
function parseString(
  parser: Parser,
  cmd: ShellCommand,
  index: number,
  depth: number,
  via: string,
  given?: string,
  givenDynamic = false,
): Group | undefined {
  const joined = via === 'eval' || via === 'watch';
  const parts = given !== undefined ? [given] : joined ? cmd.words.slice(index) : cmd.words.slice(index, index + 1);
  const dynamic =
    given !== undefined ? givenDynamic : cmd.dynamic.slice(index, joined ? undefined : index + 1).some(Boolean);
  if (!parts.length) return undefined;
  const source = parts.join(' ');
  const commands = dynamic
    ? [opaqueCommand(source, `${via} runs a string that is only known at run time`)]
    : depth + 1 > MAX_NESTING_DEPTH
      ? [opaqueCommand(source, `nested more than ${MAX_NESTING_DEPTH} levels deep`)]
      : parseWith(parser, source, depth + 1);
  for (const inner of commands) inheritPipe(inner, cmd);
  return { how: 'shell', source, commands };
}

function afterOptions(
  parser: Parser,
  cmd: ShellCommand,
  valued: RegExp,
  depth: number,
  via: string,
): Group | undefined {
  const at = skipOptions(cmd.words, 1, valued);
  return at < cmd.words.length ? parseString(parser, cmd, at, depth, via) : undefined;
}

/** `find ... -exec cmd {} ;` runs `cmd` once per match. */
function findExec(cmd: ShellCommand): Group | undefined {
  const words = cmd.words;
  const start = words.findIndex((w) => /^-(exec|execdir|ok|okdir)$/.test(w));
  if (start === -1) return undefined;
  let end = words.findIndex((w, k) => k > start && (w === ';' || w === '+'));
  if (end === -1) end = words.length;
  const inner = slice(cmd, start + 1, end);
  return inner.words.length ? { how: 'exec', source: inner.text, commands: [inner] } : undefined;
}

/** The command after a wrapper's options and operands (`nice -n 5 make` -> `make`). */
function wrapped(cmd: ShellCommand, spec: WrapperSpec, name: string): Group | undefined {
  let at = skipOptions(cmd.words, 1, spec.valued);
  if (name === 'env' || name === 'sudo' || name === 'doas') {
    while (at < cmd.words.length && /^[A-Za-z_][A-Za-z0-9_]*=/.test(cmd.words[at])) at++;
  }
  at += spec.operands ?? 0;
  const inner = slice(cmd, at, cmd.words.length);
  if (name === 'env') {
    for (const w of cmd.words.slice(1, at)) {
      const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/s.exec(w);
      if (m) inner.assignments.push({ name: m[1], value: m[2] });
    }
  }
  if (!inner.words.length) {
    if (name !== 'xargs') return undefined;
    inner.words = ['echo'];
    inner.dynamic = [false];
    inner.text = 'echo';
  }
  return { how: 'wrapper', source: inner.text, commands: [inner] };
}

/** Words `from`..`to` of `cmd` as a command of their own (same pipe position, no redirections). */
function slice(cmd: ShellCommand, from: number, to: number): ShellCommand {
  const words = cmd.words.slice(from, to);
  const inner: ShellCommand = {
    text: words.map(quoteWord).join(' '),
    words,
    dynamic: cmd.dynamic.slice(from, to),
    assignments: [],
    redirects: [],
    pipedInto: false,
    nested: [],
  };
  inheritPipe(inner, cmd);
  return inner;
}

function inheritPipe(inner: ShellCommand, outer: ShellCommand): void {
  if (!outer.pipedInto) return;
  inner.pipedInto = true;
  if (outer.pipedFrom !== undefined) inner.pipedFrom = outer.pipedFrom;
}

/** Index of the first word from `start` that is not an option (or an option's value). */
function skipOptions(words: string[], start: number, valued: RegExp): number {
  let k = start;
  while (k < words.length && words[k].startsWith('-') && words[k] !== '-') {
    if (words[k] === '--') return k + 1;
    k += valued.test(words[k]) ? 2 : 1;
  }
  return k;
}

/** Quotes a word for display when it holds characters the shell would read specially. */
function quoteWord(w: string): string {
  return /^[A-Za-z0-9_@%+=:,./{}-]+$/.test(w) ? w : `'${w.replace(/'/g, `'\\''`)}'`;
}
