/**
 * web_search against loopback servers answering in each backend's documented response shape
 * (SearXNG `format=json`, Brave `web.results`, Tavily `results`), through the LangChain adapter:
 * requests as each API wants them, results capped and cleaned, keys never echoed, backend errors
 * as sentences, and registration only when a backend is configured.
 */
import { describe, it, expect, beforeAll, afterAll, afterEach } from '@jest/globals';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRegistry, registerBuiltinTools } from '../../../src/index.js';
import {
  WEB_SEARCH_DEFAULT_RESULTS,
  WEB_SEARCH_MAX_RESULTS,
  WEB_SEARCH_MAX_QUERY_CHARS,
  WEB_SEARCH_MAX_SNIPPET_CHARS,
  WEB_SEARCH_MAX_TITLE_CHARS,
  WEB_SEARCH_MAX_RESPONSE_BYTES,
  webSearchConfigFromEnv,
  type WebSearchConfig,
} from '../../../src/tools/web/web-search-config.js';
import { unregisteredBuiltins } from '../../../src/tools/index.js';
import { callTool } from '../../support/tool-call.js';
import { readFile } from 'node:fs/promises';
import { DEFAULT_MAX_BYTES } from '../../../src/pipeline/truncate.js';

interface Seen {
  method: string;
  url: URL;
  headers: http.IncomingHttpHeaders;
  body: string;
}

type Reply = (seen: Seen, res: http.ServerResponse) => void;

let server: http.Server;
let base: string;
let reply: Reply;
const seen: Seen[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8').on('data', (d: string) => (body += d));
    req.on('end', () => {
      const s = { method: req.method!, url: new URL(req.url!, 'http://x'), headers: req.headers, body };
      seen.push(s);
      reply(s, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));
afterEach(() => {
  seen.length = 0;
});

const json =
  (status: number, value: unknown): Reply =>
  (_s, res) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(value));
  };

/** n results in each backend's own shape. */
function items(n: number, snippet = (i: number) => `Snippet ${i}`) {
  return Array.from({ length: n }, (_, i) => ({
    title: `Result ${i}`,
    url: `https://example.com/${i}`,
    s: snippet(i),
  }));
}
const searxngBody = (list: ReturnType<typeof items>) => ({
  query: 'q',
  number_of_results: list.length,
  results: list.map((r) => ({ url: r.url, title: r.title, content: r.s, engine: 'duckduckgo', score: 1 })),
  answers: [],
  suggestions: [],
});
const braveBody = (list: ReturnType<typeof items>) => ({
  type: 'search',
  query: { original: 'q' },
  web: {
    type: 'search',
    results: list.map((r) => ({ type: 'search_result', title: r.title, url: r.url, description: r.s })),
  },
});
const tavilyBody = (list: ReturnType<typeof items>) => ({
  query: 'q',
  answer: null,
  images: [],
  results: list.map((r) => ({ title: r.title, url: r.url, content: r.s, score: 0.9, raw_content: null })),
  response_time: 0.5,
});

const KEY = 'sk-test-SECRET-1234567890';

async function tools(config: WebSearchConfig) {
  const registry = registerBuiltinTools(createRegistry(), ['web_search']);
  return registry.tools({ initCtx: { webSearch: config } });
}

