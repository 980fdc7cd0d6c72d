/**
 * Danger classification for shell commands: every sub-command of a compound command (`&&`, `||`,
 * `;`, `|`, `&`, newlines) is classified on its own, so `ls && rm -rf /` cannot hide behind `ls`.
 * Command substitution and file redirection raise the level. This is advice for a policy layer
 * (allow / ask / deny), not a sandbox: a determined command can always obfuscate itself, which is
 * why anything not recognised as safe is at least `moderate`.
 */

/** How risky a command is: read-only, changes things locally, or destructive / privileged. */
export type DangerLevel = 'safe' | 'moderate' | 'dangerous';

/** One simple command of a compound command line, with its own level and the reasons for it. */
export interface CommandSegment {
  /** The sub-command as written (trimmed). */
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

/** Nesting depth of `$(...)`, `bash -c` and the like that is followed before giving up (as dangerous). */
export const MAX_NESTING_DEPTH = 8;

const RANK: Record<DangerLevel, number> = { safe: 0, moderate: 1, dangerous: 2 };

/** The higher of two levels. */
export function maxLevel(a: DangerLevel, b: DangerLevel): DangerLevel {
  return RANK[a] >= RANK[b] ? a : b;
}

/** Classifies a shell command line; see the module comment. Never throws. */
export function classifyCommand(command: string): CommandClassification {
  const segments: CommandSegment[] = [];
  classifyInto(String(command ?? ''), 0, segments);
  const level = segments.reduce<DangerLevel>((acc, s) => maxLevel(acc, s.level), 'safe');
  return { level, segments };
}

// ---------------------------------------------------------------------------------------------
// Tokenizer: a small shell lexer that knows quotes, escapes, operators, redirections, comments,
// here-documents and substitutions. It does not expand anything.

interface Word {
  /** The word with quotes removed and escapes applied (substitutions left as written). */
  text: string;
  /** Whether any part of the word was quoted. */
  quoted: boolean;
}

interface Redirect {
  op: string;
  target: string;
}

interface RawSegment {
  raw: string;
  words: Word[];
  redirects: Redirect[];
  /** Bodies of `$(...)`, backticks, `<(...)` and `>(...)` found in this segment. */
  substitutions: string[];
  /** Whether this segment reads the output of a previous one through `|`. */
  pipedInto: boolean;
  /** The first word of the segment piping into this one. */
  pipedFrom?: string;
}

const WRITE_REDIRECTS = new Set(['>', '>>', '>|', '&>', '&>>', '<>', '>&']);

/** Splits a command line into simple commands (segments). */
function splitCommand(input: string): RawSegment[] {
  const out: RawSegment[] = [];
  let seg = newSegment(false);
  // Held in an object so that closures and the loop see the same, un-narrowed value.
  const cur: { word: Word | null } = { word: null };
  let segStart = 0;
  let i = 0;
  const heredocs: Array<{ delim: string; stripTabs: boolean }> = [];

  const endWord = () => {
    if (cur.word) seg.words.push(cur.word);
    cur.word = null;
  };
  const ensureWord = (): Word => (cur.word ??= { text: '', quoted: false });
  const endSegment = (nextPiped: boolean, at: number) => {
    endWord();
    seg.raw = input.slice(segStart, at).trim();
    const from = seg.words[0]?.text;
    if (seg.words.length || seg.redirects.length || seg.substitutions.length) out.push(seg);
    seg = newSegment(nextPiped);
    if (nextPiped && from !== undefined) seg.pipedFrom = from;
  };

  while (i < input.length) {
    const c = input[i];
    if (c === '\\') {
      if (input[i + 1] === '\n') {
        i += 2;
        continue;
      } // line continuation
      const w = ensureWord();
      w.text += input[i + 1] ?? '';
      w.quoted = true;
      i += 2;
      continue;
    }
    if (c === "'") {
      const end = input.indexOf("'", i + 1);
      const stop = end === -1 ? input.length : end;
      const w = ensureWord();
      w.text += input.slice(i + 1, stop);
      w.quoted = true;
      i = stop + 1;
      continue;
    }
    if (c === '"') {
      const w = ensureWord();
      w.quoted = true;
      i++;
      while (i < input.length && input[i] !== '"') {
        if (input[i] === '\\' && i + 1 < input.length && '"\\$`\n'.includes(input[i + 1])) {
          if (input[i + 1] !== '\n') w.text += input[i + 1];
          i += 2;
        } else if (input[i] === '$' && input[i + 1] === '(') {
          i = readSubstitution(input, i, w, seg);
        } else if (input[i] === '`') {
          i = readBacktick(input, i, w, seg);
        } else {
          w.text += input[i++];
        }
      }
      i++;
      continue;
    }
    if (c === '$' && input[i + 1] === '(') {
      i = readSubstitution(input, i, ensureWord(), seg);
      continue;
    }
    if (c === '`') {
      i = readBacktick(input, i, ensureWord(), seg);
      continue;
    }
    if ((c === '<' || c === '>') && input[i + 1] === '(') {
      // Process substitution: the body runs as a command.
      const end = findClosingParen(input, i + 2);
      seg.substitutions.push(input.slice(i + 2, end));
      ensureWord().text += input.slice(i, end + 1);
      i = end + 1;
      continue;
    }
    if (c === '#' && !cur.word) {
      while (i < input.length && input[i] !== '\n') i++;
      continue;
    }
    if (c === ' ' || c === '\t') {
      endWord();
      i++;
      continue;
    }
    if (c === '\n') {
      endSegment(false, i);
      i++;
      // Here-document bodies are data, not commands: skip them.
      while (heredocs.length) {
        const { delim, stripTabs } = heredocs.shift()!;
        while (i < input.length) {
          const nl = input.indexOf('\n', i);
          const lineEnd = nl === -1 ? input.length : nl;
          const line = input.slice(i, lineEnd);
          i = lineEnd + 1;
          if ((stripTabs ? line.replace(/^\t+/, '') : line) === delim) break;
        }
      }
      segStart = Math.min(i, input.length);
      continue;
    }
    if (c === ';' || c === '&' || c === '|') {
      const two = input.slice(i, i + 2);
      if (c === '&' && input[i + 1] === '>') {
        // &> and &>> : both streams to a file.
        endWord();
        const op = input.slice(i, i + 3) === '&>>' ? '&>>' : '&>';
        i = readRedirectTarget(input, i + op.length, op, seg);
        continue;
      }
      if (c === ';' && input[i + 1] === ';') {
        endSegment(false, i); // `;;` in case statements
        i += 2;
        segStart = i;
        continue;
      }
      const isPipe = c === '|' && two !== '||';
      const len = two === '&&' || two === '||' || two === '|&' ? 2 : 1;
      endSegment(isPipe, i);
      i += len;
      segStart = i;
      continue;
    }
    if (c === '(' || c === ')') {
      // Subshells and grouping: the inner commands are classified as ordinary segments.
      endSegment(false, i);
      i++;
      segStart = i;
      continue;
    }
    if (c === '>' || c === '<') {
      // A word made only of digits right before the operator is a file descriptor (2>file).
      if (cur.word && !cur.word.quoted && /^\d+$/.test(cur.word.text)) cur.word = null;
      else endWord();
      let op = c;
      let j = i + 1;
      if (c === '>' && (input[j] === '>' || input[j] === '|' || input[j] === '&')) op += input[j++];
      else if (c === '<') {
        if (input.startsWith('<<', j)) {
          op = '<<<';
          j += 2;
        } else if (input[j] === '<') {
          op = '<<';
          j++;
          if (input[j] === '-') {
            op = '<<-';
            j++;
          }
        } else if (input[j] === '>' || input[j] === '&') op += input[j++];
      }
      if (op === '<<' || op === '<<-') {
        const before = seg.redirects.length;
        j = readRedirectTarget(input, j, op, seg);
        const delim = seg.redirects[before]?.target ?? '';
        heredocs.push({ delim, stripTabs: op === '<<-' });
        i = j;
        continue;
      }
      i = readRedirectTarget(input, j, op, seg);
      continue;
    }
    ensureWord().text += c;
    i++;
  }
  endSegment(false, input.length);
  return out;
}

function newSegment(pipedInto: boolean): RawSegment {
  return { raw: '', words: [], redirects: [], substitutions: [], pipedInto };
}

/** Reads `$(...)` (or `$((...))`, arithmetic, which runs nothing) starting at `$`; returns the index after it. */
function readSubstitution(input: string, i: number, w: Word, seg: RawSegment): number {
  if (input[i + 2] === '(') {
    const end = findClosingParen(input, i + 3);
    const close = input[end + 1] === ')' ? end + 1 : end;
    w.text += input.slice(i, close + 1);
    return close + 1;
  }
  const end = findClosingParen(input, i + 2);
  seg.substitutions.push(input.slice(i + 2, end));
  w.text += input.slice(i, end + 1);
  return end + 1;
}

function readBacktick(input: string, i: number, w: Word, seg: RawSegment): number {
  let j = i + 1;
  let body = '';
  while (j < input.length && input[j] !== '`') {
    if (input[j] === '\\' && j + 1 < input.length) {
      body += input[j + 1];
      j += 2;
      continue;
    }
    body += input[j++];
  }
  seg.substitutions.push(body);
  w.text += input.slice(i, j + 1);
  return j + 1;
}

/** Index of the `)` closing a paren opened just before `start`, skipping quotes and nesting. */
function findClosingParen(input: string, start: number): number {
  let depth = 1;
  let i = start;
  while (i < input.length) {
    const c = input[i];
    if (c === '\\') {
      i += 2;
      continue;
    }
    if (c === "'") {
      const e = input.indexOf("'", i + 1);
      i = e === -1 ? input.length : e + 1;
      continue;
    }
    if (c === '"') {
      i++;
      while (i < input.length && input[i] !== '"') i += input[i] === '\\' ? 2 : 1;
      i++;
      continue;
    }
    if (c === '(') depth++;
    else if (c === ')' && --depth === 0) return i;
    i++;
  }
  return input.length;
}

/** Reads the word after a redirection operator into `seg.redirects`; returns the index after it. */
function readRedirectTarget(input: string, i: number, op: string, seg: RawSegment): number {
  while (input[i] === ' ' || input[i] === '\t') i++;
  let target = '';
  while (i < input.length && !' \t\n;&|<>()'.includes(input[i])) {
    const c = input[i];
    if (c === "'") {
      const e = input.indexOf("'", i + 1);
      const stop = e === -1 ? input.length : e;
      target += input.slice(i + 1, stop);
      i = stop + 1;
    } else if (c === '"') {
      i++;
      while (i < input.length && input[i] !== '"') {
        if (input[i] === '\\' && i + 1 < input.length) {
          target += input[i + 1];
          i += 2;
        } else target += input[i++];
      }
      i++;
    } else if (c === '\\' && i + 1 < input.length) {
      target += input[i + 1];
      i += 2;
    } else if (c === '$' && input[i + 1] === '(') {
      const end = findClosingParen(input, i + 2);
      seg.substitutions.push(input.slice(i + 2, end));
      target += input.slice(i, end + 1);
      i = end + 1;
    } else {
      target += c;
      i++;
    }
  }
  seg.redirects.push({ op, target });
  return i;
}

// ---------------------------------------------------------------------------------------------
// Rules.

/** Commands that only read or print. */
const SAFE_COMMANDS = new Set([
  'ls',
  'll',
  'la',
  'dir',
  'cat',
  'head',
  'tail',
  'less',
  'more',
  'grep',
  'egrep',
  'fgrep',
  'rg',
  'ag',
  'ack',
  'fd',
  'echo',
  'printf',
  'pwd',
  'cd',
  'pushd',
  'popd',
  'wc',
  'sort',
  'uniq',
  'cut',
  'tr',
  'diff',
  'cmp',
  'comm',
  'file',
  'stat',
  'which',
  'type',
  'whereis',
  'whoami',
  'id',
  'groups',
  'hostname',
  'uname',
  'date',
  'cal',
  'printenv',
  'true',
  'false',
  'test',
  '[',
  '[[',
  ']]',
  'tree',
  'du',
  'df',
  'basename',
  'dirname',
  'realpath',
  'readlink',
  'jq',
  'yq',
  'column',
  'nl',
  'tac',
  'rev',
  'fold',
  'fmt',
  'paste',
  'join',
  'expand',
  'unexpand',
  'seq',
  'sleep',
  'md5sum',
  'sha1sum',
  'sha256sum',
  'sha512sum',
  'shasum',
  'cksum',
  'base64',
  'xxd',
  'hexdump',
  'od',
  'strings',
  'ps',
  'free',
  'uptime',
  'lsof',
  'history',
  'export',
  'set',
  'unset',
  'local',
  'read',
  'exit',
  'return',
  'shift',
  'wait',
  'jobs',
  ':',
  'command',
  'man',
  'help',
  'whatis',
  'locale',
  'nproc',
  'getconf',
  'pgrep',
  'sed',
  'awk',
  'gawk',
  'find',
  'env',
]);

/** Commands that destroy data, touch devices or power state whatever their arguments. */
const DANGEROUS_COMMANDS: Record<string, string> = {
  dd: 'dd writes raw bytes to files or devices',
  shred: 'shred destroys file contents irrecoverably',
  fdisk: 'partitions disks',
  sfdisk: 'partitions disks',
  parted: 'partitions disks',
  gdisk: 'partitions disks',
  wipefs: 'erases filesystem signatures',
  mkswap: 'formats a device',
  shutdown: 'changes the machine power state',
  reboot: 'changes the machine power state',
  halt: 'changes the machine power state',
  poweroff: 'changes the machine power state',
  init: 'changes the machine run level',
  sudo: 'runs as another user (root)',
  su: 'runs as another user (root)',
  doas: 'runs as another user (root)',
  pkexec: 'runs as another user (root)',
};

/** Shells and interpreters: running piped text through them executes whatever arrived. */
const SHELLS = new Set(['sh', 'bash', 'zsh', 'dash', 'ksh', 'fish', 'csh', 'tcsh', 'ash']);
const INTERPRETERS = new Set(['python', 'python2', 'python3', 'node', 'perl', 'ruby', 'php', 'deno', 'bun', 'lua']);

/** Wrappers that run the rest of their arguments as a command. */
const WRAPPERS = new Set([
  'nohup',
  'time',
  'nice',
  'ionice',
  'command',
  'builtin',
  'exec',
  'stdbuf',
  'timeout',
  'env',
  'xargs',
  'watch',
  'caffeinate',
  'chronic',
]);

const GIT_SAFE = new Set([
  'status',
  'log',
  'diff',
  'show',
  'rev-parse',
  'ls-files',
  'ls-tree',
  'ls-remote',
  'blame',
  'grep',
  'describe',
  'shortlog',
  'cat-file',
  'whatchanged',
  'name-rev',
  'merge-base',
  'for-each-ref',
  'count-objects',
  'version',
  'help',
  'reflog',
  'show-ref',
  'diff-tree',
  'diff-index',
  'diff-files',
  'rev-list',
  'check-ignore',
  'var',
]);

const PKG_MANAGERS = new Set(['npm', 'pnpm', 'yarn', 'bun']);
const PKG_SAFE = new Set([
  'ls',
  'list',
  'll',
  'view',
  'info',
  'show',
  'outdated',
  'help',
  'explain',
  'why',
  'search',
  'doctor',
  'root',
  'prefix',
  'bin',
  'whoami',
  '--version',
  '-v',
  'version',
  'config',
]);
const PKG_DANGEROUS = new Set(['publish', 'unpublish', 'deprecate', 'owner', 'access', 'dist-tag']);

interface Verdict {
  level: DangerLevel;
  reasons: string[];
}

function classifyInto(command: string, depth: number, out: CommandSegment[]): void {
  if (depth > MAX_NESTING_DEPTH) {
    out.push({
      command: command.trim(),
      level: 'dangerous',
      reasons: [`nested more than ${MAX_NESTING_DEPTH} levels deep`],
    });
    return;
  }
  for (const seg of splitCommand(command)) {
    const verdict: Verdict = { level: 'safe', reasons: [] };
    const raise = (level: DangerLevel, reason: string) => {
      verdict.level = maxLevel(verdict.level, level);
      if (!verdict.reasons.includes(reason)) verdict.reasons.push(reason);
    };
    const nested: CommandSegment[] = [];
    const classifyNested = (text: string, why: string, floor: DangerLevel) => {
      const before = nested.length;
      classifyInto(text, depth + 1, nested);
      const inner = nested.slice(before).reduce<DangerLevel>((acc, s) => maxLevel(acc, s.level), 'safe');
      raise(maxLevel(floor, inner), why);
    };

    for (const sub of seg.substitutions) classifyNested(sub, `command substitution: ${abbreviate(sub)}`, 'moderate');
    for (const r of seg.redirects) classifyRedirect(r, raise);
    classifyWords(seg, raise, classifyNested);

    out.push({ command: seg.raw, level: verdict.level, reasons: verdict.reasons });
    out.push(...nested);
  }
}

function classifyRedirect(r: Redirect, raise: (l: DangerLevel, why: string) => void): void {
  if (!WRITE_REDIRECTS.has(r.op)) return;
  // `2>&1`, `>&2`, `>&-`: duplicating or closing descriptors writes no file.
  if ((r.op === '>&' || r.op === '<>') && /^(\d+|-)$/.test(r.target)) return;
  if (/^\/dev\/(null|stdout|stderr|tty|fd\/\d+)$/.test(r.target)) return;
  if (/^\/dev\/(sd|hd|nvme|vd|xvd|mmcblk|disk|mapper|md|loop)/.test(r.target)) {
    raise('dangerous', `redirection ${r.op} writes to the block device ${r.target}`);
    return;
  }
  raise('moderate', `redirection ${r.op} writes to ${r.target || '(missing file)'}`);
}

function classifyWords(
  seg: RawSegment,
  raise: (l: DangerLevel, why: string) => void,
  classifyNested: (text: string, why: string, floor: DangerLevel) => void,
): void {
  let words = seg.words.map((w) => w.text);
  // Leading shell keywords and assignments run nothing by themselves.
  while (words.length && /^(if|then|else|elif|do|while|until|!|\{|\}|fi|done|esac)$/.test(words[0]))
    words = words.slice(1);
  if (words.length && /^(for|case|select|function)$/.test(words[0])) return;
  while (words.length && /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[0])) words = words.slice(1);
  // Unwrap sudo/env/nohup/xargs/... down to the command they run.
  for (let guard = 0; words.length && guard < 10; guard++) {
    const name = baseName(words[0]);
    if (DANGEROUS_COMMANDS[name] && /^(sudo|su|doas|pkexec)$/.test(name)) {
      raise('dangerous', DANGEROUS_COMMANDS[name]);
      if (name === 'su') {
        const c = words.indexOf('-c');
        if (c !== -1 && words[c + 1] !== undefined) classifyNested(words[c + 1], 'su -c runs a command', 'dangerous');
        return;
      }
      words = skipOptions(words.slice(1), /^-(u|g|h|p|C|D|U|r|t)$/);
      continue;
    }
    if (!WRAPPERS.has(name)) break;
    if (name === 'command' && words.slice(1).some((a) => a === '-v' || a === '-V')) return; // a lookup, runs nothing
    if (name === 'timeout') words = skipOptions(words.slice(1), /^-(s|k)$/).slice(1);
    else if (name === 'nice') words = skipOptions(words.slice(1), /^-n$/);
    else if (name === 'xargs') words = skipOptions(words.slice(1), /^-(I|L|n|P|s|d|E|a)$/);
    else if (name === 'env') {
      const rest = skipOptions(words.slice(1), /^-(u|C|S)$/);
      let k = 0;
      while (k < rest.length && /^[A-Za-z_][A-Za-z0-9_]*=/.test(rest[k])) k++;
      if (k === rest.length) return; // `env` alone prints the environment
      words = rest.slice(k);
    } else if (name === 'watch') words = skipOptions(words.slice(1), /^-(n|d)$/);
    else words = skipOptions(words.slice(1), /^-(n|c|o|e|i)$/);
  }
  if (!words.length) return;

