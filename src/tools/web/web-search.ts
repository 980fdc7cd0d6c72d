/**
 * web_search: a web search through a configured backend (self-hosted SearXNG, Brave Search, Tavily),
 * results as `{ title, url, snippet }`. Backend HTTP and response shapes live here; it never fetches
 * result pages (webfetch does) and never echoes an API key.
 */
import { z } from 'zod';
import { Tool } from '../../authoring/tool.js';
import { descriptionBeside } from '../../authoring/description.js';
import { cutScrubbed, sentSecretForms } from '../../net/scrub.js';
import {
  BACKENDS,
  WEB_SEARCH_DEFAULT_BASE_URLS,
  WEB_SEARCH_DEFAULT_RESULTS,
  WEB_SEARCH_MAX_QUERY_CHARS,
  WEB_SEARCH_MAX_RESPONSE_BYTES,
  WEB_SEARCH_MAX_RESULTS,
  WEB_SEARCH_MAX_SNIPPET_CHARS,
  WEB_SEARCH_MAX_TITLE_CHARS,
  WEB_SEARCH_SETUP,
  WEB_SEARCH_TIMEOUT_MS,
  webSearchConfigFromEnv,
  type WebSearchBackend,
  type WebSearchConfig,
  type WebSearchMetadata,
  type WebSearchResult,
} from './web-search-config.js';

const parameters = z.object({
  query: z
    .string()
    .min(1)
    .max(WEB_SEARCH_MAX_QUERY_CHARS)
    .describe('What to search for, as you would type it into a search engine.'),
  limit: z
    .number()
    .int()
    .min(1)
    .max(WEB_SEARCH_MAX_RESULTS)
    .optional()
    .describe(`Most results to return (default ${WEB_SEARCH_DEFAULT_RESULTS}, max ${WEB_SEARCH_MAX_RESULTS}).`),
});

const outputSchema = z.object({
  results: z.array(z.object({ title: z.string(), url: z.string(), snippet: z.string() })),
});

export const WebSearchTool = Tool.define<typeof parameters, WebSearchMetadata>(
  {
    id: 'web_search',
    permissions: { required: ['network'] },
    descriptionPath: descriptionBeside(import.meta.url, 'web_search'),
    danger: 'safe',
  },
  (initCtx) => {
    let config: WebSearchConfig | undefined;
    let problem: string | undefined;
    try {
      config = initCtx.webSearch ?? webSearchConfigFromEnv();
      if (config) checkConfig(config);
    } catch (err) {
      problem = (err as Error).message;
    }
    const unavailable = problem ?? (config ? undefined : WEB_SEARCH_SETUP);
    return {
      description: 'Search the web; returns titles, URLs and snippets.',
      parameters,
      outputSchema,
      timeout: { managed: true },
      annotations: { readOnlyHint: true, openWorldHint: true },
      ...(unavailable ? { unavailable } : {}),
      async *execute(args, ctx) {
        if (!config || unavailable) throw new Error(unavailable ?? WEB_SEARCH_SETUP);
        const query = args.query.trim();
        if (!query) throw new Error('The query is empty. Say what to search for.');
        const limit = args.limit ?? WEB_SEARCH_DEFAULT_RESULTS;
        yield { title: `Searching ${config.backend} for "${query.slice(0, 80)}"` };
        const results = await search(config, query, limit, ctx.abort);
        const output = results.length
          ? results
              .map((r, i) => `${i + 1}. ${r.title}\n   ${r.url}${r.snippet ? `\n   ${r.snippet}` : ''}`)
              .join('\n\n')
          : `No results for "${query}". Try other words, fewer terms, or a broader query.`;
        return {
          title: `${results.length} result${results.length === 1 ? '' : 's'} for "${query.slice(0, 80)}"`,
          output,
          metadata: { backend: config.backend, query, results, truncated: false },
          structuredContent: { results },
        };
      },
    };
  },
);

