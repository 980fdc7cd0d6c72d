/**
 * Approvals bound to one call: the tool call id and a hash of its canonical arguments. A grant for
 * a call cannot be spent on another call or on the same call with edited arguments.
 * Must not decide whether a call needs approval or ask for it: policy.ts and middleware.ts do.
 */
import { createHash } from 'node:crypto';

/** Most pending one-call grants kept; the oldest is dropped past it (a grant is spent when its call runs). */
export const MAX_PENDING_GRANTS = 10_000;

/** JSON with object keys sorted, so equal arguments hash equally whatever their key order. */
export function canonicalJson(value: unknown): string {
  return (
    JSON.stringify(value, (_key, v: unknown) =>
      v && typeof v === 'object' && !Array.isArray(v)
        ? Object.fromEntries(
            Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
          )
        : v,
    ) ?? 'null'
  );
}

/** The hash an approval is bound to: sha256 of the tool id and canonical arguments (hex, 16 chars). */
export function argsHash(toolId: string, args: unknown): string {
  return createHash('sha256').update(toolId).update('\0').update(canonicalJson(args)).digest('hex').slice(0, 16);
}

/** One-call grants: call id -> the arguments hash it was approved for. */
export class GrantStore {
  private readonly grants = new Map<string, string>();

  /** Records that call `callID` may run once with arguments hashing to `hash`. */
  grant(callID: string, hash: string): void {
    this.grants.delete(callID);
    this.grants.set(callID, hash);
    if (this.grants.size > MAX_PENDING_GRANTS) this.grants.delete(this.grants.keys().next().value!);
  }

  /** Spends the grant of `callID`: `ok`, `none`, or `stale` (it was approved with other arguments). */
  take(callID: string, hash: string): 'ok' | 'none' | 'stale' {
    const granted = this.grants.get(callID);
    if (granted === undefined) return 'none';
    this.grants.delete(callID);
    return granted === hash ? 'ok' : 'stale';
  }
}
