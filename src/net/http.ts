/**
 * One HTTP exchange for the API tools (http_request, REST and OpenAPI tools): any method, through
 * the SSRF guard, redirects followed by hand and re-checked (address policy and host allowlist),
 * one deadline, a byte cap on the (decompressed) body, and the body rendered for a model (JSON
 * parsed, text decoded, binary refused). It knows nothing of tools, configs or secrets.
 */
import type http from 'node:http';
import type { Readable } from 'node:stream';
import zlib from 'node:zlib';
import { formatBytes } from '../format.js';
import { BlockedAddressError, guardedRequest, normaliseHost, type CompiledPolicy } from './ssrf.js';

/** Largest response body the API tools accept (after decompression), in bytes. */
export const HTTP_MAX_RESPONSE_BYTES = 2 * 1024 * 1024;
/** Largest request body the API tools send, in bytes. */
export const HTTP_MAX_REQUEST_BYTES = 1024 * 1024;
/** Timeout of one exchange (connect, redirects, headers and body) when none is given, in seconds. */
export const HTTP_DEFAULT_TIMEOUT_SECONDS = 30;
/** Largest timeout a call may ask for, in seconds. */
export const HTTP_MAX_TIMEOUT_SECONDS = 120;
/** Redirects followed before giving up; each hop is checked again. */
export const HTTP_MAX_REDIRECTS = 5;
/** Characters of an error response's body quoted in the error. */
export const HTTP_ERROR_BODY_CHARS = 2000;
/** The request and response headers that survive a redirect to another origin (the rest, credentials included, are dropped). */
export const HTTP_CROSS_ORIGIN_HEADERS: readonly string[] = ['accept', 'accept-language', 'user-agent'];

/** One request. */
export interface HttpExchangeRequest {
  method: string;
  url: URL;
  headers: Record<string, string>;
  body?: Buffer;
}

/** How one request is sent. */
export interface HttpSendOptions {
  policy: CompiledPolicy;
  /** Host patterns (`api.example.com`, `*.example.com`); when given, every hop's host must match one. */
  allowedHosts?: readonly string[];
  timeoutMs: number;
  maxBytes?: number;
  signal?: AbortSignal;
  /** Told each time the request reaches a new stage (connecting, a redirect, reading the body). */
  onStage?: (stage: string) => void;
}

/** The response, its body read whole. */
export interface HttpExchangeResponse {
  status: number;
  statusText: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  finalUrl: URL;
  redirects: string[];
}

/** A failure the model can act on; its message says what happened and what to do. */
export class HttpFailure extends Error {
  override name = 'HttpFailure';
}

/** Whether `host` matches one of `patterns` (`example.com` exactly, `*.example.com` any subdomain). */
export function hostMatches(host: string, patterns: readonly string[]): boolean {
  const h = normaliseHost(host);
  return patterns.some((raw) => {
    const p = normaliseHost(raw);
    return p.startsWith('*.') ? h.endsWith(p.slice(1)) && h.length > p.length - 1 : h === p;
  });
}

function assertHostAllowed(url: URL, allowed: readonly string[] | undefined, via: string[]): void {
  if (!allowed || hostMatches(url.hostname, allowed)) return;
  const chain = via.length ? ` (reached through a redirect: ${[...via, url.href].join(' -> ')})` : '';
  throw new HttpFailure(
    `The host ${url.hostname} is not in this tool's allowed hosts (${allowed.join(', ') || 'none'})${chain}. ` +
      'No request was sent to it. Use one of the allowed hosts.',
  );
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** Sends `request`, following redirects, and reads the body under the cap. Throws `HttpFailure` or `BlockedAddressError`. */
export async function sendHttp(request: HttpExchangeRequest, options: HttpSendOptions): Promise<HttpExchangeResponse> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new TimeoutMark()), options.timeoutMs);
  const onAbort = () => controller.abort(options.signal?.reason ?? new Error('aborted'));
  if (options.signal?.aborted) onAbort();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  let current = request.url;
  let stage = `connecting to ${current.host}`;
  const setStage = (s: string) => {
    stage = s;
    options.onStage?.(s);
  };
  try {
    const { res, url, redirects } = await follow(request, options, controller.signal, (u, s) => {
      current = u;
      setStage(s);
    });
    setStage(`reading the body of ${url.href}`);
    const body = await readCapped(res, options.maxBytes ?? HTTP_MAX_RESPONSE_BYTES, url);
    return {
      status: res.statusCode ?? 0,
      statusText: res.statusMessage ?? '',
      headers: res.headers,
      body,
      finalUrl: url,
      redirects,
    };
  } catch (err) {
    if (controller.signal.aborted) {
      if (controller.signal.reason instanceof TimeoutMark)
        throw new HttpFailure(
          `${request.method} ${current.href} timed out after ${options.timeoutMs / 1000} s while ${stage}. ` +
            `The server is slow; retry with a larger timeout (max ${HTTP_MAX_TIMEOUT_SECONDS} s) or try later.`,
        );
      throw new HttpFailure(`${request.method} ${current.href} was aborted while ${stage}.`);
    }
    if (err instanceof HttpFailure || err instanceof BlockedAddressError) throw err;
    throw new HttpFailure(networkError(err, request.method, current));
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', onAbort);
  }
}

