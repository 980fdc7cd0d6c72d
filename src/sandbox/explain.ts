/**
 * What the model reads when the sandbox stopped a command: the raw `Read-only file system`,
 * `Permission denied`, `Network is unreachable` or `Could not resolve host` lines are followed by a
 * sentence naming what was refused and why, and what to do instead.
 * Must not run anything: text in, sentences out.
 */
import path from 'node:path';
import { SANDBOX_TMP_BYTES } from './bwrap.js';

/** What the explanation needs to know about the sandbox the command ran in. */
export interface ExplainContext {
  /** Where the command ran: relative paths in messages are resolved against it. */
  cwd: string;
  writable: string[];
  hidden: { files: string[]; dirs: string[] };
  allowedDomains: string[];
  /** Paths the host runs without asking, kept read-only (src/sandbox/protect.ts). */
  protected?: string[];
}

/** Sentences explained in one result at most (one per refused path or kind). */
export const MAX_SANDBOX_EXPLANATIONS = 5;

const QUOTED_PATH = `['"‘’\`]?([^\\s'"‘’\`:]+)['"‘’\`]?`;
const READ_ONLY = new RegExp(
  `${QUOTED_PATH}: Read-only file system|Read-only file system:? ${QUOTED_PATH}|EROFS: read-only file system, \\w+ ${QUOTED_PATH}`,
  'g',
);
const DENIED = new RegExp(
  `${QUOTED_PATH}: Permission denied|Permission denied:? ${QUOTED_PATH}|EACCES: permission denied, \\w+ ${QUOTED_PATH}`,
  'g',
);
const BUSY = new RegExp(
  `${QUOTED_PATH}: Device or resource busy|Device or resource busy:? ${QUOTED_PATH}|EBUSY: resource busy or locked, \\w+ ${QUOTED_PATH}|(?:cannot|unable to|could not) (?:move|rename|remove|unlink) ${QUOTED_PATH}[^\\n]*(?:Device or resource busy|busy)`,
  'g',
);
const IS_DIRECTORY = new RegExp(
  `${QUOTED_PATH}: Is a directory|EISDIR: illegal operation on a directory, \\w+ ${QUOTED_PATH}`,
  'g',
);
/** git's own words when it cannot write its config or a hook (it names the file, not the errno, in some versions). */
const GIT_LOCK = new RegExp(
  `could not (?:lock|write|commit) config file ${QUOTED_PATH}|unable to (?:create|write|rename) ${QUOTED_PATH}`,
  'g',
);
const NETWORK =
  /Network is unreachable|Could not resolve host|Temporary failure in name resolution|Name or service not known|getaddrinfo (?:EAI_AGAIN|ENOTFOUND)|ENETUNREACH|Connection refused|ECONNREFUSED|Couldn't connect to server|Failed to connect to|CONNECT tunnel failed, response 403|Received HTTP code 403 from proxy/;
const NOT_PERMITTED = /Operation not permitted|EPERM|permission denied\.?\s*\n?\s*dmesg/;
const NO_SPACE = /No space left on device|ENOSPC|Disk quota exceeded/i;

/** Longest output line searched for a refused path; longer lines are not paths in an error message. */
const MAX_REFUSAL_LINE = 4096;
const REFUSAL_WORDS =
  /Read-only file system|Permission denied|Device or resource busy|Is a directory|EROFS|EACCES|EBUSY|EISDIR|could not|unable to|cannot/i;

/** The lines that may name a refused path (short, holding one of the words): the path patterns run on these only. */
function refusalLines(output: string): string {
  return output
    .split('\n')
    .filter((l) => l.length <= MAX_REFUSAL_LINE && REFUSAL_WORDS.test(l))
    .join('\n');
}

/** A path token as an absolute path (relative ones against `cwd`); undefined for what is not a path. */
function absolute(token: string | undefined, cwd: string): string | undefined {
  if (!token || !/^[\w./~-]/.test(token) || /^(?:line|bash|sh|cat|touch)$/.test(token)) return undefined;
  return path.resolve(cwd, token);
}

function under(p: string, dirs: string[]): boolean {
  return dirs.some((d) => p === d || p.startsWith(`${d}/`));
}

