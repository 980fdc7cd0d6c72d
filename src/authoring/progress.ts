/**
 * Progress pacing shared by every tool that streams progress: one interval and one throttle.
 * Must not build or send a report: it only decides when one is due; what a report carries is the tool's business.
 */

/** Minimum time between two progress reports of one call, in ms. */
export const PROGRESS_INTERVAL_MS = 250;

/** Paces one call's progress reports to at most one per interval. */
export class Throttle {
  private last: number;
  private timer: NodeJS.Timeout | undefined;

  /** `lastAt`: when the previous report was (default: never, so the first one goes through). */
  constructor(
    private readonly report: () => void,
    private readonly intervalMs: number = PROGRESS_INTERVAL_MS,
    lastAt = -Infinity,
  ) {
    this.last = lastAt;
  }

  /** Reports now if the interval has passed since the last report; otherwise drops this one. */
  maybe(): void {
    if (Date.now() - this.last >= this.intervalMs) this.now();
  }

  /** Reports now, whatever the interval (e.g. a size threshold was passed). */
  now(): void {
    this.cancel();
    this.last = Date.now();
    this.report();
  }

  /**
   * Reports as soon as the interval allows, on a timer: calls in between coalesce into that one
   * report, so the latest state is always reported even when nothing follows it.
   */
  soon(): void {
    if (this.timer) return;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.now();
      },
      Math.max(0, this.last + this.intervalMs - Date.now()),
    );
  }

  /** Drops a report scheduled by `soon()`. */
  cancel(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}

/** `report`, called at most once per `intervalMs` (the first call always goes through; later ones in the interval are dropped). */
export function throttle(intervalMs: number, report: () => void): () => void {
  const t = new Throttle(report, intervalMs);
  return () => t.maybe();
}
