/**
 * bash: runs a shell command in the workspace. The command gets its own process group so that a
 * timeout or abort kills everything it started; output is streamed as progress and capped to a
 * head and a tail, with the full text kept in a file.
 * Must not classify commands (bash-danger.ts) or pace progress (src/authoring/progress.ts).
 * Over 400 lines: the process group, output accumulator and kill logic of one command run.
 */
import { spawn } from 'node:child_process';
import { createWriteStream, promises as fs, type WriteStream } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import type { Readable } from 'node:stream';
import { z } from 'zod';
import { Tool } from '../../authoring/tool.js';
import { Throttle } from '../../authoring/progress.js';
import { findExecutable } from '../../platform/files.js';
import { descriptionBeside } from '../../authoring/description.js';
import { Workspace, workspaceRootFor } from '../../workspace/workspace.js';
import { tenantOf } from '../../workspace/tenant.js';
import type { SavedOutputs } from '../../workspace/saved-outputs.js';
import { classifyCommand, type DangerLevel } from './danger.js';
import { delay, groupAlive, killProcessGroup } from './process-group.js';
import { jobsFor, type BackgroundJob } from './jobs.js';
import { sandboxRuntimeOf, type SandboxStatus } from '../../sandbox/index.js';
import type { ContainedCommand } from '../../sandbox/runtime.js';

export { KILL_GRACE_MS, groupAlive, killProcessGroup } from './process-group.js';

/** Default time limit for one command, in ms. */
export const DEFAULT_TIMEOUT_MS = 120_000;
/** Largest time limit a call may ask for, in ms. */
export const MAX_TIMEOUT_MS = 600_000;
/** Output the model sees, in characters; above it the head and tail are kept and the rest goes to a file. */
export const MAX_OUTPUT_CHARS = 30_000;
/** How much of the latest output each progress report carries, in characters. */
export const PROGRESS_TAIL_CHARS = 2_000;
/**
 * After the shell exits, how long the pipes may stay quiet before reading stops (a background
 * child can hold them open forever), and the hard cap on that wait, in ms.
 */
export const PIPE_QUIET_MS = 250;
export const PIPE_GRACE_MAX_MS = 1_000;

/** Environment added to every command: nothing may wait for a terminal, an editor or a pager. */
export const NON_INTERACTIVE_ENV: Readonly<Record<string, string>> = {
  GIT_EDITOR: 'true',
  GIT_SEQUENCE_EDITOR: 'true',
  GIT_TERMINAL_PROMPT: '0',
  GCM_INTERACTIVE: 'never',
  PAGER: 'cat',
  GIT_PAGER: 'cat',
  MANPAGER: 'cat',
  SYSTEMD_PAGER: '',
  EDITOR: 'true',
  VISUAL: 'true',
  DEBIAN_FRONTEND: 'noninteractive',
  // No colour codes in what the model reads.
  NO_COLOR: '1',
  FORCE_COLOR: '0',
  CLICOLOR: '0',
  TERM: 'dumb',
};

/** Why a command was killed, when it was. */
export type KillReason = 'timeout' | 'aborted';

/** The result metadata of a bash call. */
export interface BashMetadata extends Tool.Metadata {
  description: string;
  /** The directory the command ran in, relative to the workspace root when inside it. */
  workdir: string;
  /** The shell's exit code; null when it was ended by a signal. */
  exitCode: number | null;
  /** The signal that ended the shell, if any (e.g. `SIGTERM` after a timeout). */
  signal: string | null;
  /** Set when the tool killed the command. */
  killed: KillReason | null;
  /** Wall-clock duration, informational only. */
  durationMs: number;
  /** Whether the output was cut to head + tail. */
  truncated: boolean;
  /** The file holding the full output, when truncated. */
  outputPath?: string;
  /** Characters of output produced, and the most the tool ever held in memory at once. */
  outputChars: number;
  maxBufferedChars: number;
  /** A background process still held the output open when the shell exited. */
  backgroundOutputDetached: boolean;
  /** Danger classification of the command (see bash-danger.ts). */
  danger: DangerLevel;
  /** The background job's id, when the command was started with `background: true`. */
  jobId?: string;
  dangerReasons: string[];
  /** Whether the command ran in the OS sandbox (docs/sandbox.md). */
  sandboxed: boolean;
}

