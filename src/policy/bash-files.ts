/**
 * The files a simple shell command reads or writes through its arguments, for the commands whose
 * arguments are known to be files (cat, head, grep, sed, cp, mv, rm, tee, dd, ...). Only what the
 * words say: a program that opens files on its own (a script, an interpreter, xargs fed names on
 * stdin) cannot be judged here, and docs/security.md says so.
 */
import type { ShellCommand } from '../tools/bash/shell-command.js';

/** One file argument of a command. */
export interface FileArgument {
  path: string;
  /** The word is only known at run time (a variable, a substitution, a glob). */
  dynamic: boolean;
  access: 'read' | 'write';
}

/** How a command's operands are files. */
interface Spec {
  /** Operands read: every one, every one but the last (cp), or none. */
  reads?: 'all' | 'all-but-last';
  /** Operands written: every one, or the last (the destination of cp / mv / ln). */
  writes?: 'all' | 'last';
  /** The first operand is not a file (grep's pattern, sed's script, awk's program, chmod's mode). */
  skipFirst?: boolean;
  /** Short options followed by a separate value (`head -n 5`). */
  values?: string;
  /** Short options whose value is a file read (`grep -f FILE`, `awk -f FILE`); one also makes `skipFirst` moot. */
  readValues?: string;
  /** Short options whose value is a file written (`sort -o FILE`). */
  writeValues?: string;
  /** Short options that give the pattern/script instead of the first operand (`grep -e`, `sed -e`). */
  patternValues?: string;
  /** A short option that makes every operand written too (`sed -i`). */
  inPlace?: string;
}

const READ_ALL: Spec = { reads: 'all' };
const FILE_COMMANDS: Record<string, Spec> = {
  cat: READ_ALL,
  tac: READ_ALL,
  nl: READ_ALL,
  less: READ_ALL,
  more: READ_ALL,
  head: { reads: 'all', values: 'nc' },
  tail: { reads: 'all', values: 'ncs' },
  wc: READ_ALL,
  sort: { reads: 'all', values: 'ktST', writeValues: 'o' },
  uniq: { reads: 'all-but-last', writes: 'last', values: 'fsw' },
  cut: { reads: 'all', values: 'dfbc' },
  paste: { reads: 'all', values: 'd' },
  od: { reads: 'all', values: 'AtjNw' },
  xxd: { reads: 'all', values: 'cglos' },
  hexdump: { reads: 'all', values: 'nse' },
  strings: { reads: 'all', values: 'nt' },
  base64: { reads: 'all', values: 'w' },
  base32: { reads: 'all', values: 'w' },
  md5sum: READ_ALL,
  sha1sum: READ_ALL,
  sha256sum: READ_ALL,
  sha512sum: READ_ALL,
  file: READ_ALL,
  diff: READ_ALL,
  cmp: READ_ALL,
  comm: READ_ALL,
  fold: { reads: 'all', values: 'w' },
  rev: READ_ALL,
  shuf: { reads: 'all', values: 'n', writeValues: 'o' },
  iconv: { reads: 'all', values: 'ft', writeValues: 'o' },
  source: READ_ALL,
  '.': READ_ALL,
  grep: { reads: 'all', skipFirst: true, values: 'mABC', readValues: 'f', patternValues: 'e' },
  egrep: { reads: 'all', skipFirst: true, values: 'mABC', readValues: 'f', patternValues: 'e' },
  fgrep: { reads: 'all', skipFirst: true, values: 'mABC', readValues: 'f', patternValues: 'e' },
  rg: { reads: 'all', skipFirst: true, values: 'mABCgtT', readValues: 'f', patternValues: 'e' },
  sed: { reads: 'all', skipFirst: true, readValues: 'f', patternValues: 'e', inPlace: 'i' },
  awk: { reads: 'all', skipFirst: true, values: 'Fv', readValues: 'f' },
  gawk: { reads: 'all', skipFirst: true, values: 'Fv', readValues: 'f' },
  cp: { reads: 'all-but-last', writes: 'last', values: 'S' },
  install: { reads: 'all-but-last', writes: 'last', values: 'mgoS' },
  mv: { reads: 'all-but-last', writes: 'all', values: 'S' },
  ln: { writes: 'last', values: 'S' },
  rm: { writes: 'all' },
  unlink: { writes: 'all' },
  shred: { writes: 'all', values: 'nsu' },
  truncate: { writes: 'all', values: 'sr' },
  touch: { writes: 'all', values: 'drt' },
  tee: { writes: 'all' },
  mkdir: { writes: 'all', values: 'm' },
  rmdir: { writes: 'all' },
  chmod: { writes: 'all', skipFirst: true },
  chown: { writes: 'all', skipFirst: true },
  chgrp: { writes: 'all', skipFirst: true },
};