function checkConfig(config: WebSearchConfig): void {
  if (!BACKENDS.includes(config.backend))
    throw new Error(
      `webSearch.backend ${JSON.stringify(config.backend)} is not a backend: use searxng, brave or tavily.`,
    );
  if (config.backend === 'searxng' && !config.baseUrl)
    throw new Error('web_search with SearXNG needs its base URL: set SEARXNG_URL or webSearch.baseUrl.');
  if (config.backend !== 'searxng' && !config.apiKey)
    throw new Error(
      `web_search with ${config.backend} needs an API key: set ${config.backend === 'brave' ? 'BRAVE_SEARCH_API_KEY' : 'TAVILY_API_KEY'} or webSearch.apiKey.`,
    );
  const base = config.baseUrl ?? WEB_SEARCH_DEFAULT_BASE_URLS[config.backend as 'brave' | 'tavily'];
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    throw new Error(
      `The ${config.backend} base URL is not a URL. Set an http(s) URL such as https://search.example.org.`,
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new Error(`The ${config.backend} base URL must be http or https, not ${url.protocol}`);
}

/** Runs one search against the configured backend. */
export async function search(
  config: WebSearchConfig,
  query: string,
  limit: number,
  abort?: AbortSignal,
): Promise<WebSearchResult[]> {
  const base = new URL(config.baseUrl ?? WEB_SEARCH_DEFAULT_BASE_URLS[config.backend as 'brave' | 'tavily']);
  const name = BACKEND_NAMES[config.backend];
  const where = base.origin; // never the path or credentials of a configured URL
  const timeoutMs = config.timeoutMs ?? WEB_SEARCH_TIMEOUT_MS;
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = abort ? AbortSignal.any([abort, timeout]) : timeout;
  // Credentials in a configured URL (a SearXNG behind basic auth) become a header: fetch refuses
  // them in the URL, and they must not reach any message.
  const basic = base.username
    ? `Basic ${Buffer.from(`${decodeURIComponent(base.username)}:${decodeURIComponent(base.password)}`).toString('base64')}`
    : undefined;
  base.username = '';
  base.password = '';
  const request = buildRequest(config, base, query, limit);
  if (basic) (request.init.headers as Record<string, string>).authorization = basic;
  let res: Response;
  try {
    res = await fetch(request.url, { ...request.init, signal, redirect: 'error' });
  } catch (err) {
    if (abort?.aborted) throw new Error('The search was aborted.', { cause: err });
    if (timeout.aborted)
      throw new Error(
        `${name} at ${where} did not answer within ${timeoutMs} ms. Try again later or a simpler query.`,
        {
          cause: err,
        },
      );
    // Only the error code: messages may quote the request URL.
    const cause = (err as { cause?: { code?: unknown } }).cause;
    const code = typeof cause?.code === 'string' ? cause.code : 'network error';
    throw new Error(
      `Could not reach ${name} at ${where} (${code}). The search backend is down or misconfigured; try again later or go on without searching.`,
      { cause: err },
    );
  }
  const text = await readCapped(res, name, signal);
  const keys = config.apiKey ? [config.apiKey] : [];
  const sent = sentSecretForms(keys, config.baseUrl ? { url: new URL(config.baseUrl), headers: {} } : undefined);
  if (!res.ok) throw new Error(redact(statusError(config.backend, name, where, res.status, text, sent), config.apiKey));
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new Error(
      `${name} at ${where} did not answer JSON (${res.headers.get('content-type') ?? 'no content type'}).` +
        (config.backend === 'searxng' ? ' Enable the json format in its settings.yml (search.formats).' : ''),
    );
  }
  return normalise(config.backend, body, limit);
}

const BACKEND_NAMES: Record<WebSearchBackend, string> = {
  searxng: 'SearXNG',
  brave: 'Brave Search',
  tavily: 'Tavily',
};

function buildRequest(
  config: WebSearchConfig,
  base: URL,
  query: string,
  limit: number,
): { url: URL; init: RequestInit } {
  const at = (p: string) => new URL(p, base.href.endsWith('/') ? base.href : `${base.href}/`);
  switch (config.backend) {
    case 'searxng': {
      const url = at('search');
      url.searchParams.set('q', query);
      url.searchParams.set('format', 'json');
      return { url, init: { headers: { accept: 'application/json' } } };
    }
    case 'brave': {
      const url = at('res/v1/web/search');
      url.searchParams.set('q', query);
      url.searchParams.set('count', String(limit));
      return {
        url,
        init: { headers: { accept: 'application/json', 'x-subscription-token': config.apiKey ?? '' } },
      };
    }
    case 'tavily':
      return {
        url: at('search'),
        init: {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: 'application/json',
            authorization: `Bearer ${config.apiKey ?? ''}`,
          },
          body: JSON.stringify({ query, max_results: limit }),
        },
      };
  }
}