  const name = baseName(words[0]);
  const args = words.slice(1);

  if (DANGEROUS_COMMANDS[name]) return raise('dangerous', DANGEROUS_COMMANDS[name]);
  if (/^mkfs(\..+)?$/.test(name)) return raise('dangerous', 'formats a filesystem');

  if (SHELLS.has(name) || name === 'eval' || name === 'source' || name === '.') {
    const c = args.indexOf('-c');
    if (name === 'eval') return classifyNested(args.join(' '), 'eval runs its arguments as a command', 'moderate');
    if (c !== -1 && args[c + 1] !== undefined)
      return classifyNested(args[c + 1], `${name} -c runs a nested command`, 'moderate');
    const script = args.find((a) => !a.startsWith('-'));
    if ((!script || args.includes('-s')) && seg.pipedInto) {
      return raise(
        'dangerous',
        `pipes ${seg.pipedFrom ? `the output of ${baseName(seg.pipedFrom)} ` : ''}into ${name}, executing it as a script`,
      );
    }
    return raise('moderate', script ? `runs the script ${script}` : `starts ${name}`);
  }
  if (INTERPRETERS.has(name) || /^python\d/.test(name)) {
    if (args.length === 1 && /^(--version|-v|-V)$/.test(args[0])) return;
    if (
      !args.some((a) => !a.startsWith('-')) &&
      !args.some((a) => /^(-c|-e|--eval|-p|--print)$/.test(a)) &&
      seg.pipedInto
    ) {
      return raise(
        'dangerous',
        `pipes ${seg.pipedFrom ? `the output of ${baseName(seg.pipedFrom)} ` : ''}into ${name}, executing it as a program`,
      );
    }
    return raise('moderate', `runs ${name} code`);
  }

