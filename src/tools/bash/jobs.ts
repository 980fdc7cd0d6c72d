/**
 * Background shell jobs: `bash { background: true }` starts one and returns its id at once;
 * bash_output reads what it printed since the last read; bash_kill ends it. Jobs belong to the
 * registry that ran them (and to the session that started them); `registry.dispose()` and the
 * host process's exit kill every job's whole process group. A job is a local process group
 * (`BackgroundJob`, here) or a command sent through a backend's `execute` (`backend-jobs.ts`); both
 * share the `Job` record below: the same ids, limits, output caps and saved full output.
 * Must not signal process groups directly (process-group.ts) nor classify commands (bash-danger.ts),
 * nor talk to a backend (backend-jobs.ts).
 * Over 400 lines: a job's whole life (start, the output ring and its reads, the caps, the kill and the
 * exit hooks) shares one record and one set of limits; split, each half would re-state them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { StringDecoder } from 'node:string_decoder';
import { z } from 'zod';
import { Tool } from '../../authoring/tool.js';
import type { SavedOutputs } from '../../workspace/saved-outputs.js';
import { descriptionBeside } from '../../authoring/description.js';
import { groupAlive, killProcessGroup, signalGroup } from './process-group.js';

/** Most jobs one registry runs at once; starting another is refused until one ends. */
export const MAX_RUNNING_JOBS = 8;
/** Most jobs (running and finished) a registry remembers; the oldest finished one is forgotten first. */
export const MAX_JOB_RECORDS = 64;
/** Unread output a job keeps in memory, in characters; older unread output is dropped (it stays in the log file). */
export const MAX_JOB_UNREAD_CHARS = 30_000;
/** Largest log file of one job, in bytes; output past it is not saved. */
export const MAX_JOB_LOG_BYTES = 100 * 1024 * 1024;

/**
 * What a job is doing. `failed`: a backend failed to run it or answered something unusable; `lost`:
 * the tools stopped waiting for a backend's answer (time limit, a stop the backend did not confirm,
 * dispose), so the command may still be running there.
 */
export type JobStatus = 'running' | 'exited' | 'killed' | 'failed' | 'lost';

/** What bash_output and bash_kill report about a job. */
export interface JobMetadata extends Tool.Metadata {
  id: string;
  command: string;
  pid: number | null;
  status: JobStatus;
  exitCode: number | null;
  signal: string | null;
  /** Characters printed in all, and characters dropped from memory before they were read. */
  outputChars: number;
  droppedChars: number;
  /** The file holding everything the job printed (up to MAX_JOB_LOG_BYTES). */
  logPath?: string;
  truncated: boolean;
  /** The backend the job runs on (jobs over a backend's `execute`). */
  backend?: string;
}

/**
 * One background job's record: its state, the output not yet read (bounded), and the full output
 * saved to the registry's output store. Subclasses feed it (`take`) and end it (`finish`).
 */
export abstract class Job {
  status: JobStatus = 'running';
  exitCode: number | null = null;
  signal: string | null = null;
  private unread = '';
  private dropped = 0;
  private total = 0;
  private log?: WriteStream;
  private logBytes = 0;
  logPath?: string;
  private readonly startedAt = Date.now();
  private endedAt?: number;

  constructor(
    readonly id: string,
    readonly command: string,
    readonly sessionID: string,
    private readonly outputs: SavedOutputs,
  ) {}

  /** The process group id on this host, or null (a backend job, or a shell that never started). */
  abstract get pid(): number | null;

  /** Resolves once the job has ended and its output has been collected (or was given up on). */
  abstract get finished(): Promise<void>;

  /** Stops the job and waits until it has finished (or, on a backend, until waiting is given up). */
  abstract kill(): Promise<void>;

  /** Stops the job synchronously, for the host's exit (only local process groups can be). */
  killNow(): void {}

  /** The job's state as bash_output's first line says it, e.g. `running for 1.2 s (pid 42)`. */
  abstract state(seconds: string): string;

  /** Lines bash_output adds after the output (why a backend job ended the way it did). */
  notes(): string[] {
    return [];
  }