/** The arguments of a bash call. */
const parameters = z.object({
  command: z.string().describe('The shell command to run (bash -c). Chain steps with && ; quote paths with spaces.'),
  timeout: z
    .number()
    .optional()
    .describe(`Time limit in milliseconds (whole number, 1-${MAX_TIMEOUT_MS}). Default ${DEFAULT_TIMEOUT_MS}.`),
  workdir: z
    .string()
    .optional()
    .describe(
      'Directory to run in, absolute or relative to the workspace root (must be inside it). Default: the workspace root. Use this instead of "cd dir &&".',
    ),
  description: z
    .string()
    .describe('What the command does in 5-10 words, e.g. "Install dependencies" or "Run unit tests".'),
  background: z
    .boolean()
    .optional()
    .describe(
      'Start the command as a background job and return its id at once (for servers and watchers); read its output with bash_output, stop it with bash_kill. Default false.',
    ),
});

export const BashTool = Tool.define<typeof parameters, BashMetadata>(
  {
    id: 'bash',
    permissions: { required: ['execute'] },
    descriptionPath: descriptionBeside(import.meta.url, 'bash'),
    danger: 'dangerous',
  },
  async (initCtx) => {
    const ws = await Workspace.fromInitContext(initCtx);
    const outputs = tenantOf(initCtx).outputs;
    const shell = await findShell();
    // The OS sandbox: probed once per registry; the description says whether it is on.
    const sandbox = sandboxRuntimeOf(initCtx);
    const sandboxOptions = sandbox.optionsFor(initCtx);
    const sandboxStatus = await sandbox.status(sandboxOptions);
    const roots = [
      workspaceRootFor(initCtx),
      ...(Array.isArray(initCtx.additionalRoots) ? initCtx.additionalRoots : []),
    ];
    /** The process to start for `command`: the shell itself, or bwrap containing it. */
    const launchFor = async (command: string, cwd: string) => {
      const env = { ...process.env, ...NON_INTERACTIVE_ENV };
      const contained = await sandbox.contain({ shell, command, cwd, roots, env }, sandboxOptions);
      return contained ?? { file: shell, args: ['-c', command], env, explain: () => undefined };
    };
    return {
      descriptionVariables: { sandbox: sandboxLine(sandboxStatus) },
      description:
        'Run a shell command in the workspace (own process group, timeout, output capped with the full text saved to a file).',
      timeout: { managed: true },
      // A shell can do anything: change or delete files, and reach the network.
      annotations: { readOnlyHint: false, destructiveHint: true, openWorldHint: true },
      parameters,
      async execute(args, ctx) {
        const timeoutMs = validateTimeout(args.timeout);
        if (!args.command.trim()) throw new Error('The command is empty. Pass the shell command to run in "command".');
        const cwd = await resolveWorkdir(ws, args.workdir);
        if (ctx.abort.aborted) throw new Error('The command was not run: the call was aborted before it started.');
        const danger = await classifyCommand(args.command);
        const title = args.description?.trim() || abbreviate(args.command);
        ctx.metadata({ title, metadata: { description: title, output: '', danger: danger.level } });
        const launch = await launchFor(args.command, cwd);
        const sandboxed = launch.file !== shell;
        if (args.background) {
          const job = jobsFor(ctx).start({
            shell,
            command: args.command,
            cwd,
            env: launch.env,
            launch,
            sessionID: ctx.sessionID,
            outputs,
          });
          return backgroundResult(job, title, ws.display(cwd), danger, args.timeout, sandboxed);
        }

        const run = await runCommand({
          launch,
          cwd,
          timeoutMs,
          outputs,
          signal: ctx.abort,
          onProgress: (tail, chars) => ctx.metadata({ title, metadata: { output: tail, outputChars: chars } }),
        });

        const metadata: BashMetadata = {
          description: title,
          workdir: ws.display(cwd),
          exitCode: run.exitCode,
          signal: run.signal,
          killed: run.killed,
          durationMs: run.durationMs,
          truncated: run.truncated,
          ...(run.outputPath ? { outputPath: run.outputPath } : {}),
          outputChars: run.outputChars,
          maxBufferedChars: run.maxBufferedChars,
          backgroundOutputDetached: run.backgroundOutputDetached,
          danger: danger.level,
          dangerReasons: danger.segments.flatMap((s) => s.reasons),
          sandboxed,
        };
        // A command the sandbox stopped says what was refused and why, beside the raw error.
        const note = run.exitCode !== 0 ? launch.explain(run.text) : undefined;
        return {
          title: resultTitle(title, run, timeoutMs),
          metadata,
          output: resultOutput(run, timeoutMs) + (note ? `\n${note}` : ''),
        };
      },
    };
  },
);

