/**
 * Process groups: how bash (and its background jobs) end everything a command started. A command
 * runs as the leader of its own group, so one signal to the group reaches every descendant.
 * Must not decide when to kill: bash.ts (timeout, abort) and bash-jobs.ts (bash_kill, exit) do.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** After SIGTERM to the process group, how long before SIGKILL, in ms. */
export const KILL_GRACE_MS = 200;

/**
 * SIGTERM to the whole process group, then SIGKILL after KILL_GRACE_MS unless the group is
 * already gone. Resolves once the SIGKILL (if needed) has been sent and no live member remains.
 */
export async function killProcessGroup(pgid: number): Promise<void> {
  signalGroup(pgid, 'SIGTERM');
  const deadline = Date.now() + KILL_GRACE_MS;
  while (Date.now() < deadline) {
    await delay(20);
    if (!groupAlive(pgid)) return;
  }
  signalGroup(pgid, 'SIGKILL');
  // SIGKILL is delivered asynchronously; wait (briefly) until the kernel has ended them.
  const until = Date.now() + 1_000;
  while (groupAlive(pgid) && Date.now() < until) await delay(10);
}

/** Sends `signal` to every process of the group; a group already gone is not an error. */
export function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: the group is already gone.
  }
}

/** Whether any non-zombie process is still in the group (via /proc on Linux, else kill(0)). */
export function groupAlive(pgid: number): boolean {
  if (process.platform === 'linux') {
    try {
      for (const entry of readdirSync('/proc')) {
        if (!/^\d+$/.test(entry)) continue;
        let stat: string;
        try {
          stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        } catch {
          continue;
        }
        // Fields after the parenthesised command name: state ppid pgrp ...
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        if (Number(fields[2]) === pgid && fields[0] !== 'Z' && fields[0] !== 'X') return true;
      }
      return false;
    } catch {
      // fall through to kill(0)
    }
  }
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Resolves after `ms` milliseconds. */
export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
