/**
 * webfetch: GET one http(s) URL through the SSRF guard and return it as markdown, text or raw
 * HTML; other text types as text, images as attachments. Redirects are followed by
 * src/net/redirects.ts (each hop re-checked), the body is streamed under a byte cap that also
 * bounds decompressed size, and one deadline covers connect, redirects, headers and body.
 * Must not decide which addresses are reachable (src/net/ssrf.ts does) nor follow redirects itself.
 * Over 400 lines: the request, decoding and conversion steps of one fetch; the hardening helper moves conversion into a worker.
 */
import type http from 'node:http';
import { Readable, pipeline } from 'node:stream';
import zlib from 'node:zlib';
import { z } from 'zod';
import { Tool } from '../../authoring/tool.js';
import { formatBytes } from '../../text/format.js';
import { PROGRESS_INTERVAL_MS, Throttle } from '../../authoring/progress.js';
import { descriptionBeside } from '../../authoring/description.js';
import {
  convertHtml,
  ConvertTimeoutError,
  MAX_CONVERT_MS,
  MAX_HTML_ELEMENTS,
  MAX_HTML_PARSE_ELEMENTS,
  type Converted,
} from './html-convert.js';
import { BlockedAddressError, policyFromInitContext, type CompiledPolicy } from '../../net/ssrf.js';
import { followRedirects, RedirectFailure } from '../../net/redirects.js';
import { cutScrubbed, scrubText, sentSecretForms, urlCredentials } from '../../net/scrub.js';
import { networkFailure } from '../../net/network-error.js';
import { errorMessage } from '../../text/describe.js';

/** Largest body accepted, checked on Content-Length and on the (decompressed) bytes read. */
export const MAX_RESPONSE_BYTES = 5 * 1024 * 1024;
/** Timeout in seconds when the call gives none. */
export const DEFAULT_TIMEOUT_SECONDS = 30;
/** Largest timeout a call may ask for, in seconds. */
export const MAX_TIMEOUT_SECONDS = 120;
/** Body bytes read from an error response to quote in the error. */
export const ERROR_BODY_BYTES = 8 * 1024;
/** Characters of an error response quoted in the error message. */
export const ERROR_SNIPPET_CHARS = 300;
/** Progress is reported after this many new bytes, or PROGRESS_INTERVAL_MS (src/authoring/progress.ts), whichever comes first. */
export const PROGRESS_EVERY_BYTES = 256 * 1024;
/** Image types returned as attachments (what vision models accept). */
export const IMAGE_TYPES: ReadonlySet<string> = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);
/** Non-`text/*` types returned as text. Types ending in `+json` or `+xml` count too. */
export const TEXT_TYPES: ReadonlySet<string> = new Set([
  'application/json',
  'application/ld+json',
  'application/x-ndjson',
  'application/xml',
  'application/javascript',
  'application/ecmascript',
  'application/x-javascript',
  'application/x-sh',
  'application/yaml',
  'application/x-yaml',
  'application/toml',
  'application/graphql',
  'application/sql',
  'application/x-www-form-urlencoded',
]);
/** Elements removed with everything inside them before HTML becomes markdown or text. */
export const DROPPED_ELEMENTS: readonly string[] = [
  'script',
  'style',
  'noscript',
  'template',
  'iframe',
  'frame',
  'frameset',
  'object',
  'embed',
  'applet',
  'svg',
  'canvas',
  'math',
  'nav',
  'header',
  'footer',
  'form',
  'button',
  'select',
  'option',
  'textarea',
  'input',
  'dialog',
];

const USER_AGENT = 'Mozilla/5.0 (compatible; agent-toolbelt-webfetch/0.1)';
const ACCEPT: Record<Format, string> = {
  markdown: 'text/markdown;q=1.0, text/x-markdown;q=0.9, text/html;q=0.8, text/plain;q=0.7, */*;q=0.1',
  text: 'text/plain;q=1.0, text/markdown;q=0.9, text/html;q=0.8, */*;q=0.1',
  html: 'text/html;q=1.0, application/xhtml+xml;q=0.9, text/plain;q=0.8, */*;q=0.1',
};

