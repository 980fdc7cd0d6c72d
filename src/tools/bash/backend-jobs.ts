/**
 * Background jobs over a backend's `execute` (deepagents' `SandboxBackendProtocolV2`). The command
 * is sent through one `execute`, wrapped in a POSIX sh script that runs it in a process group of its
 * own (`setsid`) and names its own pid in a symlink in the backend's `$TMPDIR`; that one answer, when
 * it comes, is the job's output and exit code (execute answers once, at the end: nothing partial).
 * Stopping a job (bash_kill, its time limit, `registry.dispose()`) sends a second `execute` that
 * signals the wrapper, which ends the whole group; the stop counts only once the job's own answer
 * arrives, otherwise the job is `lost` and the result says it may still be running there.
 * The job record, its limits and bash_output's report are jobs.ts's.
 * Must not spawn a process on this host, nor format what bash_output says (jobs.ts).
 */
import { randomBytes } from 'node:crypto';
import type { SavedOutputs } from '../../workspace/saved-outputs.js';
import type { GuardedBackend } from '../../backend/guard.js';
import { Job } from './jobs.js';

/** A background job's time limit on a backend when the call gives none, in ms (the bash maximum). */
export const BACKEND_JOB_DEFAULT_TIMEOUT_MS = 600_000;
/**
 * When a backend job is stopped: how long the stop command may take to answer, and then how long the
 * job's own answer is awaited, each in ms. Past it the job is `lost` (it may still be running there).
 */
export const BACKEND_JOB_STOP_WAIT_MS = 5_000;

/** What the stop script found: not started yet (it will not start), signalled, already gone, or no record. */
type StopAnswer = 'early' | 'sent' | 'gone' | 'unknown';
const STOP_MARK = 'toolbelt-stop:';
/** What a job stopped before it started prints (its whole output). */
const STOPPED_BEFORE_START = '[toolbelt: the job was stopped before it started]';

/** Why a backend job was stopped: bash_kill or registry.dispose() (`kill`), or its time limit. */
type StopReason = 'kill' | 'timeout';

/** A shell function `l` printing where the symlink `$1` points (readlink, or `ls -ld` where there is none). */
const READ_LINK = `l() { readlink "$1" 2>/dev/null || ls -ld "$1" 2>/dev/null | sed 's/.* -> //'; }`;

/**
 * The script a job runs as: `$d` (a symlink to the wrapper's pid) is made first, atomically; a stop
 * that came first left `$d` pointing at `stop`, and the job then never starts. Where `$d` cannot be
 * made (no writable TMPDIR, no `ln`) the job runs without it, and a stop finds no record. The command
 * runs under `setsid` (when the backend has it) so that its whole process group can be ended; on
 * TERM/INT/HUP the wrapper sends TERM to the group, KILL a second later, removes `$d` and exits 143.
 */
export function jobScript(command: string, token: string): string {
  return [
    `d="\${TMPDIR:-/tmp}/toolbelt-job-${token}"`,
    `c=${shellQuote(command)}`,
    READ_LINK,
    // The trap uses $! (set as soon as the command is forked), never a variable assigned after it.
    `s() { trap '' TERM INT HUP; p=\${!-}; if [ -n "$p" ]; then kill -TERM -"$p" 2>/dev/null || kill -TERM "$p" 2>/dev/null; (sleep 1; kill -KILL -"$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null) </dev/null >/dev/null 2>&1 & wait "$p" 2>/dev/null; fi; if [ -n "$d" ]; then rm -f "$d"; fi; exit 143; }`,
    `trap s TERM INT HUP`,
    `if ! ln -s "$$" "$d" 2>/dev/null; then`,
    `  if [ "$(l "$d")" = stop ]; then rm -f "$d"; echo '${STOPPED_BEFORE_START}'; exit 143; fi`,
    `  d=''`,
    `fi`,
    `if command -v setsid >/dev/null 2>&1; then setsid "\${BASH:-sh}" -c "$c" </dev/null & else "\${BASH:-sh}" -c "$c" </dev/null & fi`,
    `wait "$!" 2>/dev/null; r=$?`,
    `if [ -n "$d" ]; then rm -f "$d"; fi`,
    `exit "$r"`,
  ].join('\n');
}

/** The script that stops the job `token`: claim `$d` first (the job then never starts), else signal the wrapper it names. */
export function stopScript(token: string): string {
  return [
    `d="\${TMPDIR:-/tmp}/toolbelt-job-${token}"`,
    READ_LINK,
    `if ln -s stop "$d" 2>/dev/null; then echo ${STOP_MARK}early; exit 0; fi`,
    `w=$(l "$d")`,
    `case "$w" in ''|*[!0-9]*) echo ${STOP_MARK}unknown; exit 0;; esac`,
    `if kill -TERM "$w" 2>/dev/null; then echo ${STOP_MARK}sent; else echo ${STOP_MARK}gone; fi`,
  ].join('\n');
}

/** Removes the `stop` claim a stop left for a job that had in fact already ended (it never looks again). */
function unclaimScript(token: string): string {
  return [
    `d="\${TMPDIR:-/tmp}/toolbelt-job-${token}"`,
    READ_LINK,
    `if [ "$(l "$d")" = stop ]; then rm -f "$d"; fi`,
  ].join('\n');
}

/** One background job on a backend: the answer of one `execute`, and a way to stop it through another. */
export class BackendJob extends Job {
  private readonly token = randomBytes(12).toString('hex');
  /** Aborted when the tools stop waiting for the job's answer. */
  private readonly waiting = new AbortController();
  private readonly answered: Promise<void>;
  private readonly timer: NodeJS.Timeout;
  private stopping?: Promise<void>;
  private stoppedBy?: StopReason;
  private endNote?: string;

