/**
 * One API call as a tool result: cache lookup, the guarded exchange, status check, the body
 * rendered for the model, progress — with every secret scrubbed from all of it, errors included.
 * Shared by http_request and the REST/OpenAPI tools; it knows nothing of their arguments.
 */
import type { Tool } from '../authoring/tool.js';
import { formatBytes } from '../text/format.js';
import { scrubText, sentSecretForms } from './scrub.js';
import { assertUrlAllowed, type CompiledPolicy } from './ssrf.js';
import { renderBody, sendHttp, statusFailure, type HttpExchangeRequest, type HttpExchangeResponse } from './http.js';
import { hostMatches } from './redirects.js';
import { ResponseCache } from './response-cache.js';
import { errorMessage } from '../text/describe.js';

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
  /**
   * Values that must never be shown: scrubbed from results, errors and progress in every form the
   * request carries them (see `sentSecretForms`: encodings, Basic credentials, header values).
   */
  secrets: readonly string[];
  /**
   * Serve identical GETs from this cache for `ttlMs`. `owner` names the tool (its id); entries are
   * keyed by it and by the guard settings (policy, allowed hosts), and a hit is checked again
   * against them before it is served.
   */
  cache?: { store: ResponseCache; ttlMs: number; owner: string };
  ctx: Tool.Context;
}

/** Who owns a cache entry: the tool and the guard it runs under (the same tool under another policy is another owner). */
function cacheOwner(options: ApiCallOptions): string {
  const { source } = options.policy;
  return JSON.stringify([
    options.cache?.owner ?? '',
    options.policy.allowPrivateNetwork,
    [...(source.allow ?? [])].sort(),
    [...(source.deny ?? [])].sort(),
    options.allowedHosts ? [...options.allowedHosts].map((h) => h.toLowerCase()).sort() : null,
  ]);
}

/**
 * Whether a cached response may be served to this call: every URL it came through (the request's
 * and the final one, and any hop, though answers reached through a redirect are not stored) passes
 * this call's host allowlist and address policy, as a fresh exchange would have to. A refused hit
 * is not served: the call goes out and is refused there.
 */
function servable(response: HttpExchangeResponse, options: ApiCallOptions): boolean {
  const hops = [options.request.url, ...response.redirects.map((r) => new URL(r)), response.finalUrl];
  return hops.every((url) => {
    if (options.allowedHosts && !hostMatches(url.hostname, options.allowedHosts)) return false;
    try {
      assertUrlAllowed(url, options.policy);
      return true;
    } catch {
      return false;
    }
  });
}

/** Runs the call and returns its result; throws an `Error` whose message is scrubbed. */
export async function callApi(options: ApiCallOptions): Promise<Tool.Result<ApiCallMetadata>> {
  const { request, ctx } = options;
  const secrets = sentSecretForms(options.secrets, request);
  const scrub = (text: string) => scrubText(text, secrets);
  const shownUrl = scrub(request.url.href);
  try {
    const key =
      options.cache && request.method === 'GET'
        ? ResponseCache.key(cacheOwner(options), 'GET', request.url, request.headers)
        : '';
    const stored = key ? await options.cache!.store.get(key, options.cache!.ttlMs, ctx) : undefined;
    const hit = stored && servable(stored.response, options) ? stored : undefined;
    let response = hit?.response;
    if (!response) {
      ctx.metadata({ title: `${request.method} ${shownUrl}`, metadata: { url: shownUrl } });
      response = await sendHttp(request, {
        policy: options.policy,
        allowedHosts: options.allowedHosts,
        timeoutMs: options.timeoutMs,
        signal: ctx.abort,
        checkHop: ctx.checkUrl?.bind(ctx),
        onStage: (stage) => ctx.metadata({ title: scrub(`${request.method} ${shownUrl}: ${stage}`) }),
      });
    }
    if (response.status < 200 || response.status > 299) throw statusFailure(response, request.method, secrets);
    const body = renderBody(response, request.method);
    // A response reached through a redirect is not kept: serving it later would skip judging its
    // hops (the pipeline's policy judges only the URL asked for, which is the key).
    if (key && !hit && response.redirects.length === 0) await options.cache!.store.set(key, response, ctx);
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
    throw new Error(scrub(errorMessage(err)));
  }
}