// ---------------------------------------------------------------------------------------------

/** Throws a model-readable error unless `value` is absent or a whole number of ms in range. */
function validateTimeout(value: unknown): number {
  if (value === undefined) return DEFAULT_TIMEOUT_MS;
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0 || value > MAX_TIMEOUT_MS) {
    throw new Error(
      `Invalid timeout ${typeof value === 'number' ? String(value) : JSON.stringify(value)}: it must be a whole number of milliseconds from 1 to ${MAX_TIMEOUT_MS} ` +
        `(default ${DEFAULT_TIMEOUT_MS}). Pass a value in range, or omit it; for longer work start the command in ` +
        'the background with its output redirected to a file and check on it later.',
    );
  }
  return value;
}

async function resolveWorkdir(ws: Workspace, workdir: string | undefined): Promise<string> {
  const cwd = await ws.resolve(workdir ?? '.', 'write');
  const stat = await fs.stat(cwd).catch(() => undefined);
  if (!stat)
    throw new Error(
      `workdir ${JSON.stringify(workdir)} does not exist (${cwd}). Create it first (mkdir -p) or pick an existing directory.`,
    );
  if (!stat.isDirectory())
    throw new Error(
      `workdir ${JSON.stringify(workdir)} is a file, not a directory (${cwd}). Pass its parent directory instead.`,
    );
  return cwd;
}

/** bash when it is installed, else sh (looked up once per tool init). */
async function findShell(): Promise<string> {
  return (await findExecutable('bash', ['/bin', '/usr/bin'])) ?? '/bin/sh';
}

interface RunOptions {
  /** The process to start: the shell with the command, or the sandbox engine containing it. */
  launch: Pick<ContainedCommand, 'file' | 'args' | 'env'>;
  cwd: string;
  timeoutMs: number;
  /** Where the full output goes when it is over the cap (the tenant's private directory). */
  outputs: SavedOutputs;
  signal: AbortSignal;
  onProgress(tail: string, chars: number): void;
}

/** What the output accumulator hands back: the text the model sees and, when cut, where the rest is. */
interface CollectedOutput {
  text: string;
  truncated: boolean;
  outputPath?: string;
  outputChars: number;
  outputLines: number;
  tailStartLine: number;
  maxBufferedChars: number;
}

interface RunResult extends CollectedOutput {
  exitCode: number | null;
  signal: string | null;
  killed: KillReason | null;
  durationMs: number;
  backgroundOutputDetached: boolean;
}

