/**
 * Issue 21, item 4: every redirect hop is judged by the policy, not only the first URL. Real
 * loopback servers: an allowed one on 127.0.0.1 that redirects to a denied one on 127.0.0.2,
 * through webfetch, http_request, a REST tool and an OpenAPI tool (src/net/redirects.ts is the
 * one follower of all four). The SSRF guard allows private addresses, and the REST tools' host
 * allowlist names both servers, so only the policy stands between.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRegistry, registerBuiltinTools, createPolicy, type PolicyConfig } from '../../src/index.js';
import { registerOpenApiTools, registerRestTools } from '../../src/rest/index.js';
import { closeServer, listenLoopback, tempDir } from '../support/helpers.js';

let allowed: http.Server;
let denied: http.Server;
let base: string;
let deniedBase: string;
let deniedHits = 0;
let ws: { dir: string; cleanup: () => Promise<void> };

beforeAll(async () => {
  denied = http.createServer((_req, res) => {
    deniedHits++;
    res.setHeader('content-type', 'text/plain');
    res.end('internal secret');
  });
  await new Promise<void>((r) => denied.listen(0, '127.0.0.2', r));
  deniedBase = `http://127.0.0.2:${(denied.address() as AddressInfo).port}`;
  allowed = http.createServer((req, res) => {
    if (req.url === '/go') {
      res.writeHead(302, { location: `${deniedBase}/secret` });
      res.end();
    } else if (req.url === '/stay') {
      res.writeHead(302, { location: '/ok' });
      res.end();
    } else {
      res.setHeader('content-type', 'text/plain');
      res.end('public page');
    }
  });
  base = await listenLoopback(allowed);
  ws = await tempDir('policy-hops-');
});
afterAll(async () => {
  await closeServer(allowed);
  await closeServer(denied);
  await ws.cleanup();
});

const local = { allowPrivateNetwork: true };

/** A registry with the built-ins, a REST tool and an OpenAPI tool for both paths of the allowed server. */
async function registryUnder(config: PolicyConfig) {
  const registry = registerBuiltinTools(createRegistry({ policy: createPolicy(config) }));
  registerRestTools(registry, [
    { name: 'go', description: 'Go.', url: `${base}/go`, ssrfPolicy: local, allowedHosts: ['127.0.0.2'] },
    { name: 'stay', description: 'Stay.', url: `${base}/stay`, ssrfPolicy: local, allowedHosts: ['127.0.0.2'] },
  ]);
  const doc = {
    openapi: '3.0.3',
    info: { title: 'hops', version: '1' },
    servers: [{ url: base }],
    paths: {
      '/go': { get: { operationId: 'apiGo', responses: { 200: { description: 'ok' } } } },
      '/stay': { get: { operationId: 'apiStay', responses: { 200: { description: 'ok' } } } },
    },
  };
  await registerOpenApiTools(registry, doc, { ssrfPolicy: local, allowedHosts: ['127.0.0.2'] });
  return registry;
}

/** Each tool kind's call of a path of the allowed server. */
function calls(path: 'go' | 'stay'): Array<[string, Record<string, unknown>]> {
  return [
    ['webfetch', { url: `${base}/${path}` }],
    ['http_request', { url: `${base}/${path}`, method: 'GET' }],
    [`rest__${path}`, {}],
    [`rest__api${path === 'go' ? 'Go' : 'Stay'}`, {}],
  ];
}

async function run(registry: Awaited<ReturnType<typeof registryUnder>>, tool: string, args: Record<string, unknown>) {
  return registry.execute(tool, args, { sessionID: 'hops' }, { workspaceRoot: ws.dir, ...local });
}

describe('every redirect hop is judged by the policy', () => {
  it('a redirect from an allowed host to a denied one is refused with a sentence naming the hop', async () => {
    const registry = await registryUnder({
      rules: [{ permission: 'network', pattern: '127.0.0.2', action: 'deny', reason: 'internal services' }],
    });
    for (const [tool, args] of calls('stay')) {
      const r = await run(registry, tool, args);
      expect([tool, r.error, r.result.output]).toEqual([tool, undefined, expect.stringContaining('public page')]);
    }
    for (const [tool, args] of calls('go')) {
      const r = await run(registry, tool, args);
      expect([tool, r.error]).toEqual([
        tool,
        expect.stringContaining(
          `Redirect refused by the policy: ${base}/go redirected (HTTP 302) to ${deniedBase}/secret, and ${tool} redirect to ${deniedBase}/secret is denied by rule #1 `,
        ),
      ]);
      expect(r.error).toMatch(/\(internal services\)\. No request was sent to /);
    }
    expect(deniedHits).toBe(0);
  });

  it('a redirect out of a `default: deny` allow list is refused; staying inside it is followed', async () => {
    const registry = await registryUnder({
      default: 'deny',
      rules: [
        { permission: 'network', pattern: '127.0.0.1', action: 'allow' },
        { tool: 'rest__*', pattern: 'rest', action: 'allow' },
      ],
    });
    for (const [tool, args] of calls('stay')) {
      const r = await run(registry, tool, args);
      expect([tool, r.error]).toEqual([tool, undefined]);
    }
    for (const [tool, args] of calls('go')) {
      const r = await run(registry, tool, args);
      expect([tool, r.error]).toEqual([
        tool,
        expect.stringMatching(/Redirect refused by the policy: .* is denied by the policy's default \("deny"\)/),
      ]);
    }
    expect(deniedHits).toBe(0);
  });

  it('an ask on the hop goes to the approver, with the hop in the decision', async () => {
    const asked: string[] = [];
    const registry = registerBuiltinTools(
      createRegistry({
        policy: createPolicy(
          { rules: [{ permission: 'network', pattern: '127.0.0.2', action: 'ask' }] },
          { onPermissionRequest: (req) => (asked.push(req.decision.check.label), 'once') },
        ),
      }),
    );
    const r = await run(registry, 'webfetch', { url: `${base}/go` });
    expect(r.error).toBeUndefined();
    expect(r.result.output).toContain('internal secret');
    expect(asked).toEqual([`webfetch redirect to ${deniedBase}/secret`]);
    deniedHits = 0;
  });
});