/** Sentences explaining sandbox refusals found in `output` (empty when there are none). */
export function explainRefusals(output: string, cx: ExplainContext, failed = true): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  const lines = refusalLines(output);
  const add = (key: string, sentence: string) => {
    if (seen.has(key) || out.length >= MAX_SANDBOX_EXPLANATIONS) return;
    seen.add(key);
    out.push(sentence);
  };
  const writable = `${cx.writable.join(', ')} and a private /tmp (emptied when the command ends)`;
  const guarded = (cx.protected ?? []).filter((g) => !under(g, cx.hidden.dirs));
  /** The protected path `p` is (or lies under, or holds), if any. */
  const protectedOf = (p: string | undefined) =>
    p === undefined
      ? undefined
      : (guarded.find((g) => p === g || p.startsWith(`${g}/`) || p.startsWith(`${g}.`)) ?? undefined);
  const protectedSentence = (g: string) =>
    `${g} is protected by the sandbox: the host runs what it holds without asking (git config and hooks, direnv, editor tasks, shell start-up files), so commands may not create or change it. Leave it as it is; if the change is intended, ask the user to make it, or to add ${g} to sandbox.filesystem.allowWrite.`;
  for (const re of [READ_ONLY, DENIED, BUSY, IS_DIRECTORY, GIT_LOCK])
    for (const m of lines.matchAll(re)) {
      const g = protectedOf(absolute(m[1] ?? m[2] ?? m[3] ?? m[4], cx.cwd));
      if (g) add(`protected:${g}`, protectedSentence(g));
    }
  for (const m of lines.matchAll(BUSY)) {
    const p = absolute(m[1] ?? m[2] ?? m[3] ?? m[4], cx.cwd);
    if (!p || protectedOf(p)) continue;
    const holds = [...cx.hidden.files, ...cx.hidden.dirs, ...guarded].find((h) => h === p || h.startsWith(`${p}/`));
    if (holds)
      add(
        `busy:${p}`,
        `${p} cannot be moved or removed inside the sandbox: it is or holds ${holds}, which the sandbox hides or protects, and that stays where it is. Leave it in place, or ask the user to move it.`,
      );
  }
  if (!failed) return out;
  for (const m of lines.matchAll(READ_ONLY)) {
    const p = absolute(m[1] ?? m[2] ?? m[3], cx.cwd);
    if (protectedOf(p)) continue;
    if (!p) {
      add('ro', `A write was refused: the sandbox allows writes only to ${writable}. Write inside the workspace.`);
      continue;
    }
    add(
      `ro:${p}`,
      `${p} is outside the workspace: the sandbox allows writes only to ${writable}. Write inside the workspace instead, or ask the user to add the directory to sandbox.filesystem.allowWrite.`,
    );
  }
  for (const m of lines.matchAll(DENIED)) {
    const p = absolute(m[1] ?? m[2] ?? m[3], cx.cwd);
    if (protectedOf(p)) continue;
    const hidden = p && (cx.hidden.files.includes(p) || under(p, cx.hidden.dirs));
    if (hidden)
      add(
        `hidden:${p}`,
        `${p} is hidden by the sandbox: it usually holds secrets (the sandbox's denyRead list). Do not read it; ask the user for what you need from it.`,
      );
    else if (p && !under(p, cx.writable) && !under(p, ['/tmp']))
      add(
        `denied:${p}`,
        `${p} could not be used: the sandbox makes everything outside ${writable} read-only and hides secret files.`,
      );
  }
  const net = NETWORK.exec(output);
  if (net)
    add(
      'net',
      cx.allowedDomains.length
        ? `The network is closed by the sandbox except these hosts, through its HTTP(S) proxy: ${cx.allowedDomains.join(', ')} ("${net[0]}"). Reach only those, or ask the user to add the host to sandbox.network.allowedDomains.`
        : `The sandbox has no network ("${net[0]}"): commands cannot reach any host or resolve names. Work offline, or ask the user to allow the host in sandbox.network.allowedDomains.`,
    );
  const full = NO_SPACE.exec(output);
  if (full)
    add(
      'nospace',
      `"${full[0]}": inside the sandbox /tmp is a private memory-backed tmpfs of ${SANDBOX_TMP_BYTES / 1024 / 1024} MiB (SANDBOX_TMP_BYTES), emptied when the command ends, and the command wrote past it (or the workspace's own disk is full). Write large files inside the workspace instead of /tmp.`,
    );
  const perm = NOT_PERMITTED.exec(output);
  if (perm)
    add(
      'eperm',
      `"${perm[0].split('\n')[0]}": the sandbox runs commands without privileges in their own namespaces (no mount, no ptrace or signals to processes outside the command).`,
    );
  return out;
}

/** Paths named in the /tmp line at most. */
const TMP_WRITES_NAMED = 3;

/**
 * The one line for files a command left in its private /tmp where the host has that path or its
 * directory (so the user may expect it there); undefined when there are none.
 */
export function tmpWritesNote(paths: string[]): string | undefined {
  if (!paths.length) return undefined;
  const named = paths.slice(0, TMP_WRITES_NAMED).join(', ');
  const more = paths.length > TMP_WRITES_NAMED ? ` and ${paths.length - TMP_WRITES_NAMED} more` : '';
  return `[sandbox: ${named}${more} went to the command's private /tmp, which is emptied when the command ends: the host's /tmp never sees ${paths.length === 1 ? 'it' : 'them'}. Write inside the workspace, or ask the user to add the directory to sandbox.filesystem.allowWrite.]`;
}

/** The note appended to a failed command's output, or undefined when nothing was refused. */
export function sandboxNote(output: string, cx: ExplainContext, failed = true): string | undefined {
  const sentences = explainRefusals(output, cx, failed);
  return sentences.length ? sentences.map((s) => `[sandbox: ${s}]`).join('\n') : undefined;
}