describe('web_search: each backend in its documented shape', () => {
  it('SearXNG: GET /search?q=...&format=json, results[].content as the snippet', async () => {
    reply = json(200, searxngBody(items(8)));
    const t = await tools({ backend: 'searxng', baseUrl: `${base}/searx/` });
    const msg = await callTool(t, 'web_search', { query: 'node streams' });
    expect(msg.status).toBe('success');
    expect(seen[0].method).toBe('GET');
    expect(seen[0].url.pathname).toBe('/searx/search');
    expect(Object.fromEntries(seen[0].url.searchParams)).toEqual({ q: 'node streams', format: 'json' });
    expect(msg.result.metadata.results).toHaveLength(WEB_SEARCH_DEFAULT_RESULTS);
    expect(msg.result.structuredContent).toEqual({ results: msg.result.metadata.results });
    expect(msg.content).toContain('1. Result 0\n   https://example.com/0\n   Snippet 0');
  });

  it('Brave: X-Subscription-Token and count, web.results[].description with <strong> marks removed', async () => {
    reply = json(200, braveBody(items(3, (i) => `The <strong>best</strong> result &amp; more ${i}`)));
    const t = await tools({ backend: 'brave', apiKey: KEY, baseUrl: base });
    const msg = await callTool(t, 'web_search', { query: 'brave', limit: 3 });
    expect(seen[0].url.pathname).toBe('/res/v1/web/search');
    expect(seen[0].url.searchParams.get('count')).toBe('3');
    expect(seen[0].headers['x-subscription-token']).toBe(KEY);
    expect(msg.result.metadata.results).toEqual([
      { title: 'Result 0', url: 'https://example.com/0', snippet: 'The best result & more 0' },
      { title: 'Result 1', url: 'https://example.com/1', snippet: 'The best result & more 1' },
      { title: 'Result 2', url: 'https://example.com/2', snippet: 'The best result & more 2' },
    ]);
  });

  it('Tavily: POST /search with a bearer key and max_results, results[].content as the snippet', async () => {
    reply = json(200, tavilyBody(items(2)));
    const t = await tools({ backend: 'tavily', apiKey: KEY, baseUrl: base });
    const msg = await callTool(t, 'web_search', { query: 'tavily', limit: 7 });
    expect(seen[0].method).toBe('POST');
    expect(seen[0].url.pathname).toBe('/search');
    expect(seen[0].headers.authorization).toBe(`Bearer ${KEY}`);
    expect(JSON.parse(seen[0].body)).toEqual({ query: 'tavily', max_results: 7 });
    expect((msg.result.metadata.results as Array<{ url: string }>).map((r) => r.url)).toEqual([
      'https://example.com/0',
      'https://example.com/1',
    ]);
    expect(msg.result.metadata.backend).toBe('tavily');
  });

  it('no results is a sentence that says what to try', async () => {
    reply = json(200, searxngBody([]));
    const t = await tools({ backend: 'searxng', baseUrl: base });
    const msg = await callTool(t, 'web_search', { query: 'zzzz' });
    expect(msg.content).toBe('No results for "zzzz". Try other words, fewer terms, or a broader query.');
  });

  it('progress: the search is reported while it runs', async () => {
    reply = json(200, searxngBody(items(1)));
    const registry = registerBuiltinTools(createRegistry(), ['web_search']);
    const titles: string[] = [];
    await registry.execute(
      'web_search',
      { query: 'x' },
      {},
      { webSearch: { backend: 'searxng', baseUrl: base } },
      {
        onToolResult: (u) => titles.push(`${u.status}:${u.result.title}`),
      },
    );
    expect(titles).toEqual(['running:Searching searxng for "x"', 'completed:1 result for "x"']);
  });
});