  switch (name) {
    case 'rm': {
      const recursive = args.some((a) => a === '--recursive' || /^-[a-zA-Z]*[rR]/.test(a));
      if (recursive) return raise('dangerous', 'rm -r deletes directory trees');
      if (args.some((a) => /^(\/|~|\*|\.|\/\*|~\/\*?)$/.test(a)))
        return raise('dangerous', 'rm on a root, home or wildcard path');
      return raise('moderate', 'rm deletes files');
    }
    case 'chmod':
    case 'chown':
    case 'chgrp':
      if (args.some((a) => a === '--recursive' || /^-[a-zA-Z]*R/.test(a)))
        return raise('dangerous', `${name} -R changes a whole tree`);
      return raise('moderate', `${name} changes file permissions or ownership`);
    case 'find': {
      if (args.includes('-delete')) return raise('dangerous', 'find -delete deletes every match');
      const ex = args.findIndex((a) => /^-(exec|execdir|ok|okdir)$/.test(a));
      if (ex !== -1) {
        let end = args.findIndex((a, k) => k > ex && (a === ';' || a === '+' || a === '\\;'));
        if (end === -1) end = args.length;
        return classifyNested(
          args
            .slice(ex + 1, end)
            .map(quoteWord)
            .join(' '),
          `find ${args[ex]} runs a command per match`,
          'moderate',
        );
      }
      if (args.some((a) => /^-(fprint|fprintf|fls)/.test(a))) return raise('moderate', 'find writes to a file');
      return;
    }
    case 'sed':
      if (args.some((a) => /^(-i|--in-place)/.test(a) || /^-[a-zA-Z]*i/.test(a)))
        return raise('moderate', 'sed -i edits files in place');
      return;
    case 'awk':
    case 'gawk':
      if (args.some((a) => /system\s*\(|\|\s*getline|print[^;]*>/.test(a)))
        return raise('moderate', 'awk program runs commands or writes files');
      return;
    case 'kill':
    case 'pkill':
    case 'killall':
      if (args.includes('-1') && name === 'kill') return raise('dangerous', 'kill -1 signals every process you own');
      return raise('moderate', `${name} stops processes`);
    case 'git':
      return classifyGit(args, raise);
    case 'tee':
      if (args.filter((a) => !a.startsWith('-')).every((a) => a === '/dev/null')) return;
      return raise('moderate', 'tee writes to files');
    case 'curl':
    case 'wget':
      return raise('moderate', `${name} accesses the network`);
    case 'crontab':
      if (args.includes('-r')) return raise('dangerous', 'crontab -r deletes the crontab');
      return raise('moderate', 'crontab changes scheduled jobs');
  }

  if (PKG_MANAGERS.has(name)) {
    const sub = args.find((a) => !a.startsWith('-') || a === '--version' || a === '-v');
    if (sub === undefined) return name === 'yarn' ? raise('moderate', 'yarn installs dependencies') : undefined;
    if (PKG_DANGEROUS.has(sub)) return raise('dangerous', `${name} ${sub} changes a public registry`);
    if (sub === 'config' && args.some((a) => a === 'set' || a === 'delete'))
      return raise('moderate', `${name} config changes settings`);
    if (sub === 'audit' && args.includes('fix')) return raise('moderate', `${name} audit fix changes dependencies`);
    if (PKG_SAFE.has(sub) || sub === 'audit') return;
    return raise('moderate', `${name} ${sub} runs scripts or changes dependencies`);
  }

  if (SAFE_COMMANDS.has(name)) return;
  raise('moderate', `${name} is not a known read-only command`);
}

function classifyGit(args: string[], raise: (l: DangerLevel, why: string) => void): void {
  // Skip global options (`-C dir`, `-c k=v`, `--no-pager`, `--git-dir=...`).
  let k = 0;
  while (k < args.length && args[k].startsWith('-')) k += /^-(C|c)$/.test(args[k]) ? 2 : 1;
  const sub = args[k];
  const rest = args.slice(k + 1);
  const has = (re: RegExp) => rest.some((a) => re.test(a));
  if (sub === undefined) return;
  switch (sub) {
    case 'push':
      if (
        has(/^(--force|--force-with-lease.*|--force-if-includes|-f|--mirror|--prune)$/) ||
        has(/^-[a-zA-Z]*f/) ||
        has(/^\+/)
      ) {
        return raise('dangerous', 'git push --force rewrites remote history');
      }
      if (has(/^(--delete|-d)$/) || has(/^:/)) return raise('dangerous', 'git push --delete deletes remote refs');
      return raise('moderate', 'git push publishes commits');
    case 'reset':
      if (has(/^--(hard|merge|keep)$/)) return raise('dangerous', 'git reset --hard discards uncommitted work');
      return raise('moderate', 'git reset moves HEAD');
    case 'clean':
      if (has(/^(--force|-[a-zA-Z]*f)/)) return raise('dangerous', 'git clean -f deletes untracked files');
      return raise('moderate', 'git clean');
    case 'branch':
      if (has(/^(-D|--delete)$/) && has(/^(-D|--force|-f)$/))
        return raise('dangerous', 'git branch -D deletes unmerged branches');
      if (has(/^(-D)$/)) return raise('dangerous', 'git branch -D deletes unmerged branches');
      if (has(/^(-d|--delete|-m|-M|--move|-c|-C|--copy|-f|--force|-u|--set-upstream-to.*|--unset-upstream)$/)) {
        return raise('moderate', 'git branch changes branches');
      }
      if (rest.some((a) => !a.startsWith('-'))) return raise('moderate', 'git branch creates a branch');
      return;
    case 'stash':
      if (rest[0] === 'drop' || rest[0] === 'clear')
        return raise('dangerous', `git stash ${rest[0]} discards stashed work`);
      if (rest[0] === 'list' || rest[0] === 'show') return;
      return raise('moderate', 'git stash changes the working tree');
    case 'checkout':
    case 'restore':
      if (has(/^(-f|--force)$/) || (sub === 'checkout' && rest.includes('--') && rest.includes('.'))) {
        return raise('dangerous', `git ${sub} discards local changes`);
      }
      return raise('moderate', `git ${sub} changes the working tree`);
    case 'filter-branch':
    case 'filter-repo':
      return raise('dangerous', `git ${sub} rewrites history`);
    case 'gc':
    case 'reflog':
      if (has(/^(--prune=now|expire|delete)$/))
        return raise('dangerous', `git ${sub} permanently drops unreachable commits`);
      return sub === 'reflog' ? undefined : raise('moderate', 'git gc rewrites the object store');
    case 'remote':
      if (rest.length === 0 || rest.every((a) => a === '-v' || a === '--verbose' || a === 'show' || a === 'get-url'))
        return;
      return raise('moderate', 'git remote changes remotes');
    case 'tag':
      if (rest.length === 0 || has(/^(-l|--list|-n\d*|--contains|--points-at)$/)) return;
      if (has(/^(-d|--delete)$/)) return raise('moderate', 'git tag -d deletes a tag');
      return raise('moderate', 'git tag creates a tag');
    case 'config':
      if (has(/^(--get|--get-all|--get-regexp|--list|-l)$/)) return;
      return raise('moderate', 'git config changes settings');
  }
  if (GIT_SAFE.has(sub)) return;
  raise('moderate', `git ${sub} changes the repository`);
}

/** Drops leading options (and the values of options in `takesValue`) up to the first operand. */
function skipOptions(words: string[], takesValue: RegExp): string[] {
  let k = 0;
  while (k < words.length && words[k].startsWith('-') && words[k] !== '-') {
    if (words[k] === '--') {
      k++;
      break;
    }
    k += takesValue.test(words[k]) ? 2 : 1;
  }
  return words.slice(k);
}

function baseName(word: string): string {
  const slash = word.lastIndexOf('/');
  return slash === -1 ? word : word.slice(slash + 1);
}

function quoteWord(w: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(w) ? w : `'${w.replace(/'/g, `'\\''`)}'`;
}

function abbreviate(text: string): string {
  const t = text.trim().replace(/\s+/g, ' ');
  return t.length > 60 ? `${t.slice(0, 57)}...` : t;
}