  /** Output since the last read (consumed), with the job's state. */
  read(): { text: string; metadata: JobMetadata; elapsedMs: number } {
    const text = this.unread;
    const dropped = this.dropped;
    this.unread = '';
    this.dropped = 0;
    return { text, metadata: this.describe(dropped), elapsedMs: (this.endedAt ?? Date.now()) - this.startedAt };
  }

  protected describe(dropped: number): JobMetadata {
    return {
      id: this.id,
      command: this.command,
      pid: this.pid,
      status: this.status,
      exitCode: this.exitCode,
      signal: this.signal,
      outputChars: this.total,
      droppedChars: dropped,
      ...(this.logPath ? { logPath: this.logPath } : {}),
      truncated: dropped > 0,
    };
  }

  /**
   * Adds output; `raw` is what goes to the log file (the exact bytes). Text without it (a decoder's
   * flush, whose bytes came in earlier chunks; a note of ours) is not logged.
   */
  protected take(text: string, raw?: Buffer): void {
    if (raw) this.save(raw);
    if (!text) return;
    this.total += text.length;
    this.unread += text;
    if (this.unread.length > MAX_JOB_UNREAD_CHARS) {
      const cut = this.unread.length - MAX_JOB_UNREAD_CHARS;
      this.dropped += cut;
      this.unread = this.unread.slice(cut);
    }
  }

  private save(raw: Buffer): void {
    if (!raw.length || this.logBytes >= MAX_JOB_LOG_BYTES) return;
    if (!this.log) {
      try {
        // The registry's private output directory (0700, owner-checked), a new 0600 file never opened through a symlink.
        const { fd, file } = this.outputs.createSync(`bash-job-${this.id}`);
        this.logPath = file;
        this.log = createWriteStream('', { fd });
        this.log.on('error', () => (this.logBytes = MAX_JOB_LOG_BYTES));
      } catch {
        this.logBytes = MAX_JOB_LOG_BYTES;
        return;
      }
    }
    const part = raw.subarray(0, MAX_JOB_LOG_BYTES - this.logBytes);
    this.logBytes += part.length;
    this.log.write(part);
  }

  /** Marks the job ended (a status set earlier, such as `killed`, is kept) and closes its log. */
  protected finish(code: number | null, signal: string | null, status: JobStatus = 'exited'): void {
    if (this.status === 'running') this.status = status;
    this.exitCode = code;
    this.signal = signal;
    this.endedAt = Date.now();
    this.log?.end();
  }
}

/** One background job on this host: a shell in its own process group. */
export class BackgroundJob extends Job {
  private readonly done: Promise<void>;

  constructor(
    id: string,
    command: string,
    sessionID: string,
    private readonly child: ChildProcess,
    outputs: SavedOutputs,
  ) {
    super(id, command, sessionID, outputs);
    const streams = [child.stdout!, child.stderr!];
    const decoders = streams.map(() => new StringDecoder('utf8'));
    streams.forEach((s, i) => {
      s.on('data', (chunk: Buffer) => this.take(decoders[i].write(chunk), chunk));
      // A job must never keep the host process alive.
      (s as unknown as { unref?: () => void }).unref?.();
    });
    child.unref();
    const pipesClosed = Promise.all(streams.map((s) => new Promise<void>((r) => s.once('close', () => r()))));
    this.done = new Promise<void>((resolve) => {
      child.once('error', (err) => {
        this.take(`[could not start the shell: ${err.message}]\n`);
        this.ended(null, null);
        resolve();
      });
      child.once('exit', (code, signal) => {
        // Output still in the pipes arrives before they close; a daemon holding them open is not waited for.
        // The job reads as ended only once its output is collected, so "exited" means nothing more will come.
        void Promise.race([pipesClosed, delay(200)]).then(() => {
          for (let i = 0; i < streams.length; i++) this.take(decoders[i].end());
          this.ended(code, signal);
          resolve();
        });
      });
    });
  }

  /** The process group id (the shell's pid). */
  get pid(): number | null {
    return this.child.pid ?? null;
  }

  /** Resolves once the shell has exited and its output has been collected. */
  get finished(): Promise<void> {
    return this.done;
  }

  state(seconds: string): string {
    if (this.status === 'running') return `running for ${seconds} s (pid ${this.pid})`;
    if (this.status === 'killed') return `killed after ${seconds} s`;
    if (this.signal) return `ended by ${this.signal} after ${seconds} s`;
    return `exited with code ${this.exitCode} after ${seconds} s`;
  }

