/**
 * Issue 21, item 3: hosts are judged as the connection reaches them. With denies on `localhost`
 * and `127.0.0.1`, no spelling of the loopback address reaches a real loopback server through
 * webfetch or http_request, with the SSRF guard's private-network allowance on (so that only the
 * policy stands between the tool and the server).
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import http from 'node:http';
import { createRegistry, registerBuiltinTools, createPolicy } from '../../src/index.js';
import { hostSpellings } from '../../src/policy/checks.js';
import type { PolicyRule } from '../../src/policy/index.js';
import { closeServer, listenLoopback, tempDir } from '../support/helpers.js';

let server: http.Server;
let port: string;
let hits = 0;
let ws: { dir: string; cleanup: () => Promise<void> };

beforeAll(async () => {
  server = http.createServer((_req, res) => {
    hits++;
    res.setHeader('content-type', 'text/plain');
    res.end('loopback secret');
  });
  port = new URL(await listenLoopback(server)).port;
  ws = await tempDir('policy-hosts-');
});
afterAll(async () => {
  await closeServer(server);
  await ws.cleanup();
});

/** Every way of writing the loopback address a URL parser and the connection accept. */
const LOOPBACK_SPELLINGS = [
  'localhost',
  'localhost.',
  'LOCALHOST..',
  'LocalHost',
  '127.0.0.1',
  '127.0.0.1.',
  '127.1',
  '2130706433',
  '0x7f000001',
  '0x7f.0.0.1',
  '0177.0.0.1',
  '0.0.0.0',
  '[::ffff:127.0.0.1]',
  '[::ffff:7f00:1]',
  '[::FFFF:7F00:1]',
  '[0:0:0:0:0:ffff:127.0.0.1]',
  '[::ffff:0.0.0.0]',
];

function registryWith(rules: PolicyRule[]) {
  return registerBuiltinTools(createRegistry({ policy: createPolicy({ rules }) }));
}

const initCtx = () => ({ workspaceRoot: ws.dir, allowPrivateNetwork: true });

describe('hosts are judged as the connection reaches them', () => {
  it('every spelling reaches the server when nothing denies it (so the refusals below are the policy)', async () => {
    const registry = registryWith([]);
    for (const host of ['LOCALHOST..', '[::ffff:7f00:1]', '2130706433', '0.0.0.0']) {
      const r = await registry.execute(
        'http_request',
        { url: `http://${host}:${port}/x`, method: 'GET' },
        {},
        initCtx(),
      );
      expect([host, r.error, r.result.output]).toEqual([host, undefined, expect.stringContaining('loopback secret')]);
    }
  });

  it('with denies on localhost and 127.0.0.1, no spelling reaches it through http_request or webfetch', async () => {
    const registry = registryWith([
      { permission: 'network', pattern: 'localhost', action: 'deny', reason: 'no local services' },
      { permission: 'network', pattern: '127.0.0.1', action: 'deny', reason: 'no local services' },
    ]);
    const before = hits;
    for (const tool of ['http_request', 'webfetch']) {
      for (const host of LOOPBACK_SPELLINGS) {
        const url = `http://${host}:${port}/x`;
        const args = tool === 'http_request' ? { url, method: 'GET' } : { url };
        const r = await registry.execute(tool, args, {}, initCtx());
        expect([tool, host, r.error]).toEqual([
          tool,
          host,
          expect.stringMatching(
            new RegExp(`^The ${tool} call was not run: .* is denied by rule #\\d .*no local services`),
          ),
        ]);
      }
    }
    expect(hits).toBe(before);
  });

  it('a deny on either name covers the other; a pattern is compared in the same normal form', async () => {
    const onlyName = registryWith([{ permission: 'network', pattern: 'LOCALHOST.', action: 'deny' }]);
    const onlyAddress = registryWith([{ permission: 'network', pattern: '127.0.0.1', action: 'deny' }]);
    const before = hits;
    for (const [registry, host] of [
      [onlyName, '127.0.0.1'],
      [onlyName, '[::ffff:7f00:1]'],
      [onlyAddress, 'localhost'],
      [onlyAddress, 'app.localhost'],
    ] as const) {
      const r = await registry.execute(
        'http_request',
        { url: `http://${host}:${port}/`, method: 'GET' },
        {},
        initCtx(),
      );
      expect([host, r.error]).toEqual([host, expect.stringMatching(/is denied by rule #1/)]);
    }
    expect(hits).toBe(before);
  });

  it('hostSpellings: the connected form first, then the other names', () => {
    expect(hostSpellings('LOCALHOST..')).toEqual(['localhost', '127.0.0.1', '::1']);
    expect(hostSpellings('[::ffff:7f00:1]')).toEqual(['127.0.0.1', '::ffff:7f00:1', 'localhost']);
    expect(hostSpellings('example.COM.')).toEqual(['example.com']);
    expect(hostSpellings('[2001:DB8::1]')).toEqual(['2001:db8::1']);
  });
});
