/**
 * http_request through the LangChain adapter against a real loopback server: methods, JSON bodies,
 * caps at and past their edges, binary refusal, the SSRF guard (redirects re-checked), the host
 * allowlist, credentials never echoed, and the per-registry response cache.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRegistry, registerBuiltinTools } from '../../../src/index.js';
import type { Tool } from '../../../src/authoring/tool.js';
import { HTTP_MAX_RESPONSE_BYTES, HTTP_MAX_REQUEST_BYTES } from '../../../src/net/http.js';
import { MAX_REDIRECTS } from '../../../src/net/redirects.js';
import { ResponseCache } from '../../../src/net/response-cache.js';
import { callTool } from '../../support/tool-call.js';
import { listenLoopback, closeServer } from '../../support/helpers.js';

let server: http.Server;
let base: string;
let port: number;
const hits: Record<string, number> = {};
let lastAuthorization: string | undefined;
const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const url = new URL(req.url!, 'http://x');
    hits[url.pathname] = (hits[url.pathname] ?? 0) + 1;
    lastAuthorization = req.headers.authorization;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const json = (status: number, value: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(value));
      };
      switch (url.pathname) {
        case '/echo':
          return json(200, {
            method: req.method,
            query: Object.fromEntries(url.searchParams),
            contentType: req.headers['content-type'] ?? null,
            authorization: req.headers.authorization ?? null,
            apiKey: req.headers['x-api-key'] ?? null,
            cookie: req.headers.cookie ?? null,
            acceptEncoding: req.headers['accept-encoding'] ?? null,
            body: Buffer.concat(chunks).toString(),
          });
        case '/count':
          return json(200, { n: hits['/count'] });
        case '/png':
          res.writeHead(200, { 'content-type': 'image/png' });
          return res.end(PNG);
        case '/size': {
          const n = Number(url.searchParams.get('n'));
          const declared = url.searchParams.has('declared') ? { 'content-length': String(n) } : {};
          res.writeHead(200, { 'content-type': 'text/plain', ...declared });
          return res.end(Buffer.alloc(n, 'a'));
        }
        case '/missing':
          return json(404, { error: 'no pet with id 7', seen: req.headers.authorization ?? null });
        case '/redirect':
          res.writeHead(Number(url.searchParams.get('status') ?? 302), { location: url.searchParams.get('to')! });
          return res.end();
        case '/loop':
          res.writeHead(302, { location: '/loop' });
          return res.end();
        case '/prg': // post-redirect-get to the same URL: not a loop
          if (req.method === 'POST') {
            res.writeHead(303, { location: '/prg' });
            return res.end();
          }
          return json(200, { method: req.method });
        case '/hang':
          return; // never answers
        case '/drop': // promises 100,000 bytes, sends 1,000, then drops the connection
          res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '100000' });
          res.write(Buffer.alloc(1000, 'a'));
          return void setImmediate(() => res.socket?.destroy());
        default:
          return json(404, { error: 'unknown route' });
      }
    });
  });
  base = await listenLoopback(server);
  port = Number(new URL(base).port);
});
afterAll(() => closeServer(server));

async function toolsWith(initCtx: Tool.InitContext = { allowPrivateNetwork: true }) {
  const registry = registerBuiltinTools(createRegistry(), ['http_request']);
  return registry.tools({ initCtx });
}

describe('http_request', () => {
  it('sends methods, query pairs, headers and a JSON body, and returns the JSON parsed', async () => {
    const tools = await toolsWith();
    const msg = await callTool(tools, 'http_request', {
      method: 'POST',
      url: `${base}/echo?a=1`,
      query: [{ name: 'q', value: 'two words & more' }],
      headers: [{ name: 'X-Api-Key', value: 'k-123' }],
      body: '{"name":"Rex"}',
    });
    expect(msg.status).toBe('success');
    const text = String(msg.content);
    expect(text.split('\n')[0]).toMatch(/^HTTP 200 OK \(application\/json, \d+ bytes\)$/);
    const body = JSON.parse(text.slice(text.indexOf('\n') + 1)) as Record<string, unknown>;
    expect(body).toEqual({
      method: 'POST',
      query: { a: '1', q: 'two words & more' },
      contentType: 'application/json',
      authorization: null,
      apiKey: 'k-123',
      cookie: null,
      acceptEncoding: null,
      body: '{"name":"Rex"}',
    });
    expect(msg.result.metadata).toMatchObject({
      method: 'POST',
      status: 200,
      contentType: 'application/json',
      cached: false,
    });
  });

  it('a dropped connection or a closed port is one sentence saying what happened and where (shared with webfetch)', async () => {
    const tools = await toolsWith();
    const dropped = await callTool(tools, 'http_request', { method: 'GET', url: `${base}/drop` });
    expect(dropped.status).toBe('error');
    expect(String(dropped.content)).toContain(
      `GET ${base}/drop failed: the connection was closed by the server while reading the body of ${base}/drop.`,
    );
    const closed = await new Promise<number>((resolve) => {
      const probe = http.createServer().listen(0, '127.0.0.1', () => {
        const p = (probe.address() as AddressInfo).port;
        probe.close(() => resolve(p));
      });
    });
    const refused = await callTool(tools, 'http_request', { method: 'GET', url: `http://127.0.0.1:${closed}/x` });
    expect(String(refused.content)).toContain(
      `failed: the connection to 127.0.0.1:${closed} was refused; nothing is listening there.`,
    );
  });

  it('refuses binary content with a note, and a connection header', async () => {
    const tools = await toolsWith();
    const png = await callTool(tools, 'http_request', { method: 'GET', url: `${base}/png` });
    expect(png.status).toBe('error');
    expect(String(png.content)).toContain('binary content (image/png, 16 bytes)');
    const host = await callTool(tools, 'http_request', {
      method: 'GET',
      url: `${base}/echo`,
      headers: [{ name: 'Host', value: 'evil.example' }],
    });
    expect(String(host.content)).toContain('The header Host is set by the connection itself');
  });

  it('accepts a body of exactly HTTP_MAX_RESPONSE_BYTES and refuses one byte more', async () => {
    const tools = await toolsWith();
    const at = await callTool(tools, 'http_request', {
      method: 'GET',
      url: `${base}/size?n=${HTTP_MAX_RESPONSE_BYTES}`,
    });
    expect(at.status).toBe('success');
    expect(at.result.metadata.bytes).toBe(HTTP_MAX_RESPONSE_BYTES);
    const past = await callTool(tools, 'http_request', {
      method: 'GET',
      url: `${base}/size?n=${HTTP_MAX_RESPONSE_BYTES + 1}`,
    });
    expect(past.status).toBe('error');
    expect(String(past.content)).toContain(`its body passed ${HTTP_MAX_RESPONSE_BYTES} bytes, over the 2 MB limit`);
    const declared = await callTool(tools, 'http_request', {
      method: 'GET',
      url: `${base}/size?declared=1&n=${HTTP_MAX_RESPONSE_BYTES + 1}`,
    });
    expect(String(declared.content)).toContain(
      `its Content-Length is ${HTTP_MAX_RESPONSE_BYTES + 1} bytes, over the 2 MB limit`,
    );
  });

  it('accepts a request body of exactly HTTP_MAX_REQUEST_BYTES and refuses one byte more', async () => {
    const tools = await toolsWith();
    const at = await callTool(tools, 'http_request', {
      method: 'PUT',
      url: `${base}/echo`,
      body: 'b'.repeat(HTTP_MAX_REQUEST_BYTES),
    });
    expect(at.status).toBe('success');
    const past = await callTool(tools, 'http_request', {
      method: 'PUT',
      url: `${base}/echo`,
      body: 'b'.repeat(HTTP_MAX_REQUEST_BYTES + 1),
    });
    expect(String(past.content)).toContain('over the 1 MB limit');
  });

  it('4xx answers fail with the status and the body', async () => {
    const tools = await toolsWith();
    const msg = await callTool(tools, 'http_request', { method: 'GET', url: `${base}/missing` });
    expect(msg.status).toBe('error');
    expect(String(msg.content)).toContain(`GET ${base}/missing answered HTTP 404 Not Found.`);
    expect(String(msg.content)).toContain('"error": "no pet with id 7"');
  });

  it('times out with a sentence naming the stage', async () => {
    const tools = await toolsWith();
    const msg = await callTool(tools, 'http_request', { method: 'GET', url: `${base}/hang`, timeout: 1 });
    expect(String(msg.content)).toMatch(/timed out after 1 s while connecting to|timed out after 1 s while/);
  });
});

describe('http_request: the SSRF guard', () => {
  it('blocks loopback by default, before any connection', async () => {
    const before = hits['/echo'] ?? 0;
    const msg = await callTool(await toolsWith({}), 'http_request', { method: 'GET', url: `${base}/echo` });
    expect(msg.status).toBe('error');
    expect(String(msg.content)).toContain('Blocked request to');
    expect(hits['/echo'] ?? 0).toBe(before);
  });

  it('re-checks every redirect hop: a redirect to a cloud metadata address is blocked', async () => {
    const msg = await callTool(await toolsWith(), 'http_request', {
      method: 'GET',
      url: `${base}/redirect?to=${encodeURIComponent('http://169.254.169.254/latest/meta-data/')}`,
    });
    expect(msg.status).toBe('error');
    expect(String(msg.content)).toContain('a cloud metadata endpoint');
    const first = `${base}/redirect?to=${encodeURIComponent('http://169.254.169.254/latest/meta-data/')}`;
    expect(String(msg.content)).toContain(
      `(Reached through a redirect: ${first} -> http://169.254.169.254/latest/meta-data/.)`,
    );
  });

  it(`follows ${MAX_REDIRECTS} redirects and no more, naming the chain`, async () => {
    const chain = (n: number): string =>
      n === 0 ? `${base}/echo` : `${base}/redirect?to=${encodeURIComponent(chain(n - 1))}`;
    const ok = await callTool(await toolsWith(), 'http_request', { method: 'GET', url: chain(MAX_REDIRECTS) });
    expect(ok.status).toBe('success');
    expect(ok.result.metadata.redirects).toHaveLength(MAX_REDIRECTS);
    const echoes = hits['/echo'];
    const past = await callTool(await toolsWith(), 'http_request', { method: 'GET', url: chain(MAX_REDIRECTS + 1) });
    expect(past.status).toBe('error');
    const hops = Array.from({ length: MAX_REDIRECTS + 2 }, (_, i) => chain(MAX_REDIRECTS + 1 - i));
    expect(String(past.content)).toContain(
      `Too many redirects: more than ${MAX_REDIRECTS} starting at ${hops[0]}, the last to ${hops[MAX_REDIRECTS + 1]}: ${hops.join(' -> ')}.`,
    );
    expect(hits['/echo']).toBe(echoes); // the hop past the limit was never requested
  });

  it('a redirect back to a request already sent is refused as a loop at once; a 303 to the same URL is not one', async () => {
    const before = hits['/loop'] ?? 0;
    const msg = await callTool(await toolsWith(), 'http_request', { method: 'GET', url: `${base}/loop` });
    expect(msg.status).toBe('error');
    expect(String(msg.content)).toContain(
      `Redirect loop: ${base}/loop redirected (HTTP 302) back to ${base}/loop, which was already requested`,
    );
    expect(hits['/loop']).toBe(before + 1);
    const prg = await callTool(await toolsWith(), 'http_request', { method: 'POST', url: `${base}/prg` });
    expect(prg.status).toBe('success');
    expect(prg.result.metadata.redirects).toEqual([`${base}/prg`]);
    expect(String(prg.content)).toContain('"method": "GET"');
  });

  it('a 303 turns a POST into a GET; credentials are not sent on to another origin', async () => {
    const other = `http://localhost:${port}/echo`;
    const msg = await callTool(await toolsWith(), 'http_request', {
      method: 'POST',
      url: `${base}/redirect?status=307&to=${encodeURIComponent(other)}`,
      headers: [{ name: 'Authorization', value: 'Bearer s3cret-token' }],
      body: 'payload',
    });
    const echoed = JSON.parse(String(msg.content).slice(String(msg.content).indexOf('\n') + 1)) as Record<
      string,
      unknown
    >;
    expect(echoed).toMatchObject({ method: 'POST', authorization: null, body: 'payload' });
    const same = await callTool(await toolsWith(), 'http_request', {
      method: 'POST',
      url: `${base}/redirect?status=303&to=/echo`,
      headers: [{ name: 'Authorization', value: 'Bearer s3cret-token' }],
      body: 'payload',
    });
    const echoed2 = JSON.parse(String(same.content).slice(String(same.content).indexOf('\n') + 1)) as Record<
      string,
      unknown
    >;
    expect(echoed2).toMatchObject({ method: 'GET', authorization: 'Bearer s3cret-token', body: '' });
  });

  it('a 307 to another origin drops Authorization, Cookie and API keys; the body keeps its Content-Type', async () => {
    const other = `http://localhost:${port}/echo`;
    const msg = await callTool(await toolsWith(), 'http_request', {
      method: 'PUT',
      url: `${base}/redirect?status=307&to=${encodeURIComponent(other)}`,
      headers: [
        { name: 'Authorization', value: 'Bearer s3cret-token' },
        { name: 'Cookie', value: 'session=s3cret-cookie' },
        { name: 'X-Api-Key', value: 'k-s3cret' },
        { name: 'Accept-Encoding', value: 'identity' },
      ],
      body: '{"name":"Rex"}',
    });
    expect(msg.status).toBe('success');
    expect(msg.result.metadata.redirects).toEqual([other]);
    const echoed = JSON.parse(String(msg.content).slice(String(msg.content).indexOf('\n') + 1)) as Record<
      string,
      unknown
    >;
    expect(echoed).toMatchObject({
      method: 'PUT',
      authorization: null,
      cookie: null,
      apiKey: null,
      acceptEncoding: 'identity',
      contentType: 'application/json',
      body: '{"name":"Rex"}',
    });
    // The same hop on the same origin keeps them all.
    const same = await callTool(await toolsWith(), 'http_request', {
      method: 'PUT',
      url: `${base}/redirect?status=307&to=/echo`,
      headers: [
        { name: 'Cookie', value: 'session=s3cret-cookie' },
        { name: 'X-Api-Key', value: 'k-s3cret' },
      ],
      body: '{"name":"Rex"}',
    });
    expect(String(same.content)).toContain('"cookie": "session=s3cret-cookie"');
    expect(String(same.content)).toContain('"apiKey": "k-s3cret"');
  });

  it('the host allowlist refuses other hosts, redirects included', async () => {
    const tools = await toolsWith({ allowPrivateNetwork: true, httpAllowedHosts: ['127.0.0.1'] });
    const ok = await callTool(tools, 'http_request', { method: 'GET', url: `${base}/echo` });
    expect(ok.status).toBe('success');
    const direct = await callTool(tools, 'http_request', { method: 'GET', url: `http://localhost:${port}/echo` });
    expect(String(direct.content)).toContain("The host localhost is not in this tool's allowed hosts (127.0.0.1)");
    const via = await callTool(tools, 'http_request', {
      method: 'GET',
      url: `${base}/redirect?to=${encodeURIComponent(`http://localhost:${port}/echo`)}`,
    });
    expect(String(via.content)).toContain(
      `(reached through a redirect: ${base}/redirect?to=${encodeURIComponent(`http://localhost:${port}/echo`)} -> http://localhost:${port}/echo)`,
    );
  });
});

describe('http_request: credentials in the URL', () => {
  it('are used for the request but never shown, in results or errors', async () => {
    const tools = await toolsWith();
    const url = `http://alice:pw-Zq9%2Fx@127.0.0.1:${port}/echo`;
    const ok = await callTool(tools, 'http_request', { method: 'GET', url });
    const expected = `Basic ${Buffer.from('alice:pw-Zq9/x').toString('base64')}`;
    expect(ok.status).toBe('success');
    const text = JSON.stringify([ok.content, ok.result]);
    expect(text).not.toContain('pw-Zq9');
    // The server saw the credentials, as the Basic header the connection builds from them; its echo
    // of that header is scrubbed too (base64 of user:password is the password, encoded).
    expect(lastAuthorization).toBe(expected);
    expect(String(ok.content)).toContain('"authorization": "Basic ***"');
    expect(text).not.toContain(expected.slice(6));
    const err = await callTool(tools, 'http_request', {
      method: 'GET',
      url: `http://alice:pw-Zq9%2Fx@127.0.0.1:${port}/missing`,
    });
    expect(err.status).toBe('error');
    expect(JSON.stringify([err.content, err.result])).not.toContain('pw-Zq9');
  });
});

describe('http_request: the response cache', () => {
  it('serves identical GETs within the TTL from the registry cache, not other registries', async () => {
    const initCtx = { allowPrivateNetwork: true, httpCacheTtlSeconds: 3600 };
    const tools = await toolsWith(initCtx);
    const started = Date.now();
    const first = await callTool(tools, 'http_request', { method: 'GET', url: `${base}/count` });
    const second = await callTool(tools, 'http_request', { method: 'GET', url: `${base}/count` });
    // The age is whole seconds since the first response, at most the time both calls took (a loaded
    // machine may take more than a second between them).
    const elapsedSeconds = Math.floor((Date.now() - started) / 1000);
    const age = second.result.metadata.ageSeconds as number;
    expect(first.result.metadata.cached).toBe(false);
    expect(second.result.metadata).toMatchObject({ cached: true, ageSeconds: expect.any(Number) });
    const inRange = Number.isInteger(age) && age >= 0 && age <= elapsedSeconds;
    expect({ age, elapsedSeconds, inRange }).toEqual({ age, elapsedSeconds, inRange: true });
    expect(second.content).toBe(String(first.content).replace(')\n', `, cached ${age} s ago)\n`));
    const other = await callTool(await toolsWith(initCtx), 'http_request', { method: 'GET', url: `${base}/count` });
    expect(other.result.metadata.cached).toBe(false);
    expect(hits['/count']).toBe(2);
  });

  it('ResponseCache: a hit until the TTL, a miss at it', () => {
    let now = 1000;
    const cache = new ResponseCache(() => now);
    const key = ResponseCache.key('t', 'GET', new URL('http://a/x'), { Authorization: 'a' });
    expect(key).not.toBe(ResponseCache.key('t', 'GET', new URL('http://a/x'), { Authorization: 'b' }));
    // Without a store the in-process cache answers at once (no promise to wait for).
    void cache.set(key, {
      status: 200,
      statusText: 'OK',
      headers: {},
      body: Buffer.from('x'),
      finalUrl: new URL('http://a/x'),
      redirects: [],
    });
    now += 4999;
    expect(cache.get(key, 5000)?.ageMs).toBe(4999);
    now += 1;
    expect(cache.get(key, 5000)).toBeUndefined();
  });
});
