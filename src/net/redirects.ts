/**
 * Redirects followed by hand, once for every client that goes through the SSRF guard (webfetch,
 * http_request, the REST and OpenAPI tools): each hop sent through `guardedRequest` again and
 * checked against an optional host allowlist, at most MAX_REDIRECTS hops, a repeated request
 * refused as a loop, each target judged by the tool policy (`checkHop`) before it is requested,
 * the method and body rewritten for 301/302/303, and only harmless headers carried to another origin. Every refusal is one sentence naming the hop and the chain.
 * Must not read bodies, keep cookies or decide which addresses are reachable (src/net/ssrf.ts does).
 */
import type http from 'node:http';
import { BlockedAddressError, guardedRequest, normaliseHost, type CompiledPolicy } from './ssrf.js';

/** Redirects followed before giving up; every hop is checked by the SSRF guard (and any host allowlist) again. */
export const MAX_REDIRECTS = 5;
/**
 * The request headers that travel on when a redirect leads to another origin (scheme, host or
 * port); the rest, `Authorization`, `Cookie` and API-key headers included, are dropped. When a
 * 307/308 carries the body on, its `Content-Type` goes with it.
 */
export const HTTP_CROSS_ORIGIN_HEADERS: readonly string[] = [
  'accept',
  'accept-encoding',
  'accept-language',
  'user-agent',
];

/** One request as sent to the first hop. */
export interface HopRequest {
  method: string;
  url: URL;
  headers: Record<string, string>;
  body?: Buffer;
}

/** How the hops are sent and checked. */
export interface FollowOptions {
  policy: CompiledPolicy;
  signal?: AbortSignal;
  /** Host patterns (`api.example.com`, `*.example.com`); when given, every hop's host must match one. */
  allowedHosts?: readonly string[];
  /** Told each time a redirect is about to be followed, with the URL of the next hop. */
  onRedirect?: (url: URL) => void;
  /**
   * The tool policy's word on each redirect target before it is requested (a tool passes
   * `ctx.checkUrl`): undefined to follow it, else a clause saying why not, and the hop is refused.
   */
  checkHop?: (url: string) => Promise<string | undefined>;
}

/** The final response (its body not read yet), where it came from, and each hop's URL. */
export interface Followed {
  res: http.IncomingMessage;
  url: URL;
  /** The URL of every redirect target, in order (empty when the first answer was final). */
  redirects: string[];
}

/** A hop refused (host allowlist; SSRF guard past the first hop) or a redirect not followed; the message names the hop, why, and what to do. */
export class RedirectFailure extends Error {
  override name = 'RedirectFailure';
}

/** Whether `host` matches one of `patterns` (`example.com` exactly, `*.example.com` any subdomain). */
export function hostMatches(host: string, patterns: readonly string[]): boolean {
  const h = normaliseHost(host);
  return patterns.some((raw) => {
    const p = normaliseHost(raw);
    return p.startsWith('*.') ? h.endsWith(p.slice(1)) && h.length > p.length - 1 : h === p;
  });
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

/**
 * Sends `request` and follows its redirects, returning the first answer that is not one (a 3xx
 * without a Location is an answer). Throws `RedirectFailure` for a refused or bad hop, and
 * `BlockedAddressError` (or a network error) from the first hop as `guardedRequest` does.
 */
export async function followRedirects(request: HopRequest, options: FollowOptions): Promise<Followed> {
  const chain = [request.url.href];
  const sent = new Set([requestKey(request)]);
  let hop = request;
  for (;;) {
    const res = await sendHop(hop, options, chain);
    const status = res.statusCode ?? 0;
    const location = res.headers.location;
    if (!REDIRECT_STATUSES.has(status) || !location) return { res, url: hop.url, redirects: chain.slice(1) };
    res.destroy();
    const next = nextHop(hop, status, location);
    chain.push(next.url.href);
    if (sent.has(requestKey(next)))
      throw new RedirectFailure(
        `Redirect loop: ${hop.url.href} redirected (HTTP ${status}) back to ${next.url.href}, which was already requested: ` +
          `${chain.join(' -> ')}. The server redirects in a circle (it may expect cookies, which are not kept); use another URL.`,
      );
    if (chain.length - 1 > MAX_REDIRECTS)
      throw new RedirectFailure(
        `Too many redirects: more than ${MAX_REDIRECTS} starting at ${request.url.href}, the last to ${next.url.href}: ` +
          `${chain.join(' -> ')}. Use the final URL directly if you know it, or give up on this URL.`,
      );
    const refusal = await options.checkHop?.(next.url.href);
    if (refusal !== undefined)
      throw new RedirectFailure(
        `Redirect refused by the policy: ${hop.url.href} redirected (HTTP ${status}) to ${next.url.href}, and ${refusal}. ` +
          `No request was sent to ${next.url.href} (chain: ${chain.join(' -> ')}). Use a URL whose redirects stay where the policy allows, or ask the user to allow that host.`,
      );
    sent.add(requestKey(next));
    hop = next;
    options.onRedirect?.(hop.url);
  }
}

/** One hop through the guard; a refusal past the first hop names the chain that led there. */
async function sendHop(hop: HopRequest, options: FollowOptions, chain: string[]): Promise<http.IncomingMessage> {
  const via = chain.length > 1 ? chain.join(' -> ') : '';
  if (options.allowedHosts && !hostMatches(hop.url.hostname, options.allowedHosts))
    throw new RedirectFailure(
      `The host ${hop.url.hostname} is not in this tool's allowed hosts (${options.allowedHosts.join(', ') || 'none'})` +
        `${via ? ` (reached through a redirect: ${via})` : ''}. No request was sent to it. Use one of the allowed hosts.`,
    );
  try {
    const { method, headers, body } = hop;
    return await guardedRequest(hop.url, { policy: options.policy, method, headers, body, signal: options.signal });
  } catch (err) {
    if (err instanceof BlockedAddressError && via)
      throw new RedirectFailure(`${err.message} (Reached through a redirect: ${via}.)`);
    throw err;
  }
}

/** The request the redirect asks for: its URL resolved, the method and body rules applied, headers kept or dropped. */
function nextHop(hop: HopRequest, status: number, location: string): HopRequest {
  let url: URL;
  try {
    url = new URL(location, hop.url);
  } catch {
    throw new RedirectFailure(
      `${hop.url.href} redirected (HTTP ${status}) to an invalid URL ${JSON.stringify(location)}. Try another URL.`,
    );
  }
  let { method, headers, body } = hop;
  // 303 (and 301/302 after anything but GET or HEAD, as browsers do) turns the request into a
  // body-less GET; 307 and 308 keep the method and the body.
  if (status === 303 || ((status === 301 || status === 302) && method !== 'GET' && method !== 'HEAD')) {
    method = method === 'HEAD' ? 'HEAD' : 'GET';
    body = undefined;
    headers = pick(headers, (name) => !name.startsWith('content-'));
  }
  // Credentials configured for one origin never travel to another.
  if (url.origin !== hop.url.origin)
    headers = pick(
      headers,
      (name) => HTTP_CROSS_ORIGIN_HEADERS.includes(name) || (body !== undefined && name === 'content-type'),
    );
  return { method, url, headers, body };
}

function pick(headers: Record<string, string>, keep: (lowerName: string) => boolean): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => keep(name.toLowerCase())));
}

/** Two hops are the same request when method, URL and the headers sent (by name) are. */
function requestKey(hop: HopRequest): string {
  const names = Object.keys(hop.headers)
    .map((n) => n.toLowerCase())
    .sort();
  return `${hop.method} ${hop.url.href} ${names.join(',')}`;
}