/** The files `cmd` names as arguments, by the table above; none for a command not in it. */
export function fileArguments(cmd: ShellCommand): FileArgument[] {
  const name = (cmd.words[0] ?? '').split('/').pop() ?? '';
  if (name === 'dd') return ddFiles(cmd);
  const spec = FILE_COMMANDS[name];
  if (!spec || cmd.dynamic[0]) return [];
  const out: FileArgument[] = [];
  const operands: Array<{ path: string; dynamic: boolean }> = [];
  let patternGiven = false;
  let inPlace = false;
  let options = true;
  for (let i = 1; i < cmd.words.length; i++) {
    const word = cmd.words[i];
    const dynamic = cmd.dynamic[i] ?? false;
    if (options && word === '--') {
      options = false;
      continue;
    }
    if (!options || !word.startsWith('-') || word === '-' || dynamic) {
      operands.push({ path: word, dynamic });
      continue;
    }
    if (word.startsWith('--')) continue; // long options: `--x=value` carries its value
    // A cluster of short options: the first one that takes a value ends it (its value attached or next).
    for (let j = 1; j < word.length; j++) {
      const o = word[j];
      if (spec.inPlace?.includes(o)) inPlace = true;
      const takes = [spec.values, spec.readValues, spec.writeValues, spec.patternValues].some((s) => s?.includes(o));
      if (!takes) continue;
      const attached = word.slice(j + 1);
      const value = attached || cmd.words[i + 1];
      const valueDynamic = attached ? dynamic : (cmd.dynamic[i + 1] ?? false);
      if (!attached) i++;
      if (value !== undefined) {
        if (spec.readValues?.includes(o)) out.push({ path: value, dynamic: valueDynamic, access: 'read' });
        if (spec.writeValues?.includes(o)) out.push({ path: value, dynamic: valueDynamic, access: 'write' });
      }
      if (spec.patternValues?.includes(o) || spec.readValues?.includes(o)) patternGiven = true;
      break;
    }
  }
  const files = spec.skipFirst && !patternGiven ? operands.slice(1) : operands;
  files.forEach((f, i) => {
    // `uniq IN` reads its one operand; `uniq IN OUT` writes the last.
    const last = i === files.length - 1 && files.length > 1;
    const reads = spec.reads === 'all' || (spec.reads === 'all-but-last' && !last);
    const writes = spec.writes === 'all' || (spec.writes === 'last' && last) || inPlace;
    // A read of stdin (`-`) names no file.
    if (f.path === '-' && !f.dynamic) return;
    if (reads) out.push({ ...f, access: 'read' });
    if (writes) out.push({ ...f, access: 'write' });
  });
  return out;
}

/** dd's `if=` and `of=` operands. */
function ddFiles(cmd: ShellCommand): FileArgument[] {
  const out: FileArgument[] = [];
  cmd.words.forEach((w, i) => {
    const m = /^(if|of)=(.*)$/s.exec(w);
    if (m) out.push({ path: m[2], dynamic: cmd.dynamic[i] ?? false, access: m[1] === 'if' ? 'read' : 'write' });
  });
  return out;
}
