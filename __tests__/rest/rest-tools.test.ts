/**
 * REST tools from configuration, through the LangChain adapter against a real loopback API:
 * templates, secrets from ${ENV} (never in results, errors or progress), the per-tool queue,
 * the response cache, and configs refused with a sentence.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRegistry, type ToolUpdate } from '../../src/index.js';
import { registerRestTools, type RestToolConfig } from '../../src/rest/index.js';
import { callTool } from '../support/tool-call.js';
import { listenLoopback, closeServer } from '../support/helpers.js';

const ENV = { PET_TOKEN: 'tok-SECRET-9f8e', PET_KEY: 'key/SECRET+7d6c' };
let server: http.Server;
let base: string;
const held: Array<() => void> = [];
const arrivals: Array<(n: number) => void> = [];
let inFlight = 0;
let maxInFlight = 0;
let calls = 0;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    calls++;
    const url = new URL(req.url!, 'http://x');
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const seen = {
        url: req.url,
        authorization: req.headers.authorization ?? null,
        body: Buffer.concat(chunks).toString(),
      };
      const json = (status: number, v: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(v));
      };
      const m = /^\/v1\/pets\/([^/]+)$/.exec(url.pathname);
      if (url.pathname === '/v1/held') {
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        held.push(() => {
          inFlight--;
          json(200, { n: url.searchParams.get('n') });
        });
        arrivals.shift()?.(held.length);
        return;
      }
      if (url.pathname === '/v1/away') {
        res.writeHead(302, { location: `http://localhost:${(server.address() as AddressInfo).port}/v1/pets/1` });
        return res.end();
      }
      if (m && m[1] === '404') return json(404, { error: 'no such pet', youSent: seen });
      if (m) return json(200, { id: decodeURIComponent(m[1]), ...seen });
      if (url.pathname === '/v1/pets') return json(201, seen);
      return json(404, { error: 'unknown route' });
    });
  });
  base = await listenLoopback(server);
});
afterAll(() => closeServer(server));

const local = { ssrfPolicy: { allowPrivateNetwork: true } };

function petTools(extra: Partial<RestToolConfig> = {}) {
  const registry = createRegistry();
  const updates: ToolUpdate[] = [];
  const ids = registerRestTools(
    registry,
    [
      {
        name: 'get_pet',
        description: 'Get one pet by id.',
        url: `${base}/v1/pets/{petId}`,
        query: { key: '${PET_KEY}', fields: '{fields}' },
        headers: { Authorization: 'Bearer ${PET_TOKEN}' },
        parametersSchema: {
          type: 'object',
          properties: {
            petId: { type: 'string', description: 'The pet id' },
            fields: { type: 'string', description: 'Fields to return' },
          },
          required: ['petId'],
        },
        cacheTtlSeconds: 60,
        ...local,
        ...extra,
      },
      {
        name: 'add_pet',
        description: 'Add a pet.',
        method: 'POST',
        url: `${base}/v1/pets`,
        headers: { Authorization: 'Bearer ${PET_TOKEN}' },
        body: { pet: { name: '{name}', age: '{age}' }, source: 'agent' },
        parametersSchema: {
          type: 'object',
          properties: { name: { type: 'string', description: 'Name' }, age: { type: 'integer', description: 'Age' } },
          required: ['name'],
        },
        ...local,
      },
    ],
    { env: ENV },
  );
  return { registry, ids, updates, tools: () => registry.tools({ onToolResult: (u) => updates.push(u) }) };
}

const secretsIn = (v: unknown) => /SECRET/.test(JSON.stringify(v));

describe('REST tools from configuration', () => {
  it('registers rest__<name> and fills path, query, header and body templates', async () => {
    const { ids, tools } = petTools();
    expect(ids).toEqual(['rest__get_pet', 'rest__add_pet']);
    const t = await tools();
    const got = await callTool(t, 'rest__get_pet', { petId: 'a b/7' });
    expect(got.status).toBe('success');
    // The server saw the secrets; the model sees them scrubbed.
    expect(String(got.content)).toContain('"id": "a b/7"');
    expect(String(got.content)).toContain('"authorization": "Bearer ***"');
    expect(String(got.content)).toMatch(/"url": "\/v1\/pets\/a%20b%2F7\?key=\*\*\*"/);
    const added = await callTool(t, 'rest__add_pet', { name: 'Rex', age: 3 });
    const sent = JSON.parse(String(added.content).slice(String(added.content).indexOf('\n') + 1)) as { body: string };
    expect(JSON.parse(sent.body)).toEqual({ pet: { name: 'Rex', age: 3 }, source: 'agent' });
    const partial = await callTool(t, 'rest__add_pet', { name: 'Tom' });
    expect(String(partial.content)).toContain(
      JSON.stringify(JSON.stringify({ pet: { name: 'Tom' }, source: 'agent' })),
    );
  });

  it('never shows a secret: results, errors (HTTP, network, timeout) and progress', async () => {
    const { tools, updates, registry } = petTools({ cacheTtlSeconds: 0 });
    const t = await tools();
    const ok = await callTool(t, 'rest__get_pet', { petId: '1' });
    const notFound = await callTool(t, 'rest__get_pet', { petId: '404' });
    expect(notFound.status).toBe('error');
    expect(String(notFound.content)).toContain('answered HTTP 404 Not Found');
    expect(String(notFound.content)).toContain('Bearer ***');
    // A server that is not there: the error names the URL, with the key in its query.
    const closed = createRegistry();
    registerRestTools(
      closed,
      [{ name: 'down', description: 'Down.', url: 'http://127.0.0.1:1/x?key=${PET_KEY}', ...local }],
      { env: ENV },
    );
    const down = await callTool(await closed.tools({ onToolResult: (u) => updates.push(u) }), 'rest__down', {});
    expect(String(down.content)).toMatch(/refused/);
    const slow = createRegistry();
    registerRestTools(
      slow,
      [{ name: 'slow', description: 'Slow.', url: `${base}/v1/held?t=\${PET_TOKEN}`, timeoutSeconds: 1, ...local }],
      { env: ENV },
    );
    const timedOut = await callTool(await slow.tools({ onToolResult: (u) => updates.push(u) }), 'rest__slow', {});
    expect(String(timedOut.content)).toContain('timed out after 1 s');
    held.splice(0).forEach((release) => release());
    for (const msg of [ok, notFound, down, timedOut]) expect(secretsIn([msg.content, msg.result])).toBe(false);
    expect(updates.length).toBeGreaterThan(4);
    expect(secretsIn(updates)).toBe(false);
    expect(registry.ids()).toEqual(['rest__get_pet', 'rest__add_pet']);
  });

  it('a secret the server echoes in a URL-encoded form is scrubbed too', async () => {
    const { tools } = petTools({ cacheTtlSeconds: 0, query: { echo: '${PET_KEY}' } });
    const msg = await callTool(await tools(), 'rest__get_pet', { petId: '1' });
    expect(String(msg.content)).toContain('echo=***');
    expect(secretsIn(msg.content)).toBe(false);
  });

  it('identical GETs within the TTL come from the cache, with cached and age in the metadata', async () => {
    const { tools } = petTools();
    const t = await tools();
    const before = calls;
    const started = Date.now();
    const a = await callTool(t, 'rest__get_pet', { petId: '5' });
    const b = await callTool(t, 'rest__get_pet', { petId: '5' });
    const elapsedSeconds = Math.floor((Date.now() - started) / 1000);
    const c = await callTool(t, 'rest__get_pet', { petId: '6' });
    expect([a, b, c].map((m) => m.result.metadata.cached)).toEqual([false, true, false]);
    // Whole seconds since the first response: at most the time the two calls took (over 1 s on a loaded machine).
    const age = b.result.metadata.ageSeconds as number;
    const inRange = Number.isInteger(age) && age >= 0 && age <= elapsedSeconds;
    expect({ age, elapsedSeconds, inRange }).toEqual({ age, elapsedSeconds, inRange: true });
    expect(calls - before).toBe(2);
  });

  it('a cache entry belongs to its tool: another tool GETting the same URL in the same registry is not served it', async () => {
    const registry = createRegistry();
    const getPet = (name: string, header: string) => ({
      name,
      description: 'Get one pet by id.',
      url: `${base}/v1/pets/{petId}`,
      query: { key: '${PET_KEY}' },
      headers: { Authorization: 'Bearer ${PET_TOKEN}', 'X-Caller': header },
      parametersSchema: {
        type: 'object' as const,
        properties: { petId: { type: 'string', description: 'The pet id' } },
        required: ['petId'],
      },
      cacheTtlSeconds: 60,
      ...local,
    });
    // The same request (URL and headers) from two tools: one tool's answer is not the other's.
    registerRestTools(registry, [getPet('pet_a', 'same'), getPet('pet_b', 'same')], { env: ENV });
    const t = await registry.tools();
    const before = calls;
    const a1 = await callTool(t, 'rest__pet_a', { petId: '9' });
    const b1 = await callTool(t, 'rest__pet_b', { petId: '9' });
    const a2 = await callTool(t, 'rest__pet_a', { petId: '9' });
    expect([a1, b1, a2].map((m) => m.result.metadata.cached)).toEqual([false, false, true]);
    expect(calls - before).toBe(2);
  });

  it('the concurrency queue runs at most `concurrency` calls at once; the rest wait and say so', async () => {
    const registry = createRegistry();
    const updates: ToolUpdate[] = [];
    registerRestTools(registry, [
      { name: 'held', description: 'Held.', url: `${base}/v1/held?n={n}`, concurrency: 1, ...local },
    ]);
    const t = await registry.tools({ onToolResult: (u) => updates.push(u) });
    maxInFlight = 0;
    const arrived = () => new Promise<number>((r) => arrivals.push(r));
    const first = arrived();
    const results = ['1', '2', '3'].map((n) => callTool(t, 'rest__held', { n }));
    await first;
    for (let i = 0; i < 2; i++) {
      const next = arrived();
      held.shift()!();
      await next;
    }
    held.shift()!();
    const done = await Promise.all(results);
    expect(done.map((m) => m.status)).toEqual(['success', 'success', 'success']);
    expect(maxInFlight).toBe(1);
    expect(updates.filter((u) => /waiting for a free slot/.test(u.result?.title ?? '')).length).toBe(2);
  });

  it('refuses a bad config with a sentence', () => {
    const r = createRegistry();
    expect(() => registerRestTools(r, [{ name: 'x', description: 'X.', url: 'https://{host}/a' }])).toThrow(
      "the url's host cannot be a {parameter}",
    );
    expect(() =>
      registerRestTools(r, [{ name: 'x', description: 'X.', url: 'https://a.example/${NOPE_NOT_SET}' }], { env: {} }),
    ).toThrow('uses ${NOPE_NOT_SET}, which is not set in the environment');
    expect(() => registerRestTools(r, [{ name: 'x', description: '', url: 'https://a.example/' }])).toThrow(
      'needs a "description"',
    );
  });

  it('a path parameter cannot walk to another path', async () => {
    const { tools } = petTools();
    const msg = await callTool(await tools(), 'rest__get_pet', { petId: '..' });
    expect(String(msg.content)).toContain('"petId" cannot be ".."');
  });

  it('a redirect off the configured host is refused unless allowedHosts lists it', async () => {
    const r = createRegistry();
    registerRestTools(r, [
      { name: 'away', description: 'Away.', url: `${base}/v1/away`, ...local },
      { name: 'listed', description: 'Listed.', url: `${base}/v1/away`, allowedHosts: ['localhost'], ...local },
    ]);
    const t = await r.tools();
    const refused = await callTool(t, 'rest__away', {});
    expect(String(refused.content)).toContain("The host localhost is not in this tool's allowed hosts (127.0.0.1)");
    const ok = await callTool(t, 'rest__listed', {});
    expect(ok.status).toBe('success');
    expect(ok.result.metadata.redirects).toEqual([expect.stringMatching(/^http:\/\/localhost:\d+\/v1\/pets\/1$/)]);
  });
});