type Format = 'markdown' | 'text' | 'html';

function requestHeaders(format: Format): Record<string, string> {
  return {
    'User-Agent': USER_AGENT,
    Accept: ACCEPT[format],
    'Accept-Encoding': 'gzip, deflate, br',
    'Accept-Language': 'en;q=1.0, *;q=0.5',
  };
}

const parameters = z.object({
  url: z.string().describe('The http:// or https:// URL to fetch.'),
  format: z
    .enum(['markdown', 'text', 'html'])
    .optional()
    .describe(
      'How to return an HTML page: "markdown" (default; scripts, styles and navigation removed), "text" (tags stripped) or "html" (as received).',
    ),
  // min(1), not positive(): an exclusive bound is refused by Gemini; execute still accepts any
  // value above 0 from direct callers.
  timeout: z
    .number()
    .min(1)
    .max(MAX_TIMEOUT_SECONDS)
    .optional()
    .describe(
      `Seconds for the whole fetch: connect, headers and body (default ${DEFAULT_TIMEOUT_SECONDS}, max ${MAX_TIMEOUT_SECONDS}).`,
    ),
});

/** What a webfetch result reports besides its text. */
export interface WebfetchMetadata extends Tool.Metadata {
  url: string;
  finalUrl: string;
  status: number;
  contentType: string;
  /** Body bytes after decompression. */
  bytes: number;
  format: Format;
  redirects: string[];
  /**
   * Set when the page had more elements than MAX_HTML_ELEMENTS (markdown) or MAX_HTML_PARSE_ELEMENTS
   * and was cut there (the output says so first). Not `truncated`: that key tells the pipeline the
   * tool capped its output itself, and the pipeline's cap must still apply.
   */
  truncatedAtElements?: number;
}

export const WebfetchTool = Tool.define(
  {
    id: 'webfetch',
    permissions: { required: ['network'] },
    descriptionPath: descriptionBeside(import.meta.url, 'webfetch'),
    danger: 'moderate',
  },
  async (initCtx) => {
    const policy = policyFromInitContext(initCtx);
    return {
      description:
        'Fetch a public http(s) URL and return it as markdown (default), text or html; images as attachments.',
      parameters,
      // webfetch keeps its own deadline (the `timeout` argument); the registry's limit is only a backstop.
      timeout: { managed: true, maxMs: (MAX_TIMEOUT_SECONDS + 5) * 1000 },
      annotations: { readOnlyHint: true, openWorldHint: true, idempotentHint: true, title: 'Fetch a web page' },
      async execute(args: z.infer<typeof parameters>, ctx: Tool.Context) {
        // Credentials in a URL (user:password@) are used for the request but never shown: every text
        // that leaves the tool, result or error, is scrubbed of them.
        const secrets = credentialsIn(args.url);
        try {
          const format: Format = args.format ?? 'markdown';
          const timeoutSeconds = checkTimeout(args.timeout);
          const start = parseUrl(args.url);
          // Progress (titles name the URL) is scrubbed the same way.
          const quiet: Tool.Context = Object.assign(Object.create(ctx) as Tool.Context, {
            metadata: (u: Tool.MetadataUpdate) =>
              ctx.metadata(JSON.parse(scrubText(JSON.stringify(u), secrets)) as Tool.MetadataUpdate),
          });
          return scrubResult(await fetchAndConvert(start, format, timeoutSeconds, policy, quiet), secrets);
        } catch (err) {
          // No `cause`: the original error still carries the URL's credentials this message scrubs.
          // eslint-disable-next-line preserve-caught-error
          throw new Error(scrubText(errorMessage(err), secrets));
        }
      },
    };
  },
);

// ---------------------------------------------------------------------------------------------
// Fetching

class FetchFailure extends Error {}

/** Tracks where the fetch is, so a timeout or abort can say what it interrupted. */
interface Progress {
  phase: string;
  bytes: number;
}