describe('web_search: caps', () => {
  it(`limit: ${WEB_SEARCH_MAX_RESULTS} is accepted, ${WEB_SEARCH_MAX_RESULTS + 1} is refused`, async () => {
    reply = json(200, searxngBody(items(30)));
    const t = await tools({ backend: 'searxng', baseUrl: base });
    const ok = await callTool(t, 'web_search', { query: 'x', limit: WEB_SEARCH_MAX_RESULTS });
    expect(ok.result.metadata.results).toHaveLength(WEB_SEARCH_MAX_RESULTS);
    const over = await callTool(t, 'web_search', { query: 'x', limit: WEB_SEARCH_MAX_RESULTS + 1 });
    expect(over.status).toBe('error');
    expect(String(over.content)).toMatch(/limit/);
  });

  it(`query: ${WEB_SEARCH_MAX_QUERY_CHARS} characters are sent, one more is refused`, async () => {
    reply = json(200, searxngBody(items(1)));
    const t = await tools({ backend: 'searxng', baseUrl: base });
    const q = 'a'.repeat(WEB_SEARCH_MAX_QUERY_CHARS);
    expect((await callTool(t, 'web_search', { query: q })).status).toBe('success');
    expect(seen[0].url.searchParams.get('q')).toBe(q);
    const over = await callTool(t, 'web_search', { query: `${q}a` });
    expect(over.status).toBe('error');
    expect(seen).toHaveLength(1);
  });

  it('snippets and titles are cut at their caps, not before', async () => {
    const atCap = 'b'.repeat(WEB_SEARCH_MAX_SNIPPET_CHARS);
    reply = json(200, {
      results: [
        { title: 't'.repeat(WEB_SEARCH_MAX_TITLE_CHARS), url: 'https://a.example/', content: atCap },
        { title: 't'.repeat(WEB_SEARCH_MAX_TITLE_CHARS + 1), url: 'https://b.example/', content: `${atCap}b` },
      ],
    });
    const t = await tools({ backend: 'searxng', baseUrl: base });
    const [a, b] = (await callTool(t, 'web_search', { query: 'x' })).result.metadata.results as Array<{
      title: string;
      snippet: string;
    }>;
    expect(a.snippet).toBe(atCap);
    expect(a.title).toHaveLength(WEB_SEARCH_MAX_TITLE_CHARS);
    expect(b.snippet).toHaveLength(WEB_SEARCH_MAX_SNIPPET_CHARS);
    expect(b.snippet.endsWith('...')).toBe(true);
    expect(b.title).toHaveLength(WEB_SEARCH_MAX_TITLE_CHARS);
  });

  it('drops results without an http(s) URL and duplicates', async () => {
    reply = json(200, {
      results: [
        { title: 'js', url: 'javascript:alert(1)', content: 'x' },
        { title: 'one', url: 'https://one.example/', content: 'x' },
        { title: 'one again', url: 'https://one.example/', content: 'x' },
        { title: 'none', content: 'x' },
      ],
    });
    const t = await tools({ backend: 'searxng', baseUrl: base });
    const msg = await callTool(t, 'web_search', { query: 'x' });
    expect((msg.result.metadata.results as Array<{ title: string }>).map((r) => r.title)).toEqual(['one']);
  });

  it(`a response over WEB_SEARCH_MAX_RESPONSE_BYTES (${WEB_SEARCH_MAX_RESPONSE_BYTES}) is refused`, async () => {
    reply = (_s, res) => {
      res.writeHead(200, { 'content-type': 'application/json' }); // chunked: no Content-Length to trust
      res.end(JSON.stringify({ results: [], pad: 'x'.repeat(WEB_SEARCH_MAX_RESPONSE_BYTES) }));
    };
    const t = await tools({ backend: 'searxng', baseUrl: base });
    const msg = await callTool(t, 'web_search', { query: 'x' });
    expect(msg.status).toBe('error');
    expect(String(msg.content)).toMatch(/more than \d+ bytes/);
  });
});

describe('web_search: the registry output cap', () => {
  it('results over the cap (long URLs) are cut to the cap and the whole text is saved, whatever metadata.truncated says', async () => {
    const longUrl = (i: number) => `https://example.com/${i}/${'u'.repeat(8_000)}`;
    reply = json(200, {
      results: Array.from({ length: WEB_SEARCH_MAX_RESULTS }, (_, i) => ({
        title: `R${i}`,
        url: longUrl(i),
        content: 's',
      })),
    });
    const registry = registerBuiltinTools(createRegistry(), ['web_search']);
    try {
      const t = await registry.tools({ initCtx: { webSearch: { backend: 'searxng', baseUrl: base } } });
      const msg = await callTool(t, 'web_search', { query: 'x', limit: WEB_SEARCH_MAX_RESULTS });
      expect(msg.status).toBe('success');
      const content = String(msg.content);
      expect(Buffer.byteLength(content)).toBeLessThan(DEFAULT_MAX_BYTES + 1024);
      const saved = msg.result.metadata.outputPath as string;
      expect(content).toContain(`The full output is saved at ${saved}`);
      const full = await readFile(saved, 'utf8');
      expect(full).toContain(
        `${WEB_SEARCH_MAX_RESULTS}. R${WEB_SEARCH_MAX_RESULTS - 1}\n   ${longUrl(WEB_SEARCH_MAX_RESULTS - 1)}`,
      );
      expect(msg.result.metadata.truncated).toBe(true);
    } finally {
      await registry.dispose();
    }
  });
});