class TimeoutMark extends Error {}

async function follow(
  request: HttpExchangeRequest,
  options: HttpSendOptions,
  signal: AbortSignal,
  onHop: (url: URL, stage: string) => void,
): Promise<{ res: http.IncomingMessage; url: URL; redirects: string[] }> {
  const redirects: string[] = [];
  let { method, url, headers, body } = request;
  for (;;) {
    assertHostAllowed(url, options.allowedHosts, redirects.length ? [request.url.href, ...redirects.slice(0, -1)] : []);
    let res: http.IncomingMessage;
    try {
      res = await guardedRequest(url, { policy: options.policy, method, headers, body, signal });
    } catch (err) {
      if (err instanceof BlockedAddressError && redirects.length)
        throw new HttpFailure(`${err.message} (Reached through a redirect from ${request.url.href}.)`);
      throw err;
    }
    const status = res.statusCode ?? 0;
    const location = res.headers.location;
    if (!REDIRECTS.has(status) || !location) return { res, url, redirects };
    res.destroy();
    let next: URL;
    try {
      next = new URL(location, url);
    } catch {
      throw new HttpFailure(`${url.href} redirected (HTTP ${status}) to an invalid URL ${JSON.stringify(location)}.`);
    }
    if (redirects.length >= HTTP_MAX_REDIRECTS)
      throw new HttpFailure(
        `Too many redirects: more than ${HTTP_MAX_REDIRECTS} starting at ${request.url.href}. Call the final URL directly if you know it.`,
      );
    // 303 (and 301/302 after a non-GET, as browsers do) turns the request into a body-less GET.
    if (status === 303 || ((status === 301 || status === 302) && method !== 'GET' && method !== 'HEAD')) {
      method = method === 'HEAD' ? 'HEAD' : 'GET';
      body = undefined;
      headers = withoutBodyHeaders(headers);
    }
    // Credentials configured for one origin never travel to another.
    if (next.origin !== url.origin) headers = crossOriginHeaders(headers);
    redirects.push(next.href);
    url = next;
    onHop(url, `following a redirect to ${url.href}`);
  }
}

function withoutBodyHeaders(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([k]) => !/^content-/i.test(k)));
}

function crossOriginHeaders(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(headers).filter(([k]) => HTTP_CROSS_ORIGIN_HEADERS.includes(k.toLowerCase())),
  );
}

async function readCapped(res: http.IncomingMessage, limit: number, url: URL): Promise<Buffer> {
  const declared = Number(res.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    res.destroy();
    throw tooLarge(url, `its Content-Length is ${declared} bytes`, limit);
  }
  const encoding = String(res.headers['content-encoding'] ?? '')
    .trim()
    .toLowerCase();
  let stream: Readable = res;
  if (encoding === 'gzip' || encoding === 'x-gzip') stream = res.pipe(zlib.createGunzip());
  else if (encoding === 'deflate') stream = res.pipe(zlib.createInflate());
  else if (encoding === 'br') stream = res.pipe(zlib.createBrotliDecompress());
  else if (encoding && encoding !== 'identity') {
    res.destroy();
    throw new HttpFailure(
      `${url.href} answered with an unsupported Content-Encoding "${encoding}" (supported: gzip, deflate, br).`,
    );
  }
  res.once('error', (e) => stream.destroy(e));
  const chunks: Buffer[] = [];
  let total = 0;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      total += chunk.length;
      if (total > limit)
        throw tooLarge(url, `its body passed ${limit} bytes${encoding ? ' after decompression' : ''}`, limit);
      chunks.push(chunk);
    }
  } catch (err) {
    if (err instanceof HttpFailure) throw err;
    const code = (err as NodeJS.ErrnoException).code ?? '';
    if (code.startsWith('Z_'))
      throw new HttpFailure(
        `The ${encoding} body of ${url.href} could not be decompressed (${(err as Error).message}).`,
        { cause: err },
      );
    throw err;
  } finally {
    res.destroy();
  }
  return Buffer.concat(chunks, total);
}

function tooLarge(url: URL, what: string, limit: number): HttpFailure {
  return new HttpFailure(
    `The response of ${url.href} is too large: ${what}, over the ${formatBytes(limit)} limit, and it was not read. ` +
      'Ask the API for less (a page size, a filter, a narrower query).',
  );
}

