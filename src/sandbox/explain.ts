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
const NETWORK =
  /Network is unreachable|Could not resolve host|Temporary failure in name resolution|Name or service not known|getaddrinfo (?:EAI_AGAIN|ENOTFOUND)|ENETUNREACH|Connection refused|ECONNREFUSED|Couldn't connect to server|Failed to connect to|CONNECT tunnel failed, response 403|Received HTTP code 403 from proxy/;
const NOT_PERMITTED = /Operation not permitted|EPERM|permission denied\.?\s*\n?\s*dmesg/;
const NO_SPACE = /No space left on device|ENOSPC|Disk quota exceeded/i;

/** A path token as an absolute path (relative ones against `cwd`); undefined for what is not a path. */
function absolute(token: string | undefined, cwd: string): string | undefined {
  if (!token || !/^[\w./~-]/.test(token) || /^(?:line|bash|sh|cat|touch)$/.test(token)) return undefined;
  return path.resolve(cwd, token);
}

function under(p: string, dirs: string[]): boolean {
  return dirs.some((d) => p === d || p.startsWith(`${d}/`));
}

/** Sentences explaining sandbox refusals found in `output` (empty when there are none). */
export function explainRefusals(output: string, cx: ExplainContext): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  const add = (key: string, sentence: string) => {
    if (seen.has(key) || out.length >= MAX_SANDBOX_EXPLANATIONS) return;
    seen.add(key);
    out.push(sentence);
  };
  const writable = `${cx.writable.join(', ')} and a private /tmp (emptied when the command ends)`;
  for (const m of output.matchAll(READ_ONLY)) {
    const p = absolute(m[1] ?? m[2] ?? m[3], cx.cwd);
    if (!p) {
      add('ro', `A write was refused: the sandbox allows writes only to ${writable}. Write inside the workspace.`);
      continue;
    }
    add(
      `ro:${p}`,
      `${p} is outside the workspace: the sandbox allows writes only to ${writable}. Write inside the workspace instead, or ask the user to add the directory to sandbox.filesystem.allowWrite.`,
    );
  }
  for (const m of output.matchAll(DENIED)) {
    const p = absolute(m[1] ?? m[2] ?? m[3], cx.cwd);
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

/** The note appended to a failed command's output, or undefined when nothing was refused. */
export function sandboxNote(output: string, cx: ExplainContext): string | undefined {
  const sentences = explainRefusals(output, cx);
  return sentences.length ? sentences.map((s) => `[sandbox: ${s}]`).join('\n') : undefined;
}
