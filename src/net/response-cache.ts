/**
 * The response cache of the API tools: identical GETs within a TTL are answered from memory, or
 * from the registry's store (src/store/) when it has one, so replicas share it. One cache per
 * registry (kept in its tenant) and store namespace, so tenants never see each other's responses;
 * inside it, each entry is keyed by its owner (the tool and the guard settings it runs under), so a
 * tool never reads what another tool, or the same tool under a looser guard, was allowed to fetch.
 * Must not decide whether a hit may be served (api-call.ts re-checks it); the interface is
 * get/set by an opaque key, so the store behind it can change.
 */
import { createHash } from 'node:crypto';
import type { Tool } from '../authoring/tool.js';
import { tenantOf } from '../workspace/tenant.js';
import { storeScope, type ScopeContext, type StoreScope } from '../store/scope.js';
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

  /** `now` is the clock (ms); tests pass their own. `scopeOf`: the store scope of a call, when the registry has a store. */
  constructor(
    private readonly now: () => number = Date.now,
    private readonly scopeOf: (ctx: ScopeContext) => StoreScope | undefined = () => undefined,
  ) {}

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

  /** The response stored under `key` if it is younger than `ttlMs` (from the store of `ctx`'s registry when it has one). */
  get(key: string, ttlMs: number): CacheHit | undefined;
  get(key: string, ttlMs: number, ctx: ScopeContext): CacheHit | undefined | Promise<CacheHit | undefined>;
  get(key: string, ttlMs: number, ctx?: ScopeContext): CacheHit | undefined | Promise<CacheHit | undefined> {
    const scope = ctx && this.scopeOf(ctx);
    if (scope) return this.getStored(scope, key, ttlMs);
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
  set(key: string, response: HttpExchangeResponse, ctx?: ScopeContext): void | Promise<void> {
    if (response.status < 200 || response.status > 299 || response.body.length > HTTP_CACHE_MAX_BODY_BYTES) return;
    const scope = ctx && this.scopeOf(ctx);
    if (scope) return this.setStored(scope, key, response);
    this.entries.delete(key);
    this.entries.set(key, { response, storedAt: this.now() });
    while (this.entries.size > HTTP_CACHE_MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
  }

  /** Responses held now (in this process). */
  get size(): number {
    return this.entries.size;
  }

  private async getStored(scope: StoreScope, key: string, ttlMs: number): Promise<CacheHit | undefined> {
    const entry = await scope.get('httpCache', key, parseEntry);
    if (!entry) return undefined;
    const ageMs = this.now() - entry.storedAt;
    if (ageMs >= ttlMs) return undefined;
    return { response: entry.response, ageMs };
  }

  /** One record per response; past HTTP_CACHE_MAX_ENTRIES the oldest records are deleted. */
  private async setStored(scope: StoreScope, key: string, response: HttpExchangeResponse): Promise<void> {
    await scope.put('httpCache', key, {
      v: CACHE_RECORD_VERSION,
      storedAt: this.now(),
      response: {
        status: response.status,
        statusText: response.statusText,
        headers: response.headers,
        body: response.body.toString('base64'),
        finalUrl: response.finalUrl.href,
        redirects: response.redirects,
      },
    });
    const all = await scope.all('httpCache');
    for (const old of all.slice(0, Math.max(0, all.length - HTTP_CACHE_MAX_ENTRIES)))
      await scope.delete('httpCache', old.key);
  }
}

/** The version of a cached response's record in a store. */
const CACHE_RECORD_VERSION = 1;

function parseEntry(v: Record<string, unknown>): { response: HttpExchangeResponse; storedAt: number } | undefined {
  const r = v.response as Record<string, unknown> | undefined;
  if (v.v !== CACHE_RECORD_VERSION || typeof v.storedAt !== 'number' || !r || typeof r !== 'object') return undefined;
  if (
    typeof r.status !== 'number' ||
    typeof r.statusText !== 'string' ||
    typeof r.body !== 'string' ||
    typeof r.finalUrl !== 'string' ||
    !r.headers ||
    typeof r.headers !== 'object' ||
    !Array.isArray(r.redirects)
  )
    return undefined;
  let finalUrl: URL;
  try {
    finalUrl = new URL(r.finalUrl);
  } catch {
    return undefined;
  }
  return {
    storedAt: v.storedAt,
    response: {
      status: r.status,
      statusText: r.statusText,
      headers: r.headers as HttpExchangeResponse['headers'],
      body: Buffer.from(r.body, 'base64'),
      finalUrl,
      redirects: (r.redirects as unknown[]).map(String),
    },
  };
}

const CACHE = Symbol('agent-toolbelt.http-cache');

/** The response cache of the registry that initialised a tool with `initCtx`. */
export function responseCacheOf(initCtx: Tool.InitContext | undefined): ResponseCache {
  const tenant = tenantOf(initCtx);
  return tenant.slot(CACHE, () => new ResponseCache(Date.now, (ctx) => storeScope(tenant, ctx)));
}
