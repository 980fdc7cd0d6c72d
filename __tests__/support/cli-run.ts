/** Runs the built `toolbelt` CLI (dist/cli.js) as a user would, with exactly the environment given. */
import { spawn } from 'node:child_process';
import os from 'node:os';
import { CLI } from './dist.js';

/** What one run of the CLI printed and how it exited. */
export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `toolbelt args` in `cwd` with `env` plus PATH, HOME=cwd and the suite's TMPDIR: nothing leaks in from the host. */
export function runCli(cwd: string, args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd,
      env: { PATH: process.env.PATH ?? '', HOME: cwd, TMPDIR: os.tmpdir(), ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d));
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
