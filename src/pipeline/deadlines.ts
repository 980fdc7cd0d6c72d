/**
 * Call timeouts: one timer per distinct duration (a FIFO lane each) instead of one per call.
 * Must not know of tools or calls: a deadline only runs the callback it was given (call.ts settles the call).
 */
/** A pending deadline; `cancel()` it when the call ends first. */
export interface Deadline {
  cancel(): void;
}

/** One pending deadline: its own cancel handle, so adding one allocates a single object. */
class DeadlineEntry implements Deadline {
  constructor(
    readonly at: number,
    public fire: (() => void) | undefined,
    private readonly queue: DeadlineQueue,
    private readonly lane: DeadlineLane,
    private readonly ms: number,
  ) {}

  cancel(): void {
    if (!this.fire) return;
    this.fire = undefined;
    this.queue.tidy(this.ms, this.lane);
  }
}

interface DeadlineLane {
  entries: DeadlineEntry[];
  head: number;
  timer?: NodeJS.Timeout;
}

/** Entries a lane lets pile up at its front before it compacts the array. */
const LANE_COMPACT_AT = 1024;

/**
 * Call timeouts with one timer per distinct duration instead of one per call: calls of the same
 * duration expire in the order they started, so each duration is a FIFO lane whose timer is armed
 * for its oldest live entry. A cancelled entry drops its callback at once (nothing is retained).
 */
export class DeadlineQueue {
  private readonly lanes = new Map<number, DeadlineLane>();

  /** Calls `fire` after `ms` unless cancelled first. */
  add(ms: number, fire: () => void): Deadline {
    let lane = this.lanes.get(ms);
    if (!lane) this.lanes.set(ms, (lane = { entries: [], head: 0 }));
    const entry = new DeadlineEntry(Date.now() + ms, fire, this, lane, ms);
    lane.entries.push(entry);
    if (!lane.timer) this.arm(ms, lane);
    else if (lane.entries.length - lane.head === 1) lane.timer.ref();
    return entry;
  }

  /**
   * What the lane of duration `ms` holds (undefined once it is dropped): entries retained in
   * memory, and whether its timer keeps the process alive. For diagnostics and tests.
   */
  lane(ms: number): { retained: number; timerHoldsProcess: boolean } | undefined {
    const lane = this.lanes.get(ms);
    if (!lane) return undefined;
    return { retained: lane.entries.length - lane.head, timerHoldsProcess: lane.timer?.hasRef() ?? false };
  }

  private arm(ms: number, lane: DeadlineLane): void {
    const next = lane.entries[lane.head];
    lane.timer = setTimeout(() => this.expire(ms, lane), Math.max(0, next.at - Date.now()));
  }

  private expire(ms: number, lane: DeadlineLane): void {
    lane.timer = undefined;
    const now = Date.now();
    while (lane.head < lane.entries.length) {
      const entry = lane.entries[lane.head];
      if (entry.fire && entry.at > now) break;
      lane.head++;
      const fire = entry.fire;
      entry.fire = undefined;
      fire?.();
    }
    this.tidy(ms, lane);
  }

  /** Drops dead entries at the front; disarms an empty lane, re-arms a lane that has work. */
  tidy(ms: number, lane: DeadlineLane): void {
    while (lane.head < lane.entries.length && !lane.entries[lane.head].fire) lane.head++;
    if (lane.head === lane.entries.length) {
      lane.entries = [];
      lane.head = 0;
      // An empty lane keeps its timer until it fires, so calls that follow one another reuse it
      // instead of arming and clearing a timer each; unref'd, it holds no idle process open.
      // While a call is pending the timer is ref'd: a tool waiting on nothing but its abort
      // signal must still be woken by its timeout.
      if (lane.timer) lane.timer.unref();
      else this.lanes.delete(ms);
      return;
    }
    if (lane.head >= LANE_COMPACT_AT && lane.head * 2 >= lane.entries.length) {
      lane.entries = lane.entries.slice(lane.head);
      lane.head = 0;
    }
    if (!lane.timer) this.arm(ms, lane);
  }
}
