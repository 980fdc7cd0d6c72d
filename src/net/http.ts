/**
 * One HTTP exchange for the API tools (http_request, REST and OpenAPI tools): any method, through
 * the SSRF guard with redirects followed by src/net/redirects.ts (each hop re-checked), one
 * deadline, a byte cap on the (decompressed) body, and the body rendered for a model (JSON parsed,
 * text decoded, binary refused). It knows nothing of tools, configs or secrets.
 */
import type http from 'node:http';
import type { Readable } from 'node:stream';
import zlib from 'node:zlib';
import { formatBytes } from '../text/format.js';
import { networkFailure } from './network-error.js';
import { cutScrubbed } from './scrub.js';
import { BlockedAddressError, type CompiledPolicy } from './ssrf.js';
import { followRedirects, RedirectFailure } from './redirects.js';

/** Largest response body the API tools accept (after decompression), in bytes. */
export const HTTP_MAX_RESPONSE_BYTES = 2 * 1024 * 1024;
/** Largest request body the API tools send, in bytes. */
export const HTTP_MAX_REQUEST_BYTES = 1024 * 1024;
/** Timeout of one exchange (connect, redirects, headers and body) when none is given, in seconds. */
export const HTTP_DEFAULT_TIMEOUT_SECONDS = 30;
/** Largest timeout a call may ask for, in seconds. */
export const HTTP_MAX_TIMEOUT_SECONDS = 120;
/** Characters of an error response's body quoted in the error. */
export const HTTP_ERROR_BODY_CHARS = 2000;

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
  /** The tool policy's word on each redirect target (`ctx.checkUrl`); see `FollowOptions.checkHop`. */
  checkHop?: (url: string) => Promise<string | undefined>;
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

/** Sends `request`, following redirects, and reads the body under the cap. Throws `HttpFailure`, `RedirectFailure` or `BlockedAddressError`. */
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
    const { res, url, redirects } = await followRedirects(request, {
      policy: options.policy,
      allowedHosts: options.allowedHosts,
      checkHop: options.checkHop,
      signal: controller.signal,
      onRedirect: (u) => {
        current = u;
        setStage(`following a redirect to ${u.href}`);
      },
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
    if (err instanceof HttpFailure || err instanceof RedirectFailure || err instanceof BlockedAddressError) throw err;
    throw new HttpFailure(
      `${request.method} ${current.href} failed: ${networkFailure(err, current, { stage })}. Check the URL, or try again later.`,
    );
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', onAbort);
  }
}

class TimeoutMark extends Error {}

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
function isTextMime(mime: string): boolean {
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

/**
 * The error for a non-2xx answer: status, URL, the start of the body, and what to do. The body is
 * scrubbed of `secrets` before it is cut to HTTP_ERROR_BODY_CHARS (see `cutScrubbed`).
 */
export function statusFailure(res: HttpExchangeResponse, method: string, secrets: readonly string[] = []): HttpFailure {
  let body: string;
  try {
    body = renderBody(res, method).text;
  } catch {
    body = ''; // a binary error body: the status says enough
  }
  const quoted = cutScrubbed(body, HTTP_ERROR_BODY_CHARS, secrets);
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
