/**
 * bubblewrap's command line for one contained process: the whole filesystem read-only, the
 * writable roots bound back writable, a private /tmp and /run, secrets hidden behind an unreadable
 * file or directory, no network (or only the proxy socket), every namespace new, no capabilities,
 * and the tree dying with its parent.
 * Must not run anything nor read the disk: runtime.ts gathers the inputs, this file only arranges them.
 */
import path from 'node:path';
import type { HiddenPaths } from './secrets.js';

/** Size of the private /tmp a command gets (memory-backed, gone when the command ends), in bytes. */
export const SANDBOX_TMP_BYTES = 512 * 1024 * 1024;
/** Size of the private /run (it holds the proxy socket only), in bytes. */
export const SANDBOX_RUN_BYTES = 1024 * 1024;
/** The loopback port inside the sandbox where socat bridges to the filtering proxy. */
export const SANDBOX_PROXY_PORT = 3128;
/** Where the proxy's unix socket appears inside the sandbox. */
export const SANDBOX_PROXY_SOCKET = '/run/toolbelt-proxy.sock';
/** How long the bridge waits for socat to listen before running the command anyway, in 10 ms steps. */
export const SANDBOX_BRIDGE_WAIT_STEPS = 300;

/** Where the command's report of what it left in its private /tmp appears inside (a file bound from the host). */
export const SANDBOX_TMP_REPORT = '/run/toolbelt-tmp-writes';
/** Paths of that report the host reads at most. */
export const SANDBOX_TMP_REPORT_LINES = 200;

/** Directories replaced by a private tmpfs (their sockets, such as an ssh-agent's, are out of reach too). */
const PRIVATE_DIRS = ['/tmp', '/run'];

/** Everything one command line needs. */
export interface BwrapProfile {
  /** Paths bound writable (real paths): the workspace roots and allowWrite; none for read-only tools. */
  writable: string[];
  hidden: HiddenPaths;
  /** An empty file with mode 0000, bound over each hidden file. */
  denyFile: string;
  /** The home directory: kept visible read-only even when it lies under a private directory. */
  home: string;
  cwd: string;
  /** A private /tmp and /run (commands); a read-only tool sees the host's, read-only. */
  privateTmp: boolean;
  /** The host-side proxy socket, when network.allowedDomains is not empty. */
  proxySocket?: string;
  /** Directories bound over themselves (writable as before) so nothing under them can be moved away from its mask. */
  pinned?: string[];
  /** Paths the host runs without asking: existing ones bound read-only, missing ones blocked by `emptyDir`. */
  protect?: { existing: string[]; missing: string[] };
  /** An empty directory (mode 0555) mounted read-only where a missing protected path would be created. */
  emptyDir?: string;
  /** allowWrite entries inside a protected path: bound writable again after the protection. */
  reopen?: string[];
  /** A host file bound at SANDBOX_TMP_REPORT, where the command's private /tmp is listed when it ends. */
  tmpReport?: string;
}

/** Whether `p` is `dir` or lies under it. */
export function within(p: string, dir: string): boolean {
  return p === dir || p.startsWith(dir.endsWith('/') ? dir : `${dir}/`);
}

/** bwrap's options (everything before `--`). */
export function bwrapArguments(p: BwrapProfile): string[] {
  const args = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc'];
  const rebound: string[] = [];
  if (p.privateTmp) {
    args.push('--size', String(SANDBOX_TMP_BYTES), '--tmpfs', '/tmp');
    args.push('--size', String(SANDBOX_RUN_BYTES), '--tmpfs', '/run');
    if (PRIVATE_DIRS.some((d) => within(p.home, d)) && !p.writable.some((w) => within(p.home, w))) {
      args.push('--ro-bind-try', p.home, p.home);
      rebound.push(p.home);
    }
  }
  for (const w of p.writable) {
    args.push('--bind', w, w);
    rebound.push(w);
  }
  // A hidden path under a private directory is already out of sight unless a bind brought it back.
  const visible = (h: string) =>
    !p.privateTmp || !PRIVATE_DIRS.some((d) => within(h, d)) || rebound.some((r) => within(h, r));
  // Mount points cannot be renamed or removed: the directories holding a mask or a protected path
  // stay where they are, so the file cannot be carried to a path the next command does not hide.
  for (const d of p.pinned ?? []) if (visible(d)) args.push('--bind', d, d);
  for (const f of p.protect?.existing ?? []) if (visible(f)) args.push('--ro-bind', f, f);
  if (p.emptyDir) for (const m of p.protect?.missing ?? []) if (visible(m)) args.push('--ro-bind', p.emptyDir, m);
  for (const w of p.reopen ?? []) args.push('--bind', w, w);
  for (const f of p.hidden.files) if (visible(f)) args.push('--ro-bind', p.denyFile, f);
  for (const d of p.hidden.dirs) if (visible(d)) args.push('--perms', '0000', '--tmpfs', d);
  if (p.proxySocket) args.push('--bind', p.proxySocket, SANDBOX_PROXY_SOCKET);
  if (p.tmpReport) args.push('--bind', p.tmpReport, SANDBOX_TMP_REPORT);
  args.push('--unshare-all', '--die-with-parent', '--cap-drop', 'ALL', '--chdir', p.cwd);
  return args;
}

/**
 * The EXIT trap that lists what the command left in its private /tmp (which starts empty, so each
 * file there was written by the command) into SANDBOX_TMP_REPORT, for the host to say which of them
 * it never sees. `find` runs only when /tmp holds anything; the trap keeps the shell's exit status.
 */
const TMP_REPORT_TRAP =
  'for f in /tmp/* /tmp/.[!.]* /tmp/..?*; do if [ -e "$f" ]; then ' +
  `find /tmp -xdev -mindepth 1 ! -type d > ${SANDBOX_TMP_REPORT} 2>/dev/null; break; fi; done`;

/**
 * What runs inside: the shell with the command (with `tmpReport`, preceded on its first line by the
 * trap that reports the private /tmp), itself preceded (when the proxy is on) by socat bridging
 * 127.0.0.1:SANDBOX_PROXY_PORT to the proxy socket, waited for until it listens.
 */
export function innerCommand(
  shell: string,
  command: string,
  bridge: { socat: string } | undefined,
  tmpReport = false,
): string[] {
  const text = tmpReport ? `trap '${TMP_REPORT_TRAP}' EXIT; ${command}` : command;
  if (!bridge) return [shell, '-c', text];
  const hexPort = SANDBOX_PROXY_PORT.toString(16).toUpperCase().padStart(4, '0');
  const script =
    `"$0" TCP-LISTEN:${SANDBOX_PROXY_PORT},bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:${SANDBOX_PROXY_SOCKET} >/dev/null 2>&1 & ` +
    `i=0; while [ $i -lt ${SANDBOX_BRIDGE_WAIT_STEPS} ] && ! grep -q ':${hexPort} 00000000:0000 0A' /proc/net/tcp; do sleep 0.01; i=$((i+1)); done; ` +
    'exec "$@"';
  return ['/bin/sh', '-c', script, bridge.socat, shell, '-c', text];
}

/** The proxy URL commands inside use. */
export function proxyUrl(): string {
  return `http://127.0.0.1:${SANDBOX_PROXY_PORT}`;
}

/** Roots as real, absolute, de-duplicated paths (a root inside another is covered by it). */
export function normaliseRoots(roots: string[]): string[] {
  const abs = [...new Set(roots.map((r) => path.resolve(r)))].sort();
  return abs.filter((r, i) => !abs.slice(0, i).some((o) => within(r, o)));
}