describe('web_search: backend errors', () => {
  it('never echoes the API key, even when the backend does', async () => {
    reply = json(401, { error: `invalid token ${KEY}` });
    for (const backend of ['brave', 'tavily'] as const) {
      const t = await tools({ backend, apiKey: KEY, baseUrl: base });
      const msg = await callTool(t, 'web_search', { query: 'x' });
      expect(msg.status).toBe('error');
      expect(String(msg.content)).toMatch(/refused the API key \(HTTP 401\)/);
      expect(String(msg.content)).toContain('invalid token ***');
      expect(JSON.stringify(msg.result)).not.toContain(KEY);
    }
  });

  it('the quoted error detail is scrubbed before it is cut: no cut position shows part of the key', async () => {
    // The backend echoes the query (the model's) before the key, so the query moves the key to the cut.
    const lead = '{"error":"bad key for ';
    reply = (s, res) => {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(`${lead}${JSON.parse(s.body).query}: ${String(s.headers.authorization)}"}`);
    };
    const t = await tools({ backend: 'tavily', apiKey: KEY, baseUrl: base });
    for (let k = 0; k < KEY.length; k++) {
      const query = 'q'.repeat(200 - lead.length - ': Bearer '.length - k);
      const text = String((await callTool(t, 'web_search', { query })).content);
      expect(text).toContain('refused the API key');
      for (let i = 0; i + 4 <= KEY.length; i++)
        expect({ k, shown: text.includes(KEY.slice(i, i + 4)) }).toEqual({ k, shown: false });
    }
  });

  it("a configured URL's Basic credentials echoed in an error are scrubbed in every form", async () => {
    const basic = Buffer.from('user:p@ss-long-9').toString('base64');
    reply = (s, res) => {
      res.writeHead(403, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({ you: s.headers.authorization, encoded: encodeURIComponent(String(s.headers.authorization)) }),
      );
    };
    const t = await tools({
      backend: 'searxng',
      baseUrl: `http://user:p%40ss-long-9@127.0.0.1:${new URL(base).port}/`,
    });
    const text = String((await callTool(t, 'web_search', { query: 'x' })).content);
    expect(seen[0].headers.authorization).toBe(`Basic ${basic}`);
    expect(text).toContain('Basic ***');
    expect(text).not.toContain(basic.slice(0, 8));
    expect(text).not.toContain('p@ss');
  });

  it('SearXNG 403 names the json format setting; 429 says to wait', async () => {
    reply = (_s, res) => {
      res.writeHead(403, { 'content-type': 'text/html' });
      res.end('<h1>403 Forbidden</h1>');
    };
    const t = await tools({ backend: 'searxng', baseUrl: base });
    expect(String((await callTool(t, 'web_search', { query: 'x' })).content)).toMatch(/search\.formats/);
    reply = json(429, { detail: 'slow down' });
    expect(String((await callTool(t, 'web_search', { query: 'x' })).content)).toMatch(/rate limiting.*Wait/);
  });

  it('an HTML answer with status 200 says it is not JSON', async () => {
    reply = (_s, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html>search page</html>');
    };
    const t = await tools({ backend: 'searxng', baseUrl: base });
    expect(String((await callTool(t, 'web_search', { query: 'x' })).content)).toMatch(
      /did not answer JSON \(text\/html\)\. Enable the json format/,
    );
  });

  it('an unreachable backend is named by origin only (no credentials or path)', async () => {
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const t = await tools({ backend: 'searxng', baseUrl: `http://user:pw@127.0.0.1:${port}/private/path` });
    const msg = await callTool(t, 'web_search', { query: 'x' });
    expect(String(msg.content)).toMatch(
      new RegExp(`Could not reach SearXNG at http://127\\.0\\.0\\.1:${port} \\(ECONNREFUSED\\)`),
    );
    expect(String(msg.content)).not.toMatch(/pw|private/);
  });

  it('credentials in a configured URL are sent as basic auth, not in the URL', async () => {
    reply = json(200, searxngBody(items(1)));
    const t = await tools({ backend: 'searxng', baseUrl: `http://user:p%40ss@127.0.0.1:${new URL(base).port}/` });
    expect((await callTool(t, 'web_search', { query: 'x' })).status).toBe('success');
    expect(seen[0].headers.authorization).toBe(`Basic ${Buffer.from('user:p@ss').toString('base64')}`);
  });

  it('a backend that does not answer in time is an error saying so', async () => {
    let hung: http.ServerResponse | undefined;
    reply = (_s, res) => (hung = res);
    const t = await tools({ backend: 'searxng', baseUrl: base, timeoutMs: 50 });
    const msg = await callTool(t, 'web_search', { query: 'x' });
    hung?.end();
    expect(String(msg.content)).toMatch(/did not answer within 50 ms/);
  });
});