async function fetchAndConvert(
  start: URL,
  format: Format,
  timeoutSeconds: number,
  policy: CompiledPolicy,
  ctx: Tool.Context,
): Promise<Tool.Result<WebfetchMetadata>> {
  if (ctx.abort.aborted) throw new FetchFailure(`webfetch of ${start.href} was aborted before it started.`);
  const controller = new AbortController();
  const progress: Progress = { phase: `connecting to ${start.host}`, bytes: 0 };
  const timer = setTimeout(() => controller.abort(new TimeoutSignal()), timeoutSeconds * 1000);
  const onAbort = () => controller.abort(ctx.abort.reason ?? new Error('aborted'));
  ctx.abort.addEventListener('abort', onAbort, { once: true });
  let current = start;
  try {
    ctx.metadata({ title: `Fetching ${start.href}`, metadata: { url: start.href, bytes: 0 } });
    const { res, url, redirects } = await followRedirects(
      { method: 'GET', url: start, headers: requestHeaders(format) },
      {
        policy,
        signal: controller.signal,
        checkHop: ctx.checkUrl?.bind(ctx),
        onRedirect: (u) => {
          current = u;
          progress.phase = `following a redirect to ${u.href}`;
        },
      },
    );
    current = url;
    const status = res.statusCode ?? 0;
    const type = parseContentType(res.headers['content-type']);
    if (status < 200 || status > 299) {
      progress.phase = 'reading the error response';
      const body = await readBody(res, ERROR_BODY_BYTES, controller.signal, progress, 'stop');
      const text = decode(body, type.charset, type.mime);
      throw new FetchFailure(statusError(status, res.statusMessage ?? '', url, text, credentialsIn(start)));
    }
    const declared = Number(res.headers['content-length']);
    // Refuse a declared binary before downloading it.
    if (type.mime && !isSniffable(type.mime) && classify(type.mime) === 'binary') {
      res.destroy();
      throw new FetchFailure(binaryError(url, type.mime, declared));
    }
    if (Number.isFinite(declared) && declared > MAX_RESPONSE_BYTES) {
      res.destroy();
      throw new FetchFailure(
        `${url.href} is too large: Content-Length ${declared} bytes exceeds the ${formatBytes(MAX_RESPONSE_BYTES)} limit. ` +
          'Nothing was read. Fetch a smaller page or a more specific URL.',
      );
    }
    progress.phase = 'reading the body';
    let read = 0;
    let reported = 0;
    const report = new Throttle(
      () => {
        reported = read;
        ctx.metadata({
          title: `Fetching ${url.href} (${formatBytes(read)})`,
          metadata: { url: url.href, bytes: read },
        });
      },
      PROGRESS_INTERVAL_MS,
      Date.now(),
    );
    const body = await readBody(res, MAX_RESPONSE_BYTES, controller.signal, progress, 'throw', (bytes) => {
      read = bytes;
      if (bytes - reported >= PROGRESS_EVERY_BYTES) report.now();
      else report.maybe();
    });
    ctx.metadata({
      title: `Fetched ${url.href} (${formatBytes(body.length)})`,
      metadata: { url: url.href, bytes: body.length },
    });
    const mime = effectiveType(type.mime, type.charset, body);
    const metadata: WebfetchMetadata = {
      url: start.href,
      finalUrl: url.href,
      status,
      contentType: mime,
      bytes: body.length,
      format,
      redirects,
    };
    progress.phase = `converting the page to ${format}`;
    return await convert(body, mime, type.charset, format, url, metadata, controller.signal);
  } catch (err) {
    if (controller.signal.aborted) {
      const reason: unknown = controller.signal.reason;
      const where = `while ${progress.phase}${progress.bytes ? `, after ${formatBytes(progress.bytes)}` : ''}`;
      if (reason instanceof TimeoutSignal) {
        throw new FetchFailure(
          `webfetch of ${current.href} timed out after ${timeoutSeconds} s ${where}. ` +
            `The server is slow or the body never ends; retry with a larger timeout (max ${MAX_TIMEOUT_SECONDS}) or try another URL.`,
        );
      }
      throw new FetchFailure(`webfetch of ${current.href} was aborted ${where}.`);
    }
    if (err instanceof FetchFailure || err instanceof RedirectFailure || err instanceof BlockedAddressError) throw err;
    throw new FetchFailure(
      `webfetch of ${current.href} failed: ${networkFailure(err, current, { stage: progress.phase, bytes: progress.bytes })}. Try again, or try another URL.`,
    );
  } finally {
    clearTimeout(timer);
    ctx.abort.removeEventListener('abort', onAbort);
  }
}

