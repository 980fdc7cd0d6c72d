/**
 * Whether the engine works here: finds bwrap (and socat) on PATH and runs a trivial command in a
 * sandbox like the real ones, once per registry, giving up on a hanging engine.
 * Must not decide the mode's consequences (runtime.ts says what a problem means for a mode).
 */
import { spawn } from 'node:child_process';
import { findExecutable } from '../platform/files.js';
import { bwrapArguments } from './bwrap.js';

/** How long the probe (a trivial command in bwrap) may take before the engine counts as broken, in ms. */
export const SANDBOX_PROBE_TIMEOUT_MS = 5_000;
/** The result of probing the engine once. */
export interface Probe {
  bwrap?: string;
  socat?: string;
  /** Why bwrap cannot be used, when it cannot. */
  problem?: string;
}

/** Finds bwrap (and socat) on PATH and runs a trivial command in a sandbox like the real ones. */
export async function probeEngine(): Promise<Probe> {
  if (process.platform !== 'linux')
    return { problem: `the sandbox runs on Linux only (this is ${process.platform}; macOS is not supported yet)` };
  const bwrap = await findExecutable('bwrap');
  const socat = await findExecutable('socat');
  if (!bwrap) return { socat, problem: 'bubblewrap (`bwrap`) was not found on PATH' };
  const problem = await runProbe(bwrap);
  return problem ? { socat, problem } : { bwrap, socat };
}

/** Runs `bwrap ... -- sh -c 'exit 0'`; resolves to the problem, or undefined when it worked. */
function runProbe(bwrap: string): Promise<string | undefined> {
  const args = [
    ...bwrapArguments({
      writable: [],
      hidden: { files: [], dirs: [], truncated: false },
      denyFile: '/dev/null',
      home: '/',
      cwd: '/',
      privateTmp: true,
    }),
    '--',
    '/bin/sh',
    '-c',
    'exit 0',
  ];
  return new Promise((resolve) => {
    let stderr = '';
    let settled = false;
    const done = (problem: string | undefined) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(problem);
    };
    const child = spawn(bwrap, args, { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
    child.stderr.on('data', (c: Buffer) => {
      if (stderr.length < 1000) stderr += c.toString('utf8');
    });
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
      done(`${bwrap} did not finish a trivial command within ${SANDBOX_PROBE_TIMEOUT_MS} ms (the engine hangs)`);
    }, SANDBOX_PROBE_TIMEOUT_MS);
    timer.unref();
    child.once('error', (err) => done(`${bwrap} could not be started (${err.message})`));
    child.once('close', (code, signal) => {
      if (code === 0) return done(undefined);
      const why = stderr.trim().split('\n')[0] || (signal ? `signal ${signal}` : `exit code ${code}`);
      done(`${bwrap} failed a trivial command (${why})`);
    });
  });
}
