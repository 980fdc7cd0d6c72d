/**
 * The loop guard: the same call (same tool, same arguments) made again and again in a row in one
 * session, getting the same result each time, is a model stuck in a loop. The `threshold`-th
 * identical call in a row is refused (or sent to the approver when `action` is `ask`) only when it
 * would make no progress: the earlier identical calls returned the same result, or the tool
 * declares its repeats useless. A read-only repeat runs and is refused afterwards only if its
 * result is the same again (a file edited in between, `git status` after a build, are progress).
 * Must not ask the approver or judge rules: gate.ts sends a tripped call to the policy.
 */
import { createHash } from 'node:crypto';
import type { LoopGuardOptions } from './types.js';

/** Identical calls in a row that trip the guard by default. */
export const DEFAULT_LOOP_THRESHOLD = 3;
/**
 * Tools repeated by design: reading a background job's new output with the same `{ id }` again and
 * again is progress, not a loop; so is each undo_file / undo_turn, which steps one change further back.
 */
export const DEFAULT_LOOP_EXEMPT: readonly string[] = ['bash_output', 'undo_file', 'undo_turn'];
/** Sessions the guard remembers; the least recently active is forgotten past it. */
export const MAX_GUARDED_SESSIONS = 1000;
/**
 * Results up to this many characters are kept as they are to compare the next one with; longer
 * ones are kept as a SHA-256 hash (hashing costs more than comparing, keeping costs memory).
 */
export const LOOP_RESULT_KEPT_CHARS = 16_384;

/** What the guard says about a call that repeats the last ones `threshold` times or more. */
export type RepeatVerdict = 'progress' | 'verify' | 'refuse';

/** Per-session memory of the last call and its results. A registry owns one. */
export class LoopGuard {
  readonly threshold: number;
  readonly action: 'deny' | 'ask';
  private readonly exempt: ReadonlySet<string>;
  private readonly last = new Map<string, Run>();

  constructor(options: LoopGuardOptions = {}) {
    this.threshold = options.threshold ?? DEFAULT_LOOP_THRESHOLD;
    this.action = options.action ?? 'deny';
    this.exempt = new Set(options.exempt ?? DEFAULT_LOOP_EXEMPT);
    if (!Number.isInteger(this.threshold) || this.threshold < 2)
      throw new Error(`loopGuard.threshold must be a whole number of at least 2, got ${options.threshold}.`);
  }

  /**
   * Records a call; returns how many identical calls in a row it makes (1 for a new one). Identical
   * calls of one model turn (`messageID`), such as parallel tool calls, count once.
   */
  note(sessionID: string, toolId: string, args: unknown, messageID?: string): number {
    if (this.exempt.has(toolId)) return 1;
    const key = callKey(toolId, args);
    if (key === undefined) return 1; // arguments that cannot be serialised are never "identical"
    const prev = this.last.get(sessionID);
    const same = prev !== undefined && prev.key === key;
    const count = same ? (messageID !== undefined && prev.messageID === messageID ? prev.count : prev.count + 1) : 1;
    this.last.delete(sessionID);
    this.last.set(sessionID, { key, args, count, messageID, results: same ? prev.results : [] });
    if (this.last.size > MAX_GUARDED_SESSIONS) this.last.delete(this.last.keys().next().value!);
    return count;
  }

  /** Whether this count trips the guard. */
  trips(count: number): boolean {
    return count >= this.threshold;
  }

  /**
   * Whether a call that trips the guard would make progress. `refuse`: the tool declares its
   * repeats useless, or the earlier identical calls all returned the same result and the call has
   * effects; `verify`: the same, but the call only reads, so it runs and is refused afterwards if
   * its result is the same again; `progress`: the earlier results differ (the world changed).
   */
  judge(sessionID: string, useless: boolean, readOnly: boolean): RepeatVerdict {
    if (useless) return 'refuse';
    const results = this.last.get(sessionID)?.results ?? [];
    const earlier = results.slice(-(this.threshold - 1));
    const unchanged = earlier.length === this.threshold - 1 && earlier.every((r) => r === earlier[0]);
    if (!unchanged) return 'progress';
    return readOnly ? 'verify' : 'refuse';
  }

  /**
   * Records the result of a finished call (when it is still the session's last call); returns
   * whether it equals the result of the identical call before it.
   */
  result(sessionID: string, toolId: string, args: unknown, output: string): boolean {
    const run = this.last.get(sessionID);
    // The same arguments object as noted is the same call, without serialising it again.
    if (!run || (run.args !== args && run.key !== callKey(toolId, args))) return false;
    const kept =
      output.length <= LOOP_RESULT_KEPT_CHARS ? output : `\0${createHash('sha256').update(output).digest('hex')}`;
    const same = run.results.length > 0 && run.results[run.results.length - 1] === kept;
    run.results.push(kept);
    if (run.results.length > this.threshold) run.results.shift();
    return same;
  }

  /** What the model reads when the guard stops a call. */
  message(toolId: string, count: number): string {
    return `You are repeating yourself: this is call ${count} in a row of "${toolId}" with exactly the same arguments, and it was not run. The earlier results are still valid. Use them, change the arguments, or do something else.`;
  }

  /** What the model reads when a read-only repeat ran and returned the same result again. */
  unchangedMessage(toolId: string, count: number): string {
    return `You are repeating yourself: this is call ${count} in a row of "${toolId}" with exactly the same arguments, and it returned exactly the same result as the calls before it: nothing has changed. Use the earlier result, change the arguments, or do something else.`;
  }
}

interface Run {
  key: string;
  /** The arguments object noted (the pipeline hands the same one to `result`). */
  args: unknown;
  count: number;
  messageID?: string;
  /** This run's results (short ones as they are, long ones as a hash), oldest first, at most `threshold`. */
  results: string[];
}

function callKey(toolId: string, args: unknown): string | undefined {
  try {
    return `${toolId}\0${JSON.stringify(args)}`;
  } catch {
    return undefined;
  }
}
