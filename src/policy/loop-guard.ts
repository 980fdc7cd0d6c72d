/**
 * The loop guard: the same call (same tool, same arguments) made again and again in a row in one
 * session is a model stuck in a loop. The `threshold`-th identical call in a row is refused with a
 * message saying so (or sent to the approver when `action` is `ask`). On by default.
 * Must not ask the approver or judge rules: gate.ts sends a tripped call to the policy.
 */
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

/** Per-session memory of the last call. A registry owns one. */
export class LoopGuard {
  readonly threshold: number;
  readonly action: 'deny' | 'ask';
  private readonly exempt: ReadonlySet<string>;
  private readonly last = new Map<string, { key: string; count: number; messageID?: string }>();

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
    let key: string;
    try {
      key = `${toolId}\0${JSON.stringify(args)}`;
    } catch {
      return 1; // arguments that cannot be serialised are never "identical"
    }
    const prev = this.last.get(sessionID);
    const same = prev !== undefined && prev.key === key;
    const count = same ? (messageID !== undefined && prev.messageID === messageID ? prev.count : prev.count + 1) : 1;
    this.last.delete(sessionID);
    this.last.set(sessionID, { key, count, messageID });
    if (this.last.size > MAX_GUARDED_SESSIONS) this.last.delete(this.last.keys().next().value!);
    return count;
  }

  /** Whether this count trips the guard. */
  trips(count: number): boolean {
    return count >= this.threshold;
  }

  /** What the model reads when the guard stops a call. */
  message(toolId: string, count: number): string {
    return `You are repeating yourself: this is call ${count} in a row of "${toolId}" with exactly the same arguments, and it was not run. The earlier results are still valid. Use them, change the arguments, or do something else.`;
  }
}