describe('web_search: configuration and registration', () => {
  const saved = { ...process.env };
  afterEach(() => {
    for (const k of ['SEARXNG_URL', 'BRAVE_SEARCH_API_KEY', 'TAVILY_API_KEY', 'WEB_SEARCH_BACKEND'])
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
  });

  it('reads the backend from the environment; WEB_SEARCH_BACKEND picks among several', () => {
    expect(webSearchConfigFromEnv({})).toBeUndefined();
    expect(webSearchConfigFromEnv({ SEARXNG_URL: 'http://s.local' })).toEqual({
      backend: 'searxng',
      baseUrl: 'http://s.local',
    });
    const both = { SEARXNG_URL: 'http://s.local', TAVILY_API_KEY: 'tv', TAVILY_BASE_URL: 'http://t.local' };
    expect(webSearchConfigFromEnv(both)?.backend).toBe('searxng');
    expect(webSearchConfigFromEnv({ ...both, WEB_SEARCH_BACKEND: 'tavily' })).toEqual({
      backend: 'tavily',
      apiKey: 'tv',
      baseUrl: 'http://t.local',
    });
    expect(() => webSearchConfigFromEnv({ WEB_SEARCH_BACKEND: 'bing' })).toThrow(/not a backend/);
    expect(() => webSearchConfigFromEnv({ WEB_SEARCH_BACKEND: 'brave' })).toThrow(/BRAVE_SEARCH_API_KEY/);
  });

  it('is not registered without a backend, and says what to set; registered once one is set', () => {
    for (const k of ['SEARXNG_URL', 'BRAVE_SEARCH_API_KEY', 'TAVILY_API_KEY', 'WEB_SEARCH_BACKEND'])
      delete process.env[k];
    expect(registerBuiltinTools(createRegistry()).has('web_search')).toBe(false);
    expect(unregisteredBuiltins()).toEqual([{ id: 'web_search', reason: expect.stringContaining('SEARXNG_URL') }]);
    process.env.BRAVE_SEARCH_API_KEY = KEY;
    const registry = registerBuiltinTools(createRegistry());
    expect(registry.has('web_search')).toBe(true);
    expect(registry.permissions('web_search')).toEqual({ required: ['network'], optional: [] });
    expect(registry.enabled(['read'])).not.toContain('web_search');
    expect(unregisteredBuiltins()).toEqual([]);
  });

  it('registered by name without any configuration: not offered to a model; a call says what to set', async () => {
    for (const k of ['SEARXNG_URL', 'BRAVE_SEARCH_API_KEY', 'TAVILY_API_KEY', 'WEB_SEARCH_BACKEND'])
      delete process.env[k];
    const registry = registerBuiltinTools(createRegistry(), ['web_search']);
    expect(await registry.tools()).toEqual([]);
    const [left] = await registry.unavailable();
    expect(left).toEqual({
      id: 'web_search',
      reason: expect.stringMatching(/needs a search backend: set SEARXNG_URL/),
    });
    const u = await registry.execute('web_search', { query: 'x' }, { sessionID: 's' });
    expect(u.success).toBe(false);
    expect(u.error).toBe(left.reason);
  });

  it('a bad configuration is a sentence naming the setting, and the tool is not offered', async () => {
    const cases: Array<[WebSearchConfig, RegExp]> = [
      [{ backend: 'brave' }, /needs an API key: set BRAVE_SEARCH_API_KEY/],
      [{ backend: 'searxng', baseUrl: 'ftp://x' }, /must be http or https/],
    ];
    for (const [webSearch, said] of cases) {
      const registry = registerBuiltinTools(createRegistry(), ['web_search']);
      expect(await registry.tools({ initCtx: { webSearch } })).toEqual([]);
      const u = await registry.execute('web_search', { query: 'x' }, { sessionID: 's' }, { webSearch });
      expect(u.error).toMatch(said);
      expect((await registry.unavailable({ webSearch }))[0].reason).toBe(u.error);
    }
  });
});