  private readonly backend: GuardedBackend;
  private readonly timeoutMs: number;

  constructor(opts: {
    id: string;
    /** The command as the model wrote it (what bash_output shows). */
    command: string;
    /** What runs (the command with its workdir's `cd`). */
    run: string;
    sessionID: string;
    /** The registry's private store, where the job's full output goes. */
    outputs: SavedOutputs;
    backend: GuardedBackend;
    timeoutMs: number;
  }) {
    super(opts.id, opts.command, opts.sessionID, opts.outputs);
    const backend = (this.backend = opts.backend);
    const timeoutMs = (this.timeoutMs = opts.timeoutMs);
    this.timer = setTimeout(() => void this.stop('timeout'), timeoutMs);
    // A job must never keep the host process alive.
    this.timer.unref();
    this.answered = backend.execute(jobScript(opts.run, this.token), this.waiting.signal).then(
      (answer) => {
        clearTimeout(this.timer);
        if (this.status !== 'running') return;
        this.take(answer.output, Buffer.from(answer.output, 'utf8'));
        if (answer.truncated)
          this.endNote = `[The backend ${backend.name} cut this output itself; the rest is not available.]`;
        this.finish(answer.exitCode, null, this.stoppedBy ? 'killed' : 'exited');
      },
      (err: unknown) => {
        clearTimeout(this.timer);
        if (this.status !== 'running' || this.waiting.signal.aborted) return;
        this.endNote = `[${err instanceof Error ? err.message : String(err)} The command may still be running on the backend.]`;
        this.finish(null, null, 'failed');
      },
    );
  }

  get pid(): null {
    return null;
  }

  get finished(): Promise<void> {
    return this.answered;
  }

  state(seconds: string): string {
    switch (this.status) {
      case 'running':
        return `running on the backend ${this.backend.name} for ${seconds} s; its output arrives when it ends (the backend's execute answers once)`;
      case 'killed':
        return `stopped after ${seconds} s on the backend ${this.backend.name}${this.exitCode !== null ? ` (exit code ${this.exitCode})` : ''}`;
      case 'failed':
        return `failed on the backend ${this.backend.name} after ${seconds} s`;
      case 'lost':
        return `no longer followed after ${seconds} s; it may still be running on the backend ${this.backend.name}`;
      default:
        return `exited with code ${this.exitCode} after ${seconds} s on the backend ${this.backend.name}`;
    }
  }

  notes(): string[] {
    const notes = this.endNote ? [this.endNote] : [];
    if (this.status === 'killed' && this.stoppedBy === 'timeout')
      notes.push(`[Stopped: it passed its time limit of ${this.timeoutMs} ms.]`);
    return notes;
  }

  protected describe(dropped: number) {
    return { ...super.describe(dropped), backend: this.backend.name };
  }

  /** Asks the backend to stop the job and waits (bounded) for its answer; see the file header. */
  kill(): Promise<void> {
    return this.stop('kill');
  }

  /** One stop at a time: a second caller waits for the first. */
  private stop(reason: StopReason): Promise<void> {
    if (this.status !== 'running') return Promise.resolve();
    this.stopping ??= this.stopNow(reason);
    return this.stopping;
  }

  private async stopNow(reason: StopReason): Promise<void> {
    this.stoppedBy = reason;
    clearTimeout(this.timer);
    // The job's own answer is awaited from now on, alongside the stop command: one bound for both.
    const answeredInTime = Promise.race([
      this.answered.then(() => true),
      delay(BACKEND_JOB_STOP_WAIT_MS).then(() => false),
    ]);
    let asked: StopAnswer | Error;
    try {
      const r = await this.backend.execute(stopScript(this.token), AbortSignal.timeout(BACKEND_JOB_STOP_WAIT_MS));
      const mark = new RegExp(`${STOP_MARK}(early|sent|gone|unknown)`).exec(r.output);
      asked = mark
        ? (mark[1] as StopAnswer)
        : new Error(`its stop command answered ${JSON.stringify(r.output.slice(0, 200))}`);
    } catch (err) {
      asked = err instanceof Error ? err : new Error(String(err));
    }
    const settled = await answeredInTime;
    if (asked === 'early' && settled && this.status !== 'running') {
      // The job had ended before the stop claimed its name: take the claim back (bounded, best effort).
      await this.backend
        .execute(unclaimScript(this.token), AbortSignal.timeout(BACKEND_JOB_STOP_WAIT_MS))
        .catch(() => undefined);
    }
    if (settled || this.status !== 'running') return;
    this.waiting.abort();
    const why =
      asked instanceof Error
        ? `the backend ${this.backend.name} could not be asked to stop it (${asked.message.replace(/\.$/, '')})`
        : asked === 'unknown'
          ? `the backend ${this.backend.name} has no record of it to signal (its shell may lack ln/readlink, or run each command in a fresh machine)`
          : `the backend ${this.backend.name} was asked to stop it but its command has not answered within ${BACKEND_JOB_STOP_WAIT_MS} ms`;
    const cause = reason === 'timeout' ? `It passed its time limit of ${this.timeoutMs} ms and ` : '';
    this.endNote = `[${cause}${cause ? why : why.charAt(0).toUpperCase() + why.slice(1)}: the command may still be running on the backend, and its output will not be collected. Check there, e.g. with ps through bash.]`;
    this.finish(null, null, 'lost');
  }
}

function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
