/**
 * One API call as a tool result: cache lookup, the guarded exchange, status check, the body
 * rendered for the model, progress — with every secret scrubbed from all of it, errors included.
 * Shared by http_request and the REST/OpenAPI tools; it knows nothing of their arguments.
 */
import type { Tool } from '../tool.js';
import { formatBytes } from '../format.js';
import { scrubText } from './scrub.js';
import type { CompiledPolicy } from './ssrf.js';
import { renderBody, sendHttp, statusFailure, type HttpExchangeRequest } from './http.js';
import { ResponseCache } from './response-cache.js';

/** What an API tool's result reports besides its text. */
export interface ApiCallMetadata extends Tool.Metadata {
  method: string;
  url: string;
  status: number;
  contentType: string;
  bytes: number;
  redirects: string[];
  /** Whether the response came from the registry's cache (identical GET within the TTL). */
  cached: boolean;
  /** How old the cached response is, in seconds (present when `cached`). */
  ageSeconds?: number;
}

/** How one call is made. */
export interface ApiCallOptions {
  request: HttpExchangeRequest;
  policy: CompiledPolicy;
  allowedHosts?: readonly string[];
  timeoutMs: number;
  /** Values that must never be shown: scrubbed (raw, URL-encoded and decoded) from results, errors and progress. */
  secrets: readonly string[];
  /** Serve identical GETs from this cache for `ttlMs`. */
  cache?: { store: ResponseCache; ttlMs: number };
  ctx: Tool.Context;
}

/** Every form a secret may take in text we show: as given, URL-encoded, form-encoded and decoded. */
export function secretForms(secrets: readonly string[]): string[] {
  const out = new Set<string>();
  for (const s of secrets) {
    // Too short to scrub without mangling ordinary text; a secret that short is not a secret.
    if (s.length < 4) continue;
    out.add(s);
    out.add(encodeURIComponent(s));
    out.add(new URLSearchParams({ s }).toString().slice(2));
    try {
      out.add(decodeURIComponent(s));
    } catch {
      // not percent-encoded
    }
  }
  // Longest first, so a secret inside a longer one's encoding is not half-replaced.
  return [...out].sort((a, b) => b.length - a.length);
}

/** The user and password of a URL string (`scheme://user:pass@host`), to scrub from what is shown. */
export function urlCredentials(raw: string): string[] {
  const m = /^\s*[a-z][a-z0-9+.-]*:\/\/([^/?#\s]*)@/i.exec(raw);
  return m ? m[1].split(':').filter(Boolean) : [];
}

/** Runs the call and returns its result; throws an `Error` whose message is scrubbed. */
export async function callApi(options: ApiCallOptions): Promise<Tool.Result<ApiCallMetadata>> {
  const secrets = secretForms(options.secrets);
  const scrub = (text: string) => scrubText(text, secrets);
  const { request, ctx } = options;
  const shownUrl = scrub(request.url.href);
  try {
    const key = options.cache && request.method === 'GET' ? ResponseCache.key('GET', request.url, request.headers) : '';
    const hit = key ? await options.cache!.store.get(key, options.cache!.ttlMs, ctx) : undefined;
    let response = hit?.response;
    if (!response) {
      ctx.metadata({ title: `${request.method} ${shownUrl}`, metadata: { url: shownUrl } });
      response = await sendHttp(request, {
        policy: options.policy,
        allowedHosts: options.allowedHosts,
        timeoutMs: options.timeoutMs,
        signal: ctx.abort,
        onStage: (stage) => ctx.metadata({ title: scrub(`${request.method} ${shownUrl}: ${stage}`) }),
      });
    }
    if (response.status < 200 || response.status > 299) throw statusFailure(response, request.method);
    const body = renderBody(response, request.method);
    if (key && !hit) await options.cache!.store.set(key, response, ctx);
    const metadata: ApiCallMetadata = {
      method: request.method,
      url: shownUrl,
      status: response.status,
      contentType: body.contentType,
      bytes: response.body.length,
      redirects: response.redirects.map(scrub),
      cached: Boolean(hit),
      ...(hit ? { ageSeconds: Math.floor(hit.ageMs / 1000) } : {}),
    };
    const from = hit ? `, cached ${metadata.ageSeconds} s ago` : '';
    const head = `HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ''} (${body.contentType || 'no content type'}, ${formatBytes(response.body.length)}${from})`;
    return {
      title: scrub(`${request.method} ${request.url.href} -> ${response.status}`),
      metadata,
      output: scrub(body.kind === 'empty' ? `${head}\n(empty body)` : `${head}\n${body.text}`),
    };
  } catch (err) {
    // No `cause`: the original error may carry the secrets this message scrubs.
    // eslint-disable-next-line preserve-caught-error
    throw new Error(scrub(err instanceof Error ? err.message : String(err)));
  }
}