/** The abort reason used by the deadline, told apart from a caller's abort. */
class TimeoutSignal extends Error {
  constructor() {
    super('timeout');
  }
}

/**
 * Reads a response body, decompressing gzip/deflate/br, and stops at `limit` decompressed bytes:
 * `throw` fails with a clear error there (the response is abandoned), `stop` keeps the first bytes.
 */
async function readBody(
  res: http.IncomingMessage,
  limit: number,
  signal: AbortSignal,
  progress: Progress,
  atLimit: 'throw' | 'stop',
  onBytes?: (bytes: number) => void,
): Promise<Buffer> {
  const onAbort = () => res.destroy(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
  signal.addEventListener('abort', onAbort, { once: true });
  const encodings = String(res.headers['content-encoding'] ?? '')
    .split(',')
    .map((e) => e.trim().toLowerCase())
    .filter((e) => e && e !== 'identity');
  let raw = 0;
  // Compressed bytes can never legitimately exceed the decompressed limit by much; cap them too.
  const counted = async function* (): AsyncGenerator<Buffer> {
    for await (const chunk of res as AsyncIterable<Buffer>) {
      raw += chunk.length;
      if (atLimit === 'throw' && raw > limit) throw tooLarge(res, raw);
      yield chunk;
    }
  };
  let stream: AsyncIterable<Buffer> = counted();
  for (const encoding of encodings.reverse()) stream = decompress(stream, encoding);
  const chunks: Buffer[] = [];
  let total = 0;
  try {
    for await (const chunk of stream) {
      if (total + chunk.length > limit) {
        if (atLimit === 'stop') {
          chunks.push(chunk.subarray(0, limit - total));
          total = limit;
          break;
        }
        throw tooLarge(res, total + chunk.length, encodings.length > 0);
      }
      chunks.push(chunk);
      total += chunk.length;
      progress.bytes = total;
      onBytes?.(total);
    }
    return Buffer.concat(chunks, total);
  } catch (err) {
    if (err instanceof FetchFailure || signal.aborted) throw err;
    const code = (err as NodeJS.ErrnoException).code ?? '';
    if (
      code.startsWith('Z_') ||
      /incorrect header|invalid (block|distance|code)|unexpected end|decompress/i.test(String((err as Error).message))
    ) {
      throw new FetchFailure(
        `The ${encodings.join(', ')} body of ${responseUrl(res)} could not be decompressed (${(err as Error).message}). The server sent a damaged response; try again or another URL.`,
      );
    }
    throw err;
  } finally {
    signal.removeEventListener('abort', onAbort);
    res.destroy();
  }
}

function decompress(source: AsyncIterable<Buffer>, encoding: string): AsyncIterable<Buffer> {
  const noop = () => undefined;
  switch (encoding) {
    case 'gzip':
    case 'x-gzip':
      return pipeline(Readable.from(source), zlib.createGunzip(), noop);
    case 'br':
      return pipeline(Readable.from(source), zlib.createBrotliDecompress(), noop);
    case 'deflate':
      return inflateEither(source);
    default:
      throw new FetchFailure(
        `The server used an unsupported Content-Encoding "${encoding}" (supported: gzip, deflate, br). Try another URL.`,
      );
  }
}

/** `deflate` is meant to be zlib-wrapped, but some servers send raw deflate: tell them apart by the header. */
async function* inflateEither(source: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  const it = source[Symbol.asyncIterator]();
  const first = await it.next();
  if (first.done) return;
  const b: Buffer = first.value;
  const zlibWrapped = (b[0] & 0x0f) === 8 && (b.length < 2 || ((b[0] << 8) | b[1]) % 31 === 0);
  const rest = (async function* () {
    yield b;
    for (;;) {
      const n = await it.next();
      if (n.done) return;
      yield n.value;
    }
  })();
  yield* pipeline(
    Readable.from(rest),
    zlibWrapped ? zlib.createInflate() : zlib.createInflateRaw(),
    () => undefined,
  ) as AsyncIterable<Buffer>;
}

function tooLarge(res: http.IncomingMessage, bytes: number, decompressed = false): FetchFailure {
  return new FetchFailure(
    `${responseUrl(res)} is too large: the body passed the ${formatBytes(MAX_RESPONSE_BYTES)} limit ` +
      `(${bytes} bytes${decompressed ? ' after decompression' : ''} read) and the download was stopped. Fetch a smaller page or a more specific URL.`,
  );
}

function responseUrl(res: http.IncomingMessage): string {
  const req = (res as unknown as { req?: { protocol?: string; host?: string; path?: string } }).req;
  return req?.host ? `${req.protocol ?? 'http:'}//${req.host}${req.path ?? ''}` : 'the response';
}

// ---------------------------------------------------------------------------------------------
// Content types and conversion

interface ContentType {
  mime: string;
  charset?: string;
}

function parseContentType(header: string | undefined): ContentType {
  if (!header) return { mime: '' };
  const [type, ...params] = header.split(';');
  const charset = params
    .map((p) => p.trim().split('='))
    .find(([k]) => k.trim().toLowerCase() === 'charset')?.[1]
    ?.trim()
    .replace(/^"|"$/g, '');
  return { mime: type.trim().toLowerCase(), charset };
}

/** Types that say nothing about the content; the body is sniffed instead. */
function isSniffable(mime: string): boolean {
  return (
    mime === '' ||
    mime === 'application/octet-stream' ||
    mime === 'binary/octet-stream' ||
    mime === 'application/unknown'
  );
}

function classify(mime: string): 'html' | 'text' | 'image' | 'binary' {
  if (mime === 'text/html' || mime === 'application/xhtml+xml') return 'html';
  if (IMAGE_TYPES.has(mime)) return 'image';
  if (mime.startsWith('text/') || TEXT_TYPES.has(mime) || mime.endsWith('+json') || mime.endsWith('+xml'))
    return 'text';
  return 'binary';
}

/**
 * The type to act on: the declared one unless the bytes contradict it. A server may lie: bytes
 * labelled as an image that are not one are sniffed (never attached as an image), and "text" with
 * NUL bytes (outside UTF-16/32) is binary (never converted and handed to the model).
 */
function effectiveType(declared: string | undefined, charset: string | undefined, body: Buffer): string {
  if (!declared || isSniffable(declared)) return sniff(body);
  const kind = classify(declared);
  if (kind === 'image') return sniff(body);
  if (
    (kind === 'text' || kind === 'html') &&
    !/^utf-?(16|32)/i.test(charset ?? '') &&
    body.subarray(0, 1024).includes(0)
  )
    return 'application/octet-stream';
  return declared;
}

/** Guesses a type from the bytes when the server gave none (or octet-stream). */
function sniff(body: Buffer): string {
  const b = body;
  if (b.length >= 8 && b.readUInt32BE(0) === 0x89504e47) return 'image/png';
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'image/jpeg';
  if (b.length >= 6 && /^GIF8[79]a/.test(b.subarray(0, 6).toString('latin1'))) return 'image/gif';
  if (
    b.length >= 12 &&
    b.subarray(0, 4).toString('latin1') === 'RIFF' &&
    b.subarray(8, 12).toString('latin1') === 'WEBP'
  )
    return 'image/webp';
  const head = b.subarray(0, 1024);
  if (head.includes(0)) return 'application/octet-stream';
  const text = head.toString('utf8').trimStart().toLowerCase();
  if (
    text.startsWith('<!doctype html') ||
    text.startsWith('<html') ||
    text.startsWith('<head') ||
    text.startsWith('<body')
  )
    return 'text/html';
  const printable = [...head].filter((c) => c >= 0x20 || c === 9 || c === 10 || c === 13).length;
  return head.length === 0 || printable / head.length > 0.9 ? 'text/plain' : 'application/octet-stream';
}

async function convert(
  body: Buffer,
  mime: string,
  charset: string | undefined,
  format: Format,
  url: URL,
  metadata: WebfetchMetadata,
  signal: AbortSignal,
): Promise<Tool.Result<WebfetchMetadata>> {
  const kind = classify(mime);
  const title = `${url.href} (${mime || 'unknown type'})`;
  if (kind === 'image') {
    return {
      title,
      metadata,
      output: `Image ${url.href} (${mime}, ${formatBytes(body.length)}) is attached.`,
      attachments: [{ type: 'image', mime, data: body.toString('base64'), uri: url.href }],
    };
  }
  if (kind === 'binary') throw new FetchFailure(binaryError(url, mime, body.length));
  const text = decode(body, charset ?? (kind === 'html' ? metaCharset(body) : undefined), mime);
  if (kind === 'text' || format === 'html') return { title, metadata, output: text };
  let converted: Converted;
  try {
    converted =
      format === 'markdown'
        ? await convertHtml({ html: text, format, base: url.href, dropped: DROPPED_ELEMENTS, signal })
        : await htmlToText(text, signal);
  } catch (err) {
    if (signal.aborted) throw err;
    const why =
      err instanceof ConvertTimeoutError
        ? `took longer than ${MAX_CONVERT_MS / 1000} s and was stopped`
        : `failed (${(err as Error).message})`;
    throw new FetchFailure(
      `Converting ${url.href} (${formatBytes(body.length)} of HTML) to ${format} ${why}. ` +
        'Fetch it with format="html" to get the raw page, or fetch a smaller or simpler page.',
    );
  }
  const { output, truncatedAt } = converted;
  if (truncatedAt) {
    const way =
      truncatedAt === MAX_HTML_ELEMENTS
        ? `Use format="text" (it reads up to ${MAX_HTML_PARSE_ELEMENTS.toLocaleString('en-US')} elements), or fetch a more specific URL.`
        : 'Fetch a more specific URL, or use format="html" for the raw page.';
    return {
      title,
      metadata: { ...metadata, truncatedAtElements: truncatedAt },
      // First, so that it survives the registry's cut of a long output.
      output: `(The page has more than ${truncatedAt.toLocaleString('en-US')} elements; the rest was not converted. ${way})\n\n${output}`,
    };
  }
  if (!output.trim() && text.trim()) {
    return {
      title,
      metadata,
      output: `(The page at ${url.href} has no readable text once scripts, styles and navigation are removed; it may be built by JavaScript. Try format="html" to see the raw page.)`,
    };
  }
  return { title, metadata, output };
}

/** The charset an HTML page declares in a `<meta>` tag within its first 1024 bytes. */
function metaCharset(body: Buffer): string | undefined {
  const head = body.subarray(0, 1024).toString('latin1');
  return /<meta[^>]+charset\s*=\s*["']?([\w.:-]+)/i.exec(head)?.[1];
}

function decode(body: Buffer, charset: string | undefined, _mime: string): string {
  try {
    return new TextDecoder(charset || 'utf-8').decode(body);
  } catch {
    // Unknown label: UTF-8 is the best guess for the web.
    return new TextDecoder('utf-8').decode(body);
  }
}

/** HTML to markdown (sanitised: chrome, scripts and styles dropped), in a worker thread; a page over MAX_HTML_ELEMENTS is cut there. */
export async function htmlToMarkdown(html: string, base: URL, signal?: AbortSignal): Promise<string> {
  return (await convertHtml({ html, format: 'markdown', base: base.href, dropped: DROPPED_ELEMENTS, signal })).output;
}

/** HTML to plain text (sanitised, lines broken at block elements), in a worker thread. */
function htmlToText(html: string, signal?: AbortSignal): Promise<Converted> {
  return convertHtml({ html, format: 'text', dropped: DROPPED_ELEMENTS, signal });
}

// ---------------------------------------------------------------------------------------------
// Arguments and errors

function checkTimeout(timeout: number | undefined): number {
  if (timeout === undefined) return DEFAULT_TIMEOUT_SECONDS;
  if (typeof timeout !== 'number' || !Number.isFinite(timeout) || timeout <= 0 || timeout > MAX_TIMEOUT_SECONDS) {
    throw new Error(
      `timeout must be a number of seconds above 0 and at most ${MAX_TIMEOUT_SECONDS}, got ${JSON.stringify(timeout)}. ` +
        `Leave it out for the default ${DEFAULT_TIMEOUT_SECONDS} s.`,
    );
  }
  return timeout;
}

/**
 * The user and password of a URL in every form webfetch sends or shows them (as written, decoded,
 * `user:password` and the base64 of the Basic header built from it), to scrub from whatever is shown.
 */
function credentialsIn(raw: unknown): string[] {
  const text = typeof raw === 'string' ? raw : raw instanceof URL ? raw.href : '';
  let url: URL | undefined;
  try {
    url = new URL(text.trim());
  } catch {
    // not a URL: only the text's own user:password are known
  }
  return sentSecretForms(urlCredentials(text), url ? { url, headers: {} } : undefined);
}

function scrubResult(result: Tool.Result<WebfetchMetadata>, secrets: readonly string[]): Tool.Result<WebfetchMetadata> {
  const metadata = JSON.parse(scrubText(JSON.stringify(result.metadata), secrets)) as WebfetchMetadata;
  return {
    ...result,
    title: scrubText(result.title, secrets),
    output: scrubText(result.output, secrets),
    metadata,
    ...(result.attachments
      ? { attachments: result.attachments.map((a) => (a.uri ? { ...a, uri: scrubText(a.uri, secrets) } : a)) }
      : {}),
  };
}

function parseUrl(raw: string): URL {
  const text = String(raw ?? '').trim();
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    const hint = /^[\w-]+(\.[\w-]+)+(\/|$)/.test(text) ? ` Did you mean "https://${text}"?` : '';
    throw new Error(`Invalid URL ${JSON.stringify(raw)}: give a full URL starting with http:// or https://.${hint}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new Error(
      `Unsupported URL scheme "${url.protocol}" in ${JSON.stringify(raw)}: webfetch only fetches http:// and https:// URLs. Use the read tool for local files.`,
    );
  }
  return url;
}

/** The error for a non-2xx page; its snippet is scrubbed of `secrets` before it is cut (a cut never leaves part of one). */
function statusError(status: number, statusText: string, url: URL, body: string, secrets: readonly string[]): string {
  const text = body
    .replace(/<[^>]*>/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  const snippet = cutScrubbed(text, ERROR_SNIPPET_CHARS, secrets);
  const advice =
    status === 404 || status === 410
      ? 'Check the URL; the page does not exist.'
      : status === 401 || status === 403
        ? 'The page needs credentials or refuses automated clients; try another source.'
        : status === 429
          ? 'The server is rate limiting; wait before retrying, or try another source.'
          : status >= 500
            ? 'The server failed; retry later or try another source.'
            : 'Check the URL and try again.';
  return `HTTP ${status}${statusText ? ` ${statusText}` : ''} from ${url.href}.${snippet ? ` The response began: "${snippet}"` : ''} ${advice}`;
}

function binaryError(url: URL, mime: string, bytes: number): string {
  const size = Number.isFinite(bytes) && bytes >= 0 ? `, ${formatBytes(bytes)}` : '';
  const image = mime.startsWith('image/') ? ` Only ${[...IMAGE_TYPES].join(', ')} images can be attached.` : '';
  return `${url.href} is binary content (${mime}${size}) that webfetch cannot return: it returns web pages, text and images.${image} Look for an HTML or text version of this resource.`;
}
