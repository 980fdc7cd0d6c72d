/**
 * The sandbox as a deepagents sandbox backend: `createSandboxExecutor(...)` returns an object with
 * the `SandboxBackendProtocolV2` execution half (`id`, `execute(command) -> { output, exitCode,
 * truncated }`), so a deepagents agent gets a local OS sandbox with no cloud account. Each command
 * runs in bubblewrap like bash's; `toDeepAgentsBackend` (src/backend/) adds the file half.
 * Must not implement files (ls/read/write/edit are the backend's) nor contain processes itself (runtime.ts).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { StringDecoder } from 'node:string_decoder';
import { findExecutable } from '../platform/files.js';
import { SandboxRuntime } from './runtime.js';
import type { SandboxOptions, SandboxStatus } from './types.js';

/** Output one `execute` keeps, in characters; past it the rest is dropped and `truncated` is set. */
export const SANDBOX_EXECUTOR_MAX_OUTPUT_CHARS = 100_000;
/** Default time limit of one `execute`, in ms; the whole contained tree is killed past it. */
export const SANDBOX_EXECUTOR_TIMEOUT_MS = 120_000;

/** Options of `createSandboxExecutor`. */
export interface SandboxExecutorOptions {
  /** Where commands run and may write. */
  workspaceRoot: string;
  /** More roots commands may write. */
  additionalRoots?: string[];
  /** The sandbox; the mode defaults to `required` here (a sandbox backend that does not contain would mislead). */
  sandbox?: SandboxOptions;
  /** Time limit of one command, in ms (default SANDBOX_EXECUTOR_TIMEOUT_MS). */
  timeoutMs?: number;
  /** The backend's id (default `toolbelt-sandbox-<random>`). */
  id?: string;
}

/** What `execute` resolves to: deepagents' `ExecuteResponse`. */
export interface SandboxExecuteResponse {
  output: string;
  exitCode: number | null;
  truncated: boolean;
}

/** The execution half of a deepagents `SandboxBackendProtocolV2`, contained by bubblewrap. */
export interface SandboxExecutor {
  readonly id: string;
  /** Runs `command` (bash -c) in the workspace, contained; never rejects. */
  execute(command: string): Promise<SandboxExecuteResponse>;
  /** Whether commands run contained, and why. */
  status(): Promise<SandboxStatus>;
  /** Stops the proxy and removes the sandbox's private files. */
  close(): Promise<void>;
}

/** A local OS sandbox for deepagents: `execute` runs each command in bubblewrap. */
export function createSandboxExecutor(options: SandboxExecutorOptions): SandboxExecutor {
  const sandbox: SandboxOptions = { ...options.sandbox, mode: options.sandbox?.mode ?? 'required' };
  const runtime = new SandboxRuntime(sandbox);
  const roots = [options.workspaceRoot, ...(options.additionalRoots ?? [])];
  const timeoutMs = options.timeoutMs ?? SANDBOX_EXECUTOR_TIMEOUT_MS;
  let shell: Promise<string> | undefined;
  return {
    id: options.id ?? `toolbelt-sandbox-${randomBytes(4).toString('hex')}`,
    status: () => runtime.status(sandbox),
    close: () => runtime.close(),
    async execute(command) {
      shell ??= findExecutable('bash', ['/bin', '/usr/bin']).then((b) => b ?? '/bin/sh');
      const env = { ...process.env, PAGER: 'cat', GIT_PAGER: 'cat', GIT_TERMINAL_PROMPT: '0', NO_COLOR: '1' };
      let launch;
      try {
        launch = await runtime.contain(
          { shell: await shell, command, cwd: options.workspaceRoot, roots, env },
          sandbox,
        );
      } catch (err) {
        return { output: (err as Error).message, exitCode: 1, truncated: false };
      }
      const { file, args, env: childEnv } = launch ?? { file: await shell, args: ['-c', command], env };
      const result = await runBounded(file, args, options.workspaceRoot, childEnv, timeoutMs);
      const note = launch && result.exitCode !== 0 ? launch.explain(result.output) : undefined;
      return note ? { ...result, output: `${result.output.replace(/\n*$/, '\n')}${note}` } : result;
    },
  };
}

/** Runs one process in its own group, keeping at most SANDBOX_EXECUTOR_MAX_OUTPUT_CHARS of stdout+stderr. */
function runBounded(
  file: string,
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
): Promise<SandboxExecuteResponse> {
  return new Promise((resolve) => {
    const child = spawn(file, args, { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    let truncated = false;
    let timedOut = false;
    for (const stream of [child.stdout, child.stderr]) {
      const decoder = new StringDecoder('utf8');
      stream.on('data', (chunk: Buffer) => {
        if (truncated) return;
        output += decoder.write(chunk);
        if (output.length > SANDBOX_EXECUTOR_MAX_OUTPUT_CHARS) {
          output = output.slice(0, SANDBOX_EXECUTOR_MAX_OUTPUT_CHARS);
          truncated = true;
        }
      });
    }
    const timer = setTimeout(() => {
      timedOut = true;
      // Loaded when needed: the root entry loads no built-in tool's module.
      if (child.pid !== undefined)
        void import('../tools/bash/process-group.js').then(({ killProcessGroup }) => killProcessGroup(child.pid!));
    }, timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      resolve({ output: `Could not start ${file}: ${err.message}`, exitCode: 1, truncated: false });
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (timedOut) output += `\n[Command killed: timed out after ${timeoutMs} ms; its whole process tree was ended.]`;
      else if (signal) output += `\n[Command ended by signal ${signal}]`;
      resolve({ output, exitCode: code, truncated });
    });
  });
}