/** Runs `command` in its own process group; resolves when the shell has exited (never on pipe close). */
async function runCommand(opts: RunOptions): Promise<RunResult> {
  const started = Date.now();
  const child = spawn(opts.launch.file, opts.launch.args, {
    cwd: opts.cwd,
    env: opts.launch.env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const out = new OutputAccumulator(MAX_OUTPUT_CHARS, opts.outputs);
  const streams = [child.stdout, child.stderr];
  const decoders = streams.map(() => new StringDecoder('utf8'));

  // Progress: at most one report per interval, carrying the latest output.
  const progress = new Throttle(() => opts.onProgress(out.recent(PROGRESS_TAIL_CHARS), out.totalChars));
  let lastData = Date.now();
  const onData = (i: number) => (chunk: Buffer) => {
    lastData = Date.now();
    out.push(decoders[i].write(chunk), streams, chunk);
    progress.soon();
  };
  const ended = streams.map(
    (s) =>
      new Promise<void>((resolve) => {
        s.once('end', resolve);
        s.once('close', resolve);
        s.once('error', () => resolve());
      }),
  );
  streams.forEach((s, i) => s.on('data', onData(i)));

  let killed: KillReason | null = null;
  let killing: Promise<void> | undefined;
  let exited = false;
  const kill = (reason: KillReason) => {
    if (killed || exited || child.pid === undefined) return;
    killed = reason;
    killing = killProcessGroup(child.pid);
  };
  const timer = setTimeout(() => kill('timeout'), opts.timeoutMs);
  const onAbort = () => kill('aborted');
  opts.signal.addEventListener('abort', onAbort, { once: true });

  const exit = await new Promise<{ code: number | null; signal: string | null; spawnError?: Error }>((resolve) => {
    child.once('error', (err) => resolve({ code: null, signal: null, spawnError: err }));
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  exited = true;
  clearTimeout(timer);
  opts.signal.removeEventListener('abort', onAbort);
  if (exit.spawnError) {
    out.discard();
    throw new Error(
      `Could not start ${opts.launch.file}: ${exit.spawnError.message}. Check that a shell is installed and the workdir is accessible.`,
    );
  }
  if (killing) await killing;

  // The shell is gone, but a background child may still hold the pipes: read what is already
  // there until they go quiet or close, then stop listening.
  const bothEnded = Promise.all(ended).then(() => true);
  const graceDeadline = Date.now() + PIPE_GRACE_MAX_MS;
  // With no process of the group left, nothing can hold the pipes: their end is only delayed
  // (a loaded machine), so wait for it rather than judge by quiet time and cut output short.
  const mayBeHeld = child.pid !== undefined && groupAlive(child.pid);
  let pipesClosed = false;
  while (!pipesClosed && Date.now() < graceDeadline) {
    const quietFor = Date.now() - lastData;
    const wait = Math.max(10, PIPE_QUIET_MS - quietFor);
    pipesClosed = await Promise.race([bothEnded, delay(wait).then(() => false)]);
    // Paused pipes (waiting for the output file to drain) are not quiet, just slowed down.
    if (mayBeHeld && !pipesClosed && !out.paused && Date.now() - lastData >= PIPE_QUIET_MS) break;
  }
  for (const s of streams) {
    s.removeAllListeners('data');
    if (!pipesClosed) s.destroy();
  }
  for (let i = 0; i < streams.length; i++) out.push(decoders[i].end(), streams);
  progress.cancel();

  const final = await out.finish();
  return {
    exitCode: exit.code,
    signal: exit.signal,
    killed,
    durationMs: Date.now() - started,
    ...final,
    backgroundOutputDetached: !pipesClosed,
  };
}

/**
 * Keeps the first half of the cap and a ring of the last half in memory; once the output is over
 * the cap, everything goes to a file instead (with backpressure on the child's pipes), so memory
 * stays bounded however much the command prints.
 */
class OutputAccumulator {
  private readonly headCap: number;
  private readonly tailCap: number;
  private head = '';
  private tail: string[] = [];
  private tailLength = 0;
  /** Everything, until the cap is crossed. */
  private all: string[] = [];
  private allRaw: Buffer[] = [];
  totalChars = 0;
  private lines = 0;
  private tailLines = 0;
  private file?: WriteStream;
  private filePath?: string;
  private fileError?: Error;
  maxBuffered = 0;
  /** The child's pipes are paused until the output file drains. */
  paused = false;

  constructor(
    private readonly cap: number,
    private readonly outputs: SavedOutputs,
  ) {
    this.headCap = Math.floor(cap / 2);
    this.tailCap = cap - this.headCap;
  }

  /** Adds decoded `text`; `raw` is the chunk it came from (counted and written as bytes: cheaper). */
  push(text: string, sources: Readable[], raw?: Buffer): void {
    if (raw) this.lines += countNewlineBytes(raw);
    if (!text) return;
    this.totalChars += text.length;
    if (!raw) this.lines += countNewlines(text);
    if (this.head.length < this.headCap) this.head += text.slice(0, this.headCap - this.head.length);
    this.tail.push(text);
    this.tailLength += text.length;
    while (this.tail.length > 1 && this.tailLength - this.tail[0].length >= this.tailCap)
      this.tailLength -= this.tail.shift()!.length;
    // The file gets the raw bytes in arrival order (exact, and no re-encoding); text without a raw
    // chunk is a decoder flush whose bytes were already in earlier chunks.
    if (this.file) {
      if (raw) this.writeToFile(raw, sources);
    } else {
      this.all.push(text);
      if (raw) this.allRaw.push(raw);
      if (this.totalChars > this.cap) this.spill(sources);
    }
    const buffered = this.head.length + this.tailLength + (this.file ? 0 : this.totalChars);
    if (buffered > this.maxBuffered) this.maxBuffered = buffered;
  }

  /** The last `n` characters seen (for progress). */
  recent(n: number): string {
    let s = '';
    for (let i = this.tail.length - 1; i >= 0 && s.length < n; i--) s = this.tail[i] + s;
    return s.length > n ? s.slice(s.length - n) : s;
  }

  discard(): void {
    this.file?.destroy();
  }

  private spill(sources: Readable[]): void {
    // Synchronous create is fine: it happens once per truncated call. Exclusive, 0600, in the
    // tenant's private directory (checked again before each save).
    let fd: number | undefined;
    try {
      ({ fd, file: this.filePath } = this.outputs.createSync('bash'));
    } catch (err) {
      this.fileError = err as Error;
    }
    this.file =
      fd === undefined
        ? createWriteStream('/dev/null', { flags: 'a' })
        : createWriteStream('', { fd, encoding: 'utf8' });
    this.file.on('error', (err) => {
      this.fileError = err;
      for (const s of sources) s.resume();
    });
    const bytes = Buffer.concat(this.allRaw);
    this.all = [];
    this.allRaw = [];
    this.writeToFile(bytes, sources);
  }

  private writeToFile(text: string | Buffer, sources: Readable[]): void {
    if (this.fileError || !this.file) return;
    if (!this.file.write(text) && !this.paused) {
      this.paused = true;
      for (const s of sources) s.pause();
      this.file.once('drain', () => {
        this.paused = false;
        for (const s of sources) s.resume();
      });
    }
  }

  /** The text the model sees and, when the output was cut, where the whole of it is. */
  async finish(): Promise<CollectedOutput> {
    const outputLines = this.lines + (this.totalChars > 0 && !this.endsWithNewline() ? 1 : 0);
    if (!this.file) {
      return {
        text: this.all.join(''),
        truncated: false,
        outputChars: this.totalChars,
        outputLines,
        tailStartLine: 1,
        maxBufferedChars: this.maxBuffered,
      };
    }
    await new Promise<void>((resolve) => {
      if (this.fileError) return resolve();
      this.file!.end(() => resolve());
    });
    let head = this.head;
    let tail = this.tail.join('');
    if (tail.length > this.tailCap) tail = tail.slice(tail.length - this.tailCap);
    // Cut at line boundaries when that loses little, so the model sees whole lines.
    const headNl = head.lastIndexOf('\n');
    if (headNl >= head.length / 2) head = head.slice(0, headNl + 1);
    const tailNl = tail.indexOf('\n');
    if (tailNl !== -1 && tailNl < tail.length / 2) tail = tail.slice(tailNl + 1);
    const tailLineCount = countNewlines(tail) + (tail && !tail.endsWith('\n') ? 1 : 0);
    const tailStartLine = Math.max(1, outputLines - tailLineCount + 1);
    const omitted = this.totalChars - head.length - tail.length;
    const where = this.fileError
      ? `The full output could not be saved (${this.fileError.message}); re-run the command with its output redirected to a file and read that.`
      : `The full output (${this.totalChars} chars, ${outputLines} lines) is saved at ${this.filePath}. ` +
        `Read it with the read tool (the tail below starts at line ${tailStartLine}, use offset to page) or search it with grep instead of re-running the command.`;
    const marker = `\n\n... [${omitted} characters omitted] ...\n${where}\n\n`;
    return {
      text: (head.endsWith('\n') ? head : head + '\n') + marker.slice(1) + tail,
      truncated: true,
      ...(this.fileError ? {} : { outputPath: this.filePath }),
      outputChars: this.totalChars,
      outputLines,
      tailStartLine,
      maxBufferedChars: this.maxBuffered,
    };
  }

  private endsWithNewline(): boolean {
    const last = this.tail[this.tail.length - 1];
    return last !== undefined && last.endsWith('\n');
  }
}

function backgroundResult(
  job: BackgroundJob,
  title: string,
  workdir: string,
  danger: Awaited<ReturnType<typeof classifyCommand>>,
  timeout: number | undefined,
  sandboxed: boolean,
): Tool.Result<BashMetadata> {
  const notes = [
    `Started background job ${job.id} (pid ${job.pid}) in ${workdir}: ${abbreviate(job.command)}`,
    `Read its output with bash_output {"id": "${job.id}"} (each call returns what is new); stop it with bash_kill {"id": "${job.id}"}.`,
  ];
  if (timeout !== undefined)
    notes.push('(timeout does not apply to background jobs; they run until they exit or are killed.)');
  return {
    title: `${title} (background ${job.id})`,
    output: notes.join('\n'),
    metadata: backgroundMetadata(job.id, title, workdir, danger, sandboxed),
  };
}

/** bash's metadata for a job it started (here or on a backend): nothing has run or been read yet. */
export function backgroundMetadata(
  jobId: string,
  title: string,
  workdir: string,
  danger: Awaited<ReturnType<typeof classifyCommand>>,
  sandboxed: boolean,
): BashMetadata {
  return {
    description: title,
    workdir,
    exitCode: null,
    signal: null,
    killed: null,
    durationMs: 0,
    truncated: false,
    outputChars: 0,
    maxBufferedChars: 0,
    backgroundOutputDetached: false,
    danger: danger.level,
    dangerReasons: danger.segments.flatMap((s) => s.reasons),
    jobId,
    sandboxed,
  };
}

/** The line of bash's description that says whether commands run contained. */
function sandboxLine(status: SandboxStatus): string {
  if (status.enabled)
    return (
      '- The OS sandbox is on: commands can write only inside the workspace and a private /tmp (emptied after each command), ' +
      'secret files (~/.ssh, .env*, *.pem, ...) are hidden, ' +
      (status.network === 'proxy'
        ? 'and the network reaches only the allowed hosts through an HTTP(S) proxy (HTTP_PROXY is set). '
        : 'and there is no network. ') +
      'A refusal comes with a [sandbox: ...] note saying why.'
    );
  return "- No OS sandbox: commands run with the host user's full rights, so stay inside the workspace.";
}

function resultTitle(title: string, run: RunResult, timeoutMs: number): string {
  if (run.killed === 'timeout') return `${title} (timed out after ${timeoutMs} ms)`;
  if (run.killed === 'aborted') return `${title} (aborted)`;
  if (run.exitCode !== 0 && run.exitCode !== null) return `${title} (exit ${run.exitCode})`;
  if (run.signal) return `${title} (${run.signal})`;
  return title;
}

function resultOutput(run: RunResult, timeoutMs: number): string {
  const notes: string[] = [];
  if (run.killed === 'timeout') {
    notes.push(
      `[Command killed: timed out after ${timeoutMs} ms; its whole process group got SIGTERM, then SIGKILL. ` +
        `Pass a larger timeout (max ${MAX_TIMEOUT_MS} ms), or run long jobs in the background with output redirected to a file.]`,
    );
  } else if (run.killed === 'aborted') {
    notes.push('[Command killed: the call was aborted; its whole process group got SIGTERM, then SIGKILL.]');
  } else if (run.signal) {
    notes.push(`[Command ended by signal ${run.signal}]`);
  } else if (run.exitCode !== 0) {
    notes.push(`[exit code ${run.exitCode}]`);
  }
  if (run.backgroundOutputDetached && !run.killed) {
    notes.push(
      "[The shell exited while a background process still held its output; later output from it is not captured. Redirect a background process's output to a file (cmd > log 2>&1 &) to keep it.]",
    );
  }
  const body = run.text.length ? run.text : '(no output)';
  return notes.length ? `${body.replace(/\n+$/, '')}\n\n${notes.join('\n')}` : body;
}

/**
 * Newlines in a byte chunk. Floods of short lines (`yes`) make a per-newline indexOf loop the
 * bottleneck, so this counts four bytes at a time (exact SWAR zero-byte test on byte ^ 0x0A).
 */
export function countNewlineBytes(b: Uint8Array): number {
  let n = 0;
  let i = 0;
  const aligned = Math.min(b.length, (4 - (b.byteOffset & 3)) & 3);
  for (; i < aligned; i++) if (b[i] === 10) n++;
  const words = (b.length - i) >>> 2;
  // A chunk too short to reach an aligned word has no words (and no valid aligned view).
  const u32 = words > 0 ? new Uint32Array(b.buffer, b.byteOffset + i, words) : new Uint32Array(0);
  for (let k = 0; k < words; k++) {
    const x = u32[k] ^ 0x0a0a0a0a;
    // High bit of each byte of y is set exactly when that byte of x is zero.
    const y = ~(((x & 0x7f7f7f7f) + 0x7f7f7f7f) | x | 0x7f7f7f7f);
    n += Math.imul(y >>> 7, 0x01010101) >>> 24;
  }
  for (i += words * 4; i < b.length; i++) if (b[i] === 10) n++;
  return n;
}

function countNewlines(s: string): number {
  let n = 0;
  for (let i = s.indexOf('\n'); i !== -1; i = s.indexOf('\n', i + 1)) n++;
  return n;
}

function abbreviate(command: string): string {
  const t = command.trim().replace(/\s+/g, ' ');
  return t.length > 60 ? `${t.slice(0, 57)}...` : t;
}