  /** Ends the whole process group (SIGTERM, then SIGKILL) and waits until the job has finished. */
  async kill(): Promise<void> {
    if (this.pid !== null && (this.status === 'running' || groupAlive(this.pid))) {
      if (this.status === 'running') this.status = 'killed';
      await killProcessGroup(this.pid);
    }
    await this.done;
  }

  /** SIGKILL to the group, synchronously (for the host's exit). */
  killNow(): void {
    if (this.pid !== null && (this.status === 'running' || groupAlive(this.pid))) signalGroup(this.pid, 'SIGKILL');
  }

  private ended(code: number | null, signal: NodeJS.Signals | null): void {
    this.finish(code, signal);
    liveJobs.delete(this);
    // Leftover members of the group (a daemon the job started) are still ended on dispose/exit.
    if (this.pid !== null && groupAlive(this.pid)) liveJobs.add(this);
  }
}

/** The background jobs of one registry. */
export class JobTable {
  private readonly jobs = new Map<string, Job>();

  /** Starts `command` in its own process group; refused when MAX_RUNNING_JOBS are running. */
  start(opts: {
    shell: string;
    command: string;
    cwd: string;
    env: NodeJS.ProcessEnv;
    sessionID: string;
    /** The registry's private store, where the job's full log goes. */
    outputs: SavedOutputs;
    /** The process to start instead of `shell -c command` (the sandbox engine containing it). */
    launch?: { file: string; args: string[]; env: NodeJS.ProcessEnv };
  }): BackgroundJob {
    const id = this.admit();
    const [file, args, env] = opts.launch
      ? [opts.launch.file, opts.launch.args, opts.launch.env]
      : [opts.shell, ['-c', opts.command], opts.env];
    const child = spawn(file, args, {
      cwd: opts.cwd,
      env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const job = new BackgroundJob(id, opts.command, opts.sessionID, child, opts.outputs);
    this.jobs.set(id, job);
    liveJobs.add(job);
    installExitHandlers();
    return job;
  }

  /**
   * Adds a job made elsewhere (a backend's, backend-jobs.ts) under a new id, within the same limits;
   * `make` receives the id. Refused when MAX_RUNNING_JOBS are running.
   */
  add<J extends Job>(make: (id: string) => J): J {
    const job = make(this.admit());
    this.jobs.set(job.id, job);
    return job;
  }

  /** A new job id, once the running-jobs limit allows one more (old finished records forgotten first). */
  private admit(): string {
    const running = [...this.jobs.values()].filter((j) => j.status === 'running');
    if (running.length >= MAX_RUNNING_JOBS) {
      throw new Error(
        `${running.length} background jobs are already running (${running.map((j) => j.id).join(', ')}), the most one registry runs. ` +
          'Wait for one to finish (bash_output) or stop one with bash_kill, then start this one.',
      );
    }
    this.forgetOldFinished();
    return `job-${randomBytes(4).toString('hex')}`;
  }

  /** The job `id` of `sessionID`, or a model-readable error naming the session's jobs. */
  get(id: string, sessionID: string): Job {
    const job = this.jobs.get(id.trim());
    if (job && job.sessionID === sessionID) return job;
    const mine = [...this.jobs.values()].filter((j) => j.sessionID === sessionID).map((j) => `${j.id} (${j.status})`);
    throw new Error(
      `No background job ${JSON.stringify(id)} in this session. ` +
        (mine.length ? `This session's jobs: ${mine.join(', ')}.` : 'Start one with bash and background: true.'),
    );
  }

  /** Kills every job (local process groups; backend jobs through their backend) and waits for them (what `registry.dispose()` calls). */
  async killAll(): Promise<void> {
    await Promise.all([...this.jobs.values()].map((j) => j.kill()));
  }

  private forgetOldFinished(): void {
    for (const [id, job] of this.jobs) {
      if (this.jobs.size < MAX_JOB_RECORDS) return;
      if (job.status !== 'running') this.jobs.delete(id);
    }
  }
}

interface DisposableOwner {
  onDispose(fn: () => Promise<void> | void): () => void;
}

const tables = new WeakMap<object, JobTable>();
const standalone = new JobTable();

/** The job table of the registry running this call (`ctx.extra.registry`), made on first use. */
export function jobsFor(ctx: Tool.Context): JobTable {
  const owner = ctx.extra?.registry as (object & Partial<DisposableOwner>) | undefined;
  if (!owner) return standalone;
  let table = tables.get(owner);
  if (!table) {
    const made = new JobTable();
    tables.set(owner, made);
    owner.onDispose?.(() => made.killAll());
    table = made;
  }
  return table;
}

// ---------------------------------------------------------------------------------------------
// The host's exit: every live group is killed, whichever registry started it.
// ---------------------------------------------------------------------------------------------

const liveJobs = new Set<BackgroundJob>();
let handlersInstalled = false;
const EXIT_SIGNALS: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

function killLiveJobs(): void {
  for (const job of liveJobs) job.killNow();
  liveJobs.clear();
}

function installExitHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  process.on('exit', killLiveJobs);
  for (const sig of EXIT_SIGNALS) {
    const onSignal = () => {
      killLiveJobs();
      // Only stand in for the default action (ending the process) when nobody else handles it.
      if (process.listenerCount(sig) === 1) {
        process.removeListener(sig, onSignal);
        process.kill(process.pid, sig);
      }
    };
    process.on(sig, onSignal);
  }
}

// ---------------------------------------------------------------------------------------------
// bash_output / bash_kill
// ---------------------------------------------------------------------------------------------

/** The one argument of bash_output and bash_kill. */
export const jobIdParameter = z.object({
  id: z
    .string()
    .describe('The job id that bash returned when it started the job in the background, e.g. "job-1a2b3c4d".'),
});

/** bash_output's definition (also served over a backend that runs commands: backend.ts). */
export const bashOutputDefinition: Tool.Definition<typeof jobIdParameter, JobMetadata> = {
  description: 'Read what a background bash job printed since the last read, and whether it has finished.',
  parameters: jobIdParameter,
  async execute(args, ctx) {
    return report(jobsFor(ctx).get(args.id, ctx.sessionID), 'read');
  },
};

/** bash_kill's definition (also served over a backend that runs commands: backend.ts). */
export const bashKillDefinition: Tool.Definition<typeof jobIdParameter, JobMetadata> = {
  description: 'Stop a background bash job (its whole process group) and return its remaining output.',
  parameters: jobIdParameter,
  async execute(args, ctx) {
    const job = jobsFor(ctx).get(args.id, ctx.sessionID);
    const wasRunning = job.status === 'running';
    await job.kill();
    return report(job, wasRunning ? 'killed' : 'already-done');
  },
};

export const BashOutputTool = Tool.define<typeof jobIdParameter, JobMetadata>(
  {
    id: 'bash_output',
    permissions: { required: ['execute'] },
    descriptionPath: descriptionBeside(import.meta.url, 'bash_output'),
    danger: 'safe',
  },
  bashOutputDefinition,
);

export const BashKillTool = Tool.define<typeof jobIdParameter, JobMetadata>(
  {
    id: 'bash_kill',
    permissions: { required: ['execute'] },
    descriptionPath: descriptionBeside(import.meta.url, 'bash_kill'),
    danger: 'moderate',
  },
  bashKillDefinition,
);

function report(job: Job, action: 'read' | 'killed' | 'already-done'): Tool.Result<JobMetadata> {
  const { text, metadata, elapsedMs } = job.read();
  const lines = [`[job ${job.id}: ${job.state((elapsedMs / 1000).toFixed(1))}]`];
  if (action === 'already-done') lines.push('[It had already finished; nothing was killed.]');
  if (metadata.droppedChars > 0) {
    lines.push(
      `[${metadata.droppedChars} earlier characters were not read in time and were dropped here` +
        (metadata.logPath ? `; the full output is in ${metadata.logPath} (read it with the read tool).]` : '.]'),
    );
  }
  lines.push(text.length ? text.replace(/\n$/, '') : '(no new output)');
  lines.push(...job.notes());
  if (job.status === 'running') lines.push(`[Still running: call bash_output again later, or bash_kill to stop it.]`);
  return { title: `${job.id}: ${job.status}`, output: lines.join('\n'), metadata };
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