function networkError(err: unknown, method: string, url: URL): string {
  const e = err as NodeJS.ErrnoException;
  const code = e?.code ?? '';
  const what =
    code === 'ENOTFOUND' || code === 'EAI_AGAIN'
      ? `the host ${url.hostname} could not be resolved (${code}); check the spelling of the domain`
      : code === 'ECONNREFUSED'
        ? `the connection to ${url.host} was refused; nothing is listening there`
        : code === 'ECONNRESET'
          ? 'the server closed the connection'
          : `${e?.message ?? String(err)}${code ? ` (${code})` : ''}`;
  return `${method} ${url.href} failed: ${what}. Check the URL, or try again later.`;
}

// ---------------------------------------------------------------------------------------------
// What the model reads

/** A response body as a model reads it. */
export interface RenderedBody {
  /** `json` (parsed and re-printed), `text`, or `empty`. */
  kind: 'json' | 'text' | 'empty';
  text: string;
  /** The parsed value, for `json`. */
  json?: unknown;
  contentType: string;
}

const TEXT_MIMES = new Set([
  'application/json',
  'application/xml',
  'application/javascript',
  'application/x-www-form-urlencoded',
  'application/yaml',
  'application/x-yaml',
  'application/x-ndjson',
  'application/graphql',
]);

/** Whether a MIME type is text a model can read. */
export function isTextMime(mime: string): boolean {
  return mime.startsWith('text/') || TEXT_MIMES.has(mime) || mime.endsWith('+json') || mime.endsWith('+xml');
}

/** The body as JSON (parsed), text, or a `HttpFailure` for binary content (with a note on what it was). */
export function renderBody(res: HttpExchangeResponse, method: string): RenderedBody {
  const header = String(res.headers['content-type'] ?? '');
  const [mimeRaw, ...params] = header.split(';');
  const mime = mimeRaw.trim().toLowerCase();
  if (res.body.length === 0) return { kind: 'empty', text: '', contentType: mime };
  const head = res.body.subarray(0, 1024);
  const looksBinary = head.includes(0);
  if ((mime && !isTextMime(mime)) || looksBinary) {
    throw new HttpFailure(
      `${method} ${res.finalUrl.href} answered HTTP ${res.status} with binary content (${mime || 'unknown type'}, ${formatBytes(res.body.length)}), ` +
        'which this tool does not return. Ask for a JSON or text representation (an Accept header, a format parameter), or use webfetch for images.',
    );
  }
  const charset = params
    .map((p) => p.trim().split('='))
    .find(([k]) => k.trim().toLowerCase() === 'charset')?.[1]
    ?.replace(/"/g, '');
  let text: string;
  try {
    text = new TextDecoder(charset || 'utf-8').decode(res.body);
  } catch {
    text = new TextDecoder('utf-8').decode(res.body);
  }
  if (mime === 'application/json' || mime.endsWith('+json') || (!mime && /^\s*[[{]/.test(text))) {
    try {
      const json: unknown = JSON.parse(text);
      return { kind: 'json', text: JSON.stringify(json, null, 2), json, contentType: mime || 'application/json' };
    } catch {
      return {
        kind: 'text',
        text: `(The body is declared as JSON but does not parse; shown as text.)\n${text}`,
        contentType: mime,
      };
    }
  }
  return { kind: 'text', text, contentType: mime || 'text/plain' };
}

/** The error for a non-2xx answer: status, URL, the start of the body, and what to do. */
export function statusFailure(res: HttpExchangeResponse, method: string): HttpFailure {
  let body: string;
  try {
    body = renderBody(res, method).text;
  } catch {
    body = ''; // a binary error body: the status says enough
  }
  const quoted = body.length > HTTP_ERROR_BODY_CHARS ? `${body.slice(0, HTTP_ERROR_BODY_CHARS)}...` : body;
  const advice =
    res.status === 404
      ? 'Check the path and the identifiers in it.'
      : res.status === 400 || res.status === 422
        ? 'Fix the request as the response says and try again.'
        : res.status === 401 || res.status === 403
          ? 'The API refused the credentials; calling again will not help.'
          : res.status === 429
            ? 'The API is rate limiting; wait before retrying.'
            : res.status >= 500
              ? 'The server failed; retry later.'
              : 'Check the request and try again.';
  return new HttpFailure(
    `${method} ${res.finalUrl.href} answered HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ''}.` +
      `${quoted ? ` The response body:\n${quoted}\n` : ' '}${advice}`,
  );
}

/** Reads a whole request body given as a string, refusing one over the cap. */
export function requestBody(body: string | undefined): Buffer | undefined {
  if (body === undefined) return undefined;
  const buf = Buffer.from(body, 'utf8');
  if (buf.length > HTTP_MAX_REQUEST_BYTES)
    throw new HttpFailure(
      `The request body is ${formatBytes(buf.length)}, over the ${formatBytes(HTTP_MAX_REQUEST_BYTES)} limit. Send less data per request.`,
    );
  return buf;
}