/** The body as text, refusing more than WEB_SEARCH_MAX_RESPONSE_BYTES. */
async function readCapped(res: Response, name: string, signal: AbortSignal): Promise<string> {
  const declared = Number(res.headers.get('content-length'));
  const tooBig = `${name} answered more than ${WEB_SEARCH_MAX_RESPONSE_BYTES} bytes, which is not a search result page. Check the backend URL.`;
  if (declared > WEB_SEARCH_MAX_RESPONSE_BYTES) {
    await res.body?.cancel();
    throw new Error(tooBig);
  }
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = (await reader.read()) as { done: boolean; value?: Uint8Array };
      if (done || !value) break;
      size += value.byteLength;
      if (size > WEB_SEARCH_MAX_RESPONSE_BYTES) {
        await reader.cancel();
        throw new Error(tooBig);
      }
      chunks.push(value);
    }
  } catch (err) {
    if (signal.aborted && err !== undefined && (err as Error).message !== tooBig)
      throw new Error(`${name} stopped answering before the response was complete (aborted or timed out).`, {
        cause: err,
      });
    throw err;
  }
  return Buffer.concat(chunks).toString('utf8');
}

function statusError(
  backend: WebSearchBackend,
  name: string,
  where: string,
  status: number,
  body: string,
  secrets: readonly string[],
): string {
  // Scrubbed before it is cut, so the cut never leaves part of the key or of a configured URL's
  // Basic credentials (see cutScrubbed).
  const detail = cutScrubbed(body.replace(/\s+/g, ' ').trim(), 200, secrets);
  const said = detail ? ` It said: ${detail}` : '';
  if (status === 401 || status === 403) {
    if (backend === 'searxng')
      return `SearXNG at ${where} refused the search (HTTP ${status}); usually its json format is disabled: add json to search.formats in settings.yml.${said}`;
    return `${name} refused the API key (HTTP ${status}). The key is missing, wrong or out of quota; the operator must fix ${backend === 'brave' ? 'BRAVE_SEARCH_API_KEY' : 'TAVILY_API_KEY'}. Go on without searching.${said}`;
  }
  if (status === 429)
    return `${name} is rate limiting searches (HTTP 429). Wait before searching again, and search less often.${said}`;
  return `${name} at ${where} answered HTTP ${status}. Try again later or go on without searching.${said}`;
}

/** Every occurrence of the key replaced, so no error or result can carry it. */
function redact(text: string, secret: string | undefined): string {
  return secret && secret.length >= 4 ? text.split(secret).join('[redacted]') : text;
}

/** The backend's documented response shape -> `{ title, url, snippet }[]`, capped. */
function normalise(backend: WebSearchBackend, body: unknown, limit: number): WebSearchResult[] {
  const obj = (body ?? {}) as Record<string, unknown>;
  let raw: unknown;
  let snippetKey: string;
  if (backend === 'brave') {
    raw = (obj.web as Record<string, unknown> | undefined)?.results;
    snippetKey = 'description';
  } else {
    raw = obj.results;
    snippetKey = 'content';
  }
  if (raw !== undefined && !Array.isArray(raw))
    throw new Error(`${BACKEND_NAMES[backend]} answered in an unexpected shape (results is not a list).`);
  const out: WebSearchResult[] = [];
  const seen = new Set<string>();
  for (const item of (raw ?? []) as unknown[]) {
    if (out.length >= limit) break;
    if (!item || typeof item !== 'object') continue;
    const r = item as Record<string, unknown>;
    const url = typeof r.url === 'string' ? r.url.trim() : '';
    if (!/^https?:\/\//i.test(url) || seen.has(url)) continue;
    seen.add(url);
    out.push({
      title: cut(plain(r.title) || url, WEB_SEARCH_MAX_TITLE_CHARS),
      url,
      snippet: cut(plain(r[snippetKey]), WEB_SEARCH_MAX_SNIPPET_CHARS),
    });
  }
  return out;
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", '#39': "'", nbsp: ' ' };

/** Text without HTML tags (Brave marks matches with <strong>), entities decoded, whitespace collapsed. */
function plain(v: unknown): string {
  if (typeof v !== 'string') return '';
  return v
    .replace(/<[^>]{0,200}>/g, '')
    .replace(/&(amp|lt|gt|quot|apos|#39|nbsp);/g, (_, e: string) => ENTITIES[e])
    .replace(/\s+/g, ' ')
    .trim();
}

function cut(s: string, max: number): string {
  return s.length > max ? `${s.slice(0, max - 3)}...` : s;
}
