/**
 * Runs a command inside a real pseudo-terminal, for tests of what the CLI does at a terminal (its
 * approval prompts). No native npm module: python3's `pty` module (on the machine and in CI)
 * forks the command on a new pty and copies bytes both ways; the test reads what the terminal
 * shows and types answers when the prompt is there.
 */
import { spawn } from 'node:child_process';
import { until } from './helpers.js';

/** The relay: fork on a pty, copy our stdin to it and its output to our stdout, exit with its code. */
const RELAY = `
import os, pty, select, sys
pid, fd = pty.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
watch = [fd, 0]
while True:
    ready, _, _ = select.select(watch, [], [])
    if fd in ready:
        try:
            data = os.read(fd, 4096)
        except OSError:
            data = b''
        if not data:
            break
        os.write(1, data)
    if 0 in ready:
        data = os.read(0, 4096)
        if data:
            os.write(fd, data)
        else:
            watch = [fd]
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
`;

/** A command running on a pseudo-terminal. */
export interface PtyRun {
  /** Everything the terminal showed so far (the command's stdout and stderr, and the echo of what was typed), `\r\n` as `\n`. */
  screen(): string;
  /** Waits until the screen matches `pattern` (after `from` characters), and returns where the match ends. */
  waitFor(pattern: RegExp, from?: number): Promise<number>;
  /** Types `text` at the terminal. */
  type(text: string): void;
  /** Resolves with the exit code and the whole screen once the command ended. */
  done: Promise<{ code: number | null; screen: string }>;
}

/** Starts `command args` on a new pseudo-terminal (stdin, stdout and stderr are all the terminal). */
export function runInPty(command: string, args: string[], options: { cwd: string; env: NodeJS.ProcessEnv }): PtyRun {
  const child = spawn('python3', ['-c', RELAY, command, ...args], {
    cwd: options.cwd,
    env: options.env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let ended = false;
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d.replaceAll('\r\n', '\n')));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
  const done = new Promise<{ code: number | null; screen: string }>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      ended = true;
      resolve({ code, screen: out });
    });
  });
  return {
    screen: () => out,
    async waitFor(pattern, from = 0) {
      let end = -1;
      await until(
        () => {
          const m = pattern.exec(out.slice(from));
          if (m) end = from + m.index + m[0].length;
          return m !== null || ended;
        },
        `${pattern} on the terminal`,
        60_000,
      );
      if (end < 0) throw new Error(`the command ended without showing ${pattern}; the terminal showed:\n${out}`);
      return end;
    },
    type: (text) => child.stdin.write(text),
    done,
  };
}
