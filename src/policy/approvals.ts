/**
 * Approvals bound to one call: the tool call id and a hash of its canonical arguments. A grant for
 * a call cannot be spent on another call or on the same call with edited arguments.
 * Must not decide whether a call needs approval or ask for it: policy.ts and middleware.ts do.
 */
import { createHash } from 'node:crypto';
import type { StoreScope } from '../store/scope.js';
import type { PolicyRule } from './types.js';

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
export class CallGrants {
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

/**
 * Where a registry with a store keeps "always" approvals (src/store/), so every process on that
 * store and namespace honours them: one record per approval (`<session>#<hash>`), so two approvals
 * given at once in two processes both land.
 */
export interface ApprovalRecords {
  /** The session's approvals, by check key. */
  get(sessionID: string): Promise<Map<string, PolicyRule>>;
  /** Records approvals for the session. */
  add(sessionID: string, entries: ReadonlyArray<[string, PolicyRule]>): Promise<void>;
}

/** The "always" approvals kept in a store scope. */
export function storedApprovals(scope: StoreScope): ApprovalRecords {
  return {
    async get(sessionID) {
      const items = await scope.all('approvals', { session: sessionID });
      const out = new Map<string, PolicyRule>();
      for (const item of items) {
        const v = scope.parsed('approvals', item, (value) =>
          value.v === 1 &&
          value.session === sessionID &&
          Array.isArray(value.check) &&
          value.check.every((p) => typeof p === 'string') &&
          value.rule &&
          typeof value.rule === 'object'
            ? { check: value.check.join('\0'), rule: value.rule as PolicyRule }
            : undefined,
        );
        out.set(v.check, v.rule);
      }
      return out;
    },
    async add(sessionID, entries) {
      for (const [check, rule] of entries) {
        const key = `${sessionID}#${createHash('sha256').update(check).digest('hex').slice(0, 32)}`;
        // The check key's parts are NUL-separated, which JSON stores (Postgres' jsonb) refuse: kept as a list.
        await scope.put('approvals', key, { v: 1, session: sessionID, check: check.split('\0'), rule: { ...rule } });
      }
    },
  };
}
