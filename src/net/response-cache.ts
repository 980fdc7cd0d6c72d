/**
 * The response cache of the API tools: identical GETs within a TTL are answered from memory.
 * One cache per registry (kept in its tenant), so tenants never see each other's responses; inside
 * it, each entry is keyed by its owner (the tool and the guard settings it runs under), so a tool
 * never reads what another tool, or the same tool under a looser guard, was allowed to fetch.
 * Must not decide whether a hit may be served (api-call.ts re-checks it); the interface is
 * get/set by an opaque key, so the store behind it can change.
 */
import { createHash } from 'node:crypto';
import type { Tool } from '../tool.js';
import { tenantOf } from '../tenant.js';
import type { HttpExchangeResponse } from './http.js';

/** Responses one registry's cache keeps; the least recently used goes first. */
export const HTTP_CACHE_MAX_ENTRIES = 256;
/** Largest response body the cache keeps, in bytes (larger ones are always fetched again). */
export const HTTP_CACHE_MAX_BODY_BYTES = 256 * 1024;

/** A cached response and how old it is. */
export interface CacheHit {
  response: HttpExchangeResponse;
  ageMs: number;
}

/** An in-memory LRU of GET responses with a per-lookup TTL. */
export class ResponseCache {
  private readonly entries = new Map<string, { response: HttpExchangeResponse; storedAt: number }>();

  /** `now` is the clock (ms); tests pass their own. */
  constructor(private readonly now: () => number = Date.now) {}

  /**
   * The key of a request: who asks (`owner`: the tool's identity and its guard settings), method,
   * URL and headers (names in any case), hashed (header values may be credentials).
   */
  static key(owner: string, method: string, url: URL, headers: Record<string, string>): string {
    const sorted = Object.entries(headers)
      .map(([k, v]) => [k.toLowerCase(), v])
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return createHash('sha256')
      .update(JSON.stringify([owner, method, url.href, sorted]))
      .digest('hex');
  }

  /** The response stored under `key` if it is younger than `ttlMs`. */
  get(key: string, ttlMs: number): CacheHit | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    const ageMs = this.now() - entry.storedAt;
    if (ageMs >= ttlMs) {
      this.entries.delete(key);
      return undefined;
    }
    this.entries.delete(key);
    this.entries.set(key, entry);
    return { response: entry.response, ageMs };
  }

  /** Stores a response (2xx, body within HTTP_CACHE_MAX_BODY_BYTES; others are ignored). */
  set(key: string, response: HttpExchangeResponse): void {
    if (response.status < 200 || response.status > 299 || response.body.length > HTTP_CACHE_MAX_BODY_BYTES) return;
    this.entries.delete(key);
    this.entries.set(key, { response, storedAt: this.now() });
    while (this.entries.size > HTTP_CACHE_MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
  }

  /** Responses held now. */
  get size(): number {
    return this.entries.size;
  }
}

const CACHE = Symbol('agent-toolbelt.http-cache');

/** The response cache of the registry that initialised a tool with `initCtx`. */
export function responseCacheOf(initCtx: Tool.InitContext | undefined): ResponseCache {
  return tenantOf(initCtx).slot(CACHE, () => new ResponseCache());
}
