/**
 * Attacks on the REST/OpenAPI tools, http_request and the response cache (issue 21, items 6-11),
 * each against real loopback servers through the LangChain adapter: secrets at the edge of a cut,
 * every encoded form of credentials the package sends, a path key or argument moving the host,
 * OpenAPI $refs reading local files, a $ref bomb, and a cached body served past the guard.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import http from 'node:http';
import path from 'node:path';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import fc from 'fast-check';
import { createRegistry, registerBuiltinTools } from '../../src/index.js';
import { importOpenApi, registerOpenApiTools, registerRestTools } from '../../src/rest/index.js';
import { HTTP_ERROR_BODY_CHARS } from '../../src/net/http.js';
import { ERROR_SNIPPET_CHARS } from '../../src/tools/web/webfetch.js';
import { cutScrubbed, secretForms, SECRET_MIN_CHARS } from '../../src/net/scrub.js';
import { OPENAPI_MAX_EXPANDED_NODES } from '../../src/rest/openapi-load.js';
import { OPENAPI_MAX_SCHEMA_NODES } from '../../src/rest/openapi.js';
import { callTool } from '../support/tool-call.js';
import { listenLoopback, closeServer, tempDir } from '../support/helpers.js';

/** 28 characters, no four of them in a row appear in ordinary text. */
const TOKEN = 'tQ7xW3vK9mP2rT8yL4nB6cJ1hZ5d';
const local = { ssrfPolicy: { allowPrivateNetwork: true } };

/** Every run of 4 characters of `secret` that `text` shows, if any. */
function leaked(text: string, secret: string): string[] {
  const out: string[] = [];
  for (let i = 0; i + 4 <= secret.length; i++)
    if (text.includes(secret.slice(i, i + 4))) out.push(secret.slice(i, i + 4));
  return out;
}

let api: http.Server;
let other: http.Server;
let apiBase: string;
let otherBase: string;
const otherHits: string[] = [];
const apiHits: Array<{ url: string; authorization?: string }> = [];

beforeAll(async () => {
  api = http.createServer((req, res) => {
    const url = new URL(req.url!, 'http://x');
    apiHits.push({ url: req.url!, authorization: req.headers.authorization });
    const auth = req.headers.authorization ?? '';
    const text = (status: number, body: string, type = 'text/plain') => {
      res.writeHead(status, { 'content-type': type });
      res.end(body);
    };
    switch (url.pathname) {
      case '/echo-error': // echoes the model's padding, then the Authorization header, then more text
        return text(400, `bad request: ${url.searchParams.get('pad') ?? ''}${auth} (rejected)`);
      case '/echo-cut': // echoes the header cut short by the server itself, at `n` characters
        return text(
          400,
          `${url.searchParams.get('pad') ?? ''}${auth.slice(0, Number(url.searchParams.get('n')))} (cut by the server)`,
        );
      case '/whoami': {
        const echo = {
          raw: auth,
          urlEncoded: encodeURIComponent(auth),
          decoded: Buffer.from(auth.replace(/^Basic /, ''), 'base64').toString(),
        };
        return text(url.searchParams.has('fail') ? 401 : 200, JSON.stringify(echo), 'application/json');
      }
      case '/inventory':
        return text(200, JSON.stringify({ widgets: 42, secretPlan: 'internal-only' }), 'application/json');
      case '/redirect':
        res.writeHead(302, { location: url.searchParams.get('to')! });
        return res.end();
      default:
        return text(200, JSON.stringify({ path: url.pathname, search: url.search }), 'application/json');
    }
  });
  other = http.createServer((req, res) => {
    otherHits.push(`${req.method} ${req.url} ${req.headers.authorization ?? ''}`);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"collected":true}');
  });
  apiBase = await listenLoopback(api);
  otherBase = await listenLoopback(other);
});
afterAll(async () => {
  await closeServer(api);
  await closeServer(other);
});

describe('secrets at the edge of a cut (item 6)', () => {
  async function echoTool() {
    const registry = createRegistry();
    registerRestTools(
      registry,
      [
        {
          name: 'echo_error',
          description: 'Echo.',
          url: `${apiBase}/echo-error`,
          query: { pad: '{pad}' },
          headers: { Authorization: 'Bearer ${API_TOKEN}' },
          ...local,
        },
        {
          name: 'echo_cut',
          description: 'Echo cut by the server.',
          url: `${apiBase}/echo-cut`,
          query: { pad: '{pad}', n: '{n}' },
          headers: { Authorization: 'Bearer ${API_TOKEN}' },
          ...local,
        },
      ],
      { env: { API_TOKEN: TOKEN } },
    );
    return registry.tools();
  }

  it('the 2,000-character error quote never shows any of the token, wherever the cut falls in it', async () => {
    const tools = await echoTool();
    const before = 'bad request: '.length + 'Bearer '.length;
    // Cut positions from 2 characters before the token to 2 after it, every one.
    for (let k = -2; k <= TOKEN.length + 2; k++) {
      const pad = 'p'.repeat(HTTP_ERROR_BODY_CHARS - before - k);
      const msg = await callTool(tools, 'rest__echo_error', { pad });
      const text = String(msg.content);
      expect(msg.status).toBe('error');
      expect(text).toContain('answered HTTP 400');
      expect({ k, leaked: leaked(text, TOKEN) }).toEqual({ k, leaked: [] });
      const quoteEnd = text.slice(0, text.indexOf('...\n'));
      // Not even its first characters: what is left at the cut is masked.
      for (let j = 1; j < TOKEN.length; j++) expect(quoteEnd.endsWith(TOKEN.slice(0, j))).toBe(false);
      expect(JSON.stringify(msg.result ?? null)).not.toContain(TOKEN.slice(0, 4));
    }
  });

  it("a token's prefix the server itself cut off, left at our cut, is masked", async () => {
    const tools = await echoTool();
    for (const n of [7 + 4, 7 + 10, 7 + 16, 7 + 27]) {
      // The server's own cut falls exactly where ours does: the quote ends on a prefix of the token.
      const pad = 'p'.repeat(HTTP_ERROR_BODY_CHARS - n);
      const msg = await callTool(tools, 'rest__echo_cut', { pad, n: String(n) });
      const text = String(msg.content);
      expect(text).toContain('answered HTTP 400');
      expect({ n, leaked: leaked(text, TOKEN) }).toEqual({ n, leaked: [] });
      expect(text).toContain('Bearer ***');
    }
  });

  it("webfetch's error snippet never shows part of the Basic credentials it sent, wherever its cut falls", async () => {
    const tools = await registerBuiltinTools(createRegistry(), ['webfetch']).tools({
      initCtx: { allowPrivateNetwork: true },
    });
    const basic = Buffer.from('alice:pw-fetch-Secret-77').toString('base64');
    const before = 'bad request: '.length + 'Basic '.length;
    for (let k = -1; k <= basic.length + 1; k++) {
      const pad = 'p'.repeat(ERROR_SNIPPET_CHARS - before - k);
      const url = `${apiBase.replace('http://', 'http://alice:pw-fetch-Secret-77@')}/echo-error?pad=${pad}`;
      const msg = await callTool(tools, 'webfetch', { url, format: 'text' });
      expect(apiHits.at(-1)!.authorization).toBe(`Basic ${basic}`);
      expect(String(msg.content)).toContain('HTTP 400');
      expect({ k, leaked: leaked(String(msg.content), basic) }).toEqual({ k, leaked: [] });
    }
  });

  it('cutScrubbed: URL credentials are masked before the cut, so a cut inside them shows none of the password', () => {
    const text = 'see https://deploy-user:Pw7zQk-very-secret@db.test/main for the dump';
    for (let max = 0; max <= text.length; max++) {
      const out = cutScrubbed(text, max);
      expect({ max, out, leak: /Pw|deploy-user|very-secret/.test(out) }).toEqual({ max, out, leak: false });
    }
  });

  it('cutScrubbed: for any text, secret and cut, no whole secret and no prefix of one at the cut', () => {
    const alphabet = fc.constantFrom(...'abcXYZ019-_/+= '.split(''));
    fc.assert(
      fc.property(
        fc.string({ unit: alphabet, maxLength: 40 }),
        fc.string({ unit: alphabet, minLength: 4, maxLength: 12 }),
        fc.string({ unit: alphabet, maxLength: 40 }),
        fc.nat(100),
        (before, secret, after, max) => {
          const forms = secretForms([secret]);
          const out = cutScrubbed(`${before}${secret}${after}`, max, forms);
          expect(out).not.toContain(secret);
          if (out.endsWith('...')) {
            const head = out.slice(0, -3);
            for (const form of forms)
              for (let j = 1; j < form.length; j++) expect(head.endsWith(form.slice(0, j))).toBe(false);
          }
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('SECRET_MIN_CHARS', () => {
  it('no form of any secret is shorter than SECRET_MIN_CHARS, so scrubbing never mangles ordinary text', () => {
    expect(secretForms(['../..', 'ab?cdefg', 'x#yzzz', '%41%42%43%44'])).not.toContain('');
    fc.assert(
      fc.property(fc.array(fc.string({ minLength: 0, maxLength: 12 }), { maxLength: 4 }), (secrets) => {
        for (const form of secretForms(secrets)) expect(form.length).toBeGreaterThanOrEqual(SECRET_MIN_CHARS);
      }),
      { numRuns: 1000 },
    );
  });

  it('a secret of exactly SECRET_MIN_CHARS characters is scrubbed; one character shorter is not', async () => {
    for (const [key, scrubbed] of [
      ['wxyz0123456'.slice(0, SECRET_MIN_CHARS), true],
      ['wxyz0123456'.slice(0, SECRET_MIN_CHARS - 1), false],
    ] as const) {
      const registry = createRegistry();
      registerRestTools(
        registry,
        [{ name: 'q', description: 'Q.', url: `${apiBase}/q`, query: { key: '${K}' }, ...local }],
        {
          env: { K: key },
        },
      );
      const msg = await callTool(await registry.tools(), 'rest__q', {});
      expect(String(msg.content)).toContain(scrubbed ? '"search": "?key=***"' : `"search": "?key=${key}"`);
    }
  });
});

describe('credentials in a config URL (item 7)', () => {
  const variants = [
    { label: 'plain', user: 'svc-reporter', pass: 'hunter2-longpass', decodedPass: 'hunter2-longpass' },
    { label: 'percent-encoded', user: 'svc-reporter', pass: 'p%40ss%2Fw0rd%2B%22x', decodedPass: 'p@ss/w0rd+"x' },
  ];
  for (const v of variants)
    it(`user:password in the url are sent as Basic auth and no encoded form of them is shown (${v.label})`, async () => {
      const registry = createRegistry();
      registerRestTools(
        registry,
        [
          {
            name: 'whoami',
            description: 'Who am I.',
            url: `http://\${SVC_USER}:\${SVC_PASS}@${apiBase.slice('http://'.length)}/whoami`,
            query: { fail: '{fail}' },
            parametersSchema: { type: 'object', properties: { fail: { type: 'string', description: 'Fail' } } },
            ...local,
          },
        ],
        { env: { SVC_USER: v.user, SVC_PASS: v.pass } },
      );
      const tools = await registry.tools();
      const basic = Buffer.from(`${v.user}:${v.decodedPass}`).toString('base64');
      for (const args of [{}, { fail: '1' }]) {
        const msg = await callTool(tools, 'rest__whoami', args);
        expect(apiHits.at(-1)!.authorization).toBe(`Basic ${basic}`);
        const shown = JSON.stringify([msg.content, msg.result ?? null]);
        expect(String(msg.content)).toContain('Basic ***');
        for (const secret of [basic, encodeURIComponent(basic), v.pass, v.decodedPass, `${v.user}:`])
          expect({ args, secret, shown: shown.includes(secret) }).toEqual({ args, secret, shown: false });
        expect(leaked(shown, basic)).toEqual([]);
      }
    });
});

describe('secrets in other sent forms (item 7, variants)', () => {
  it('a Basic value written in the config is scrubbed also as the user:pass it decodes to', async () => {
    const creds = 'svc-batch:pw-basic-Secret-19';
    const registry = createRegistry();
    registerRestTools(
      registry,
      [
        {
          name: 'who',
          description: 'Who.',
          url: `${apiBase}/whoami`,
          headers: { Authorization: 'Basic ${B64}' },
          ...local,
        },
      ],
      { env: { B64: Buffer.from(creds).toString('base64') } },
    );
    const msg = await callTool(await registry.tools(), 'rest__who', {});
    expect(String(msg.content)).toContain('"raw": "Basic ***"');
    expect(String(msg.content)).toContain('"decoded": "***"');
    expect(String(msg.content)).not.toContain('pw-basic-Secret-19');
  });

  it('a ${ENV} in the URL path is scrubbed as the URL parser encodes it there', async () => {
    const key = 'tok en:with-colon-88';
    const registry = createRegistry();
    registerRestTools(registry, [{ name: 'k', description: 'K.', url: `${apiBase}/k/\${KEY}/x?q=\${KEY}`, ...local }], {
      env: { KEY: key },
    });
    const msg = await callTool(await registry.tools(), 'rest__k', {});
    expect(apiHits.at(-1)!.url).toBe('/k/tok%20en:with-colon-88/x?q=tok%20en:with-colon-88');
    expect(String(msg.content)).toContain('"path": "/k/***/x"');
    expect(String(msg.content)).toContain('"search": "?q=***"');
  });
});

describe('a path key or an argument cannot move the host (item 8)', () => {
  const spec = (paths: string[]) => ({
    openapi: '3.0.3',
    info: { title: 'Two servers', version: '1' },
    servers: [{ url: apiBase }],
    paths: Object.fromEntries(
      paths.map((p, i) => [p, { get: { operationId: `op${i}`, responses: { '200': { description: 'ok' } } } }]),
    ),
  });

  it('a path key that does not start with "/" or leaves the server is skipped; the other server receives nothing', async () => {
    const otherAuthority = otherBase.slice('http://'.length);
    const bad = [
      `@${otherAuthority}/collect`,
      `:${otherBase.split(':').pop()}/collect`,
      `.evil.example/collect`,
      `\\@${otherAuthority}/collect`,
      `?x=1@${otherAuthority}/collect`,
      `#@${otherAuthority}/collect`,
      `collect`,
    ];
    const registry = createRegistry();
    const { ids, skipped } = await registerOpenApiTools(registry, spec([...bad, '/ok', `//${otherAuthority}/x`]), {
      auth: { bearer: TOKEN },
      ...local,
    });
    expect(skipped.map((s) => s.operation)).toEqual(bad.map((_, i) => `op${i}`));
    for (const s of skipped) expect(s.reason).toMatch(/does not start with "\/"/);
    expect(ids).toEqual([`rest__op${bad.length}`, `rest__op${bad.length + 1}`]);
    const tools = await registry.tools();
    for (const id of ids) expect((await callTool(tools, id, {})).status).toBe('success');
    // `//host:port/x` after the server is a path on the server, not another host.
    expect(apiHits.at(-1)!.url).toBe(`//${otherAuthority}/x`);
    expect(otherHits).toEqual([]);
  });

  it('a server URL with a path, or with an ${ENV} host, still imports its operations', async () => {
    const doc = { ...spec(['/ok']), servers: [{ url: `${apiBase}/v1` }] };
    const imported = await importOpenApi(doc);
    expect(imported.configs.map((c) => c.url)).toEqual([`${apiBase}/v1/ok`]);
    const moved = await importOpenApi({
      ...spec(['/x']),
      servers: [{ url: `http://\${SVC_HOST}` }],
    });
    expect(moved.configs).toHaveLength(1); // an ${ENV} server is judged with a placeholder
  });

  it('REST arguments holding @, //, \\, %2F or %40 stay in the path of the configured server', async () => {
    const registry = createRegistry();
    registerRestTools(
      registry,
      [
        {
          name: 'item',
          description: 'One item.',
          url: `${apiBase}/items/{id}`,
          headers: { Authorization: 'Bearer ${API_TOKEN}' },
          ...local,
        },
      ],
      { env: { API_TOKEN: TOKEN } },
    );
    const tools = await registry.tools();
    const otherAuthority = otherBase.slice('http://'.length);
    for (const id of [
      `@${otherAuthority}/collect`,
      `//${otherAuthority}/collect`,
      `\\\\${otherAuthority}\\collect`,
      `..%2F..%2F@${otherAuthority}`,
      `%40${otherAuthority}`,
      `x/../../@${otherAuthority}`,
    ]) {
      const msg = await callTool(tools, 'rest__item', { id });
      expect(msg.status).toBe('success');
      expect(apiHits.at(-1)!.url).toBe(`/items/${encodeURIComponent(id)}`);
    }
    expect(otherHits).toEqual([]);
  });
});

describe('OpenAPI $refs do not read local files (item 9)', () => {
  let outside: { dir: string; cleanup: () => Promise<void> };
  let docDir: { dir: string; cleanup: () => Promise<void> };
  const DECOY = 'DECOY-file-contents-7731';
  beforeAll(async () => {
    outside = await tempDir('toolbelt-ref-outside-');
    docDir = await tempDir('toolbelt-ref-doc-');
    await writeFile(path.join(outside.dir, 'secret.json'), JSON.stringify({ type: 'string', description: DECOY }));
    await writeFile(path.join(outside.dir, 'secret.txt'), DECOY);
    await writeFile(path.join(docDir.dir, 'notes.txt'), DECOY);
    await mkdir(path.join(docDir.dir, 'schemas'));
    await writeFile(
      path.join(docDir.dir, 'schemas', 'pet.json'),
      JSON.stringify({ type: 'object', properties: { name: { type: 'string', description: 'The pet name' } } }),
    );
    await symlink(path.join(outside.dir, 'secret.json'), path.join(docDir.dir, 'link.json'));
  });
  afterAll(async () => {
    await outside.cleanup();
    await docDir.cleanup();
  });

  const withRef = (ref: string, server = apiBase) => ({
    openapi: '3.0.3',
    info: { title: 'Refs', version: '1' },
    servers: [{ url: server }],
    paths: {
      '/pets': {
        post: {
          operationId: 'addPet',
          requestBody: { required: true, content: { 'application/json': { schema: { $ref: ref } } } },
          responses: { '200': { description: 'ok' } },
        },
      },
    },
  });

  it('a file document reads $refs inside its own directory (JSON or YAML) and nothing else', async () => {
    const file = path.join(docDir.dir, 'api.json');
    await writeFile(file, JSON.stringify(withRef('./schemas/pet.json')));
    const ok = await importOpenApi(file);
    expect(JSON.stringify(ok.configs[0].parametersSchema)).toContain('The pet name');
    // The document itself may have any name.
    const bare = path.join(docDir.dir, 'openapi');
    await writeFile(bare, JSON.stringify(withRef('./schemas/pet.json')));
    expect(JSON.stringify((await importOpenApi(bare)).configs[0].parametersSchema)).toContain('The pet name');
    const refs = [
      path.join(outside.dir, 'secret.json'),
      `file://${path.join(outside.dir, 'secret.json')}`,
      path.relative(docDir.dir, path.join(outside.dir, 'secret.json')),
      path.join(outside.dir, 'secret.txt'),
      './notes.txt',
      './link.json',
    ];
    for (const ref of refs) {
      await writeFile(file, JSON.stringify(withRef(ref)));
      const err = (await importOpenApi(file).catch((e: Error) => e)) as Error;
      expect(err).toBeInstanceOf(Error);
      expect(err.message).toMatch(
        /was not imported: a \$ref to .* (is outside the document's directory|is not a JSON or YAML file)/,
      );
      expect(err.message).not.toContain(DECOY);
    }
  });

  it('credentials in the URL of a document are shown in no form when its fetch fails', async () => {
    const served = http.createServer((req, res) => {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'bad credentials', got: req.headers.authorization }));
    });
    const docBase = await listenLoopback(served);
    try {
      const err = (await importOpenApi(`http://docs:pw-doc-Secret-5@${docBase.slice(7)}/openapi.json`, local).catch(
        (e: Error) => e,
      )) as Error;
      expect(err.message).toContain('answered HTTP 401');
      expect(err.message).toContain('Basic ***');
      expect(err.message).not.toContain('pw-doc-Secret-5');
      expect(err.message).not.toContain(Buffer.from('docs:pw-doc-Secret-5').toString('base64').slice(0, 8));
    } finally {
      await closeServer(served);
    }
  });

  it('a FIFO named like a JSON file, as a $ref or as the document, is refused at once (it would hold an I/O thread)', async () => {
    const fifoDir = await tempDir('toolbelt-ref-fifo-');
    try {
      execFileSync('mkfifo', [path.join(fifoDir.dir, 'pipe.json')]);
      const file = path.join(fifoDir.dir, 'api.json');
      await writeFile(file, JSON.stringify(withRef('./pipe.json')));
      for (const source of [file, path.join(fifoDir.dir, 'pipe.json')]) {
        const err = (await importOpenApi(source).catch((e: Error) => e)) as Error;
        expect(err.message).toMatch(/pipe\.json is not a regular file\.$/);
      }
    } finally {
      await fifoDir.cleanup();
    }
  });

  it('a document given as an object, or fetched by URL, reads no local file and fetches no remote $ref', async () => {
    const refs = [
      path.join(outside.dir, 'secret.json'),
      `file://${path.join(outside.dir, 'secret.json')}`,
      'secret.json',
      path.relative(process.cwd(), path.join(outside.dir, 'secret.json')),
      `${otherBase}/schema.json`,
    ];
    const served = http.createServer((req, res) => {
      const ref = new URL(req.url!, 'http://x').searchParams.get('ref')!;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(withRef(ref)));
    });
    const docBase = await listenLoopback(served);
    try {
      for (const ref of refs) {
        for (const source of [withRef(ref), `${docBase}/openapi.json?ref=${encodeURIComponent(ref)}`]) {
          const err = (await importOpenApi(source, local).catch((e: Error) => e)) as Error;
          expect(err).toBeInstanceOf(Error);
          expect(err.message).toMatch(/may only use \$refs inside itself/);
          expect(err.message).not.toContain(DECOY);
        }
      }
    } finally {
      await closeServer(served);
    }
    expect(otherHits).toEqual([]);
  });
});

describe('bounded import (item 10)', () => {
  /** Shared $refs `width` wide and `depth` deep: width^depth nodes once dereferenced. */
  function bomb(width: number, depth: number) {
    const schemas: Record<string, unknown> = {};
    for (let d = 0; d < depth; d++) {
      const props: Record<string, unknown> = {};
      for (let w = 0; w < width; w++)
        props[`p${w}`] = d === depth - 1 ? { type: 'string' } : { $ref: `#/components/schemas/L${d + 1}` };
      schemas[`L${d}`] = { type: 'object', properties: props };
    }
    return {
      openapi: '3.0.3',
      info: { title: 'Bomb', version: '1' },
      servers: [{ url: apiBase }],
      paths: {
        '/x': {
          post: {
            operationId: 'x',
            requestBody: { content: { 'application/json': { schema: { $ref: '#/components/schemas/L0' } } } },
            responses: { '200': { description: 'ok' } },
          },
        },
      },
      components: { schemas },
    };
  }

  it('a 3.8 KB spec whose shared $refs expand to 10^8 nodes fails at once with a sentence naming the bound', async () => {
    const doc = bomb(10, 8);
    expect(JSON.stringify(doc).length).toBeLessThan(4000);
    const err = (await importOpenApi(doc).catch((e: Error) => e)) as Error;
    expect(err).toBeInstanceOf(Error);
    expect(err.message).toContain(
      `expands to more than ${OPENAPI_MAX_EXPANDED_NODES.toLocaleString('en-US')} nodes (OPENAPI_MAX_EXPANDED_NODES)`,
    );
    // The same shape, small, imports.
    expect((await importOpenApi(bomb(3, 3))).configs).toHaveLength(1);
  });

  it('the same bomb split across files next to the document is refused the same way', async () => {
    const dir = await tempDir('toolbelt-ref-bomb-');
    try {
      for (let d = 0; d < 8; d++) {
        const props: Record<string, unknown> = {};
        for (let w = 0; w < 10; w++) props[`p${w}`] = d === 7 ? { type: 'string' } : { $ref: `./L${d + 1}.json` };
        await writeFile(path.join(dir.dir, `L${d}.json`), JSON.stringify({ type: 'object', properties: props }));
      }
      const doc = bomb(1, 1);
      doc.paths['/x'].post.requestBody.content['application/json'].schema.$ref = './L0.json';
      await writeFile(path.join(dir.dir, 'api.json'), JSON.stringify(doc));
      await expect(importOpenApi(path.join(dir.dir, 'api.json'))).rejects.toThrow(/\(OPENAPI_MAX_EXPANDED_NODES\)/);
    } finally {
      await dir.cleanup();
    }
  });

  it(`a document of exactly OPENAPI_MAX_EXPANDED_NODES expanded nodes imports; one more is refused`, async () => {
    // Nodes: the root, openapi, info (+2 values), servers (+1 server +1 url), paths, c (+ a: 1 + k strings),
    // r (1 + m $refs to c.a, each k + 1 once expanded), f (1 + j numbers).
    const k = 999;
    const m = Math.floor((OPENAPI_MAX_EXPANDED_NODES - 2_000) / (1 + k));
    const fixed = 1 + 1 + 3 + 3 + 1 + (2 + k) + (1 + m * (1 + k)) + 1;
    const doc = (extra: number) => ({
      openapi: '3.0.3',
      info: { title: 'Edge', version: '1' },
      servers: [{ url: apiBase }],
      paths: {},
      c: { a: Array.from({ length: k }, () => 'x') },
      r: Array.from({ length: m }, () => ({ $ref: '#/c/a' })),
      f: Array.from({ length: OPENAPI_MAX_EXPANDED_NODES - fixed + extra }, () => 0),
    });
    await expect(importOpenApi(doc(0))).resolves.toMatchObject({ title: 'Edge', configs: [] });
    await expect(importOpenApi(doc(1))).rejects.toThrow(/OPENAPI_MAX_EXPANDED_NODES/);
  });

  it('an operation whose argument schemas hold exactly OPENAPI_MAX_SCHEMA_NODES schema objects is imported; one more is skipped', async () => {
    // The body schema: itself plus n - 1 string properties = n schema objects.
    const op = (n: number) => ({
      operationId: `op${n}`,
      requestBody: {
        content: {
          'application/json': {
            schema: {
              type: 'object',
              properties: Object.fromEntries(Array.from({ length: n - 1 }, (_, i) => [`p${i}`, { type: 'string' }])),
            },
          },
        },
      },
      responses: { '200': { description: 'ok' } },
    });
    const doc = {
      openapi: '3.0.3',
      info: { title: 'Wide', version: '1' },
      servers: [{ url: apiBase }],
      paths: { '/at': { post: op(OPENAPI_MAX_SCHEMA_NODES) }, '/past': { post: op(OPENAPI_MAX_SCHEMA_NODES + 1) } },
    };
    const imported = await importOpenApi(doc);
    expect(imported.configs.map((c) => c.name)).toEqual([`op${OPENAPI_MAX_SCHEMA_NODES}`]);
    expect(imported.skipped).toEqual([
      {
        operation: `op${OPENAPI_MAX_SCHEMA_NODES + 1}`,
        reason: `its argument schemas have more than ${OPENAPI_MAX_SCHEMA_NODES.toLocaleString('en-US')} schema objects (OPENAPI_MAX_SCHEMA_NODES), too large for a tool schema`,
      },
    ]);
  });

  it('a document object holding a value that is not JSON is refused with a sentence, and later imports still work', async () => {
    const bad = { openapi: '3.0.3', info: { title: 'Bad', version: '1' }, paths: {}, hook: () => 1 };
    await expect(importOpenApi(bad)).rejects.toThrow(
      /holds a value that is not JSON .*Pass plain JSON data, or a file\./,
    );
    await expect(importOpenApi({ ...bad, hook: undefined, servers: [{ url: apiBase }] })).resolves.toMatchObject({
      title: 'Bad',
    });
  });

  it('an unparsable path key skips that operation with the reason; the others are imported', async () => {
    const doc = {
      openapi: '3.0.3',
      info: { title: 'Mixed', version: '1' },
      servers: [{ url: apiBase }],
      paths: {
        ':99999/x': { get: { operationId: 'broken', responses: { '200': { description: 'ok' } } } },
        '/fine': { get: { operationId: 'fine', responses: { '200': { description: 'ok' } } } },
      },
    };
    const registry = createRegistry();
    const { ids, skipped } = await registerOpenApiTools(registry, doc, local);
    expect(ids).toEqual(['rest__fine']);
    expect(skipped).toEqual([{ operation: 'broken', reason: 'its path ":99999/x" does not start with "/"' }]);
  });
});

describe('the response cache does not skip the guard (item 11)', () => {
  const inventory = () => `${apiBase}/inventory`;
  /** A REST tool allowed the private network that caches /inventory, and http_request beside it. */
  async function sharedRegistry(initCtx: Record<string, unknown> = {}) {
    const registry = registerBuiltinTools(createRegistry(), ['http_request']);
    registerRestTools(registry, [
      { name: 'inventory', description: 'Inventory.', url: inventory(), cacheTtlSeconds: 600, ...local },
    ]);
    return registry.tools({ initCtx: { httpCacheTtlSeconds: 600, ...initCtx } });
  }
  const restHeaders = (ua: string, accept: string) => [
    { name: ua, value: 'agent-toolbelt-rest/0.1' },
    { name: accept, value: 'application/json, text/*;q=0.9, */*;q=0.1' },
  ];

  it('http_request, refused the private address, does not get the REST tool cached body (any header casing)', async () => {
    const tools = await sharedRegistry();
    const cached = await callTool(tools, 'rest__inventory', {});
    expect(String(cached.content)).toContain('internal-only');
    const before = apiHits.length;
    for (const [ua, accept] of [
      ['User-Agent', 'Accept'],
      ['user-agent', 'accept'],
      ['USER-AGENT', 'ACCEPT'],
    ]) {
      const msg = await callTool(tools, 'http_request', {
        method: 'GET',
        url: inventory(),
        headers: restHeaders(ua, accept),
      });
      expect(msg.status).toBe('error');
      expect(String(msg.content)).toMatch(/loopback/);
      expect(String(msg.content)).not.toContain('internal-only');
    }
    expect(apiHits.length).toBe(before);
    // The REST tool still gets its own entry.
    expect((await callTool(tools, 'rest__inventory', {})).result.metadata.cached).toBe(true);
  });

  it('the same tool under a stricter guard does not get what it cached under a looser one; a redirected answer is not cached', async () => {
    const registry = registerBuiltinTools(createRegistry(), ['http_request']);
    const loose = await registry.tools({ initCtx: { httpCacheTtlSeconds: 600, allowPrivateNetwork: true } });
    const viaRedirect = `${apiBase}/redirect?to=${encodeURIComponent(`http://localhost:${new URL(apiBase).port}/inventory`)}`;
    // The direct answer is cached; the one reached through a redirect is not (its hops would go unjudged).
    for (const [url, cached] of [
      [inventory(), true],
      [viaRedirect, false],
    ] as const) {
      const first = await callTool(loose, 'http_request', { method: 'GET', url });
      expect(String(first.content)).toContain('internal-only');
      expect((await callTool(loose, 'http_request', { method: 'GET', url })).result.metadata.cached).toBe(cached);
    }
    const strict = await registry.tools({ initCtx: { httpCacheTtlSeconds: 600 } });
    const refused = await callTool(strict, 'http_request', { method: 'GET', url: inventory() });
    expect(String(refused.content)).toMatch(/loopback/);
    // Allowed private addresses but only the host 127.0.0.1: the cached redirect to localhost is not served.
    const pinned = await registry.tools({
      initCtx: { httpCacheTtlSeconds: 600, allowPrivateNetwork: true, httpAllowedHosts: ['127.0.0.1'] },
    });
    const hop = await callTool(pinned, 'http_request', { method: 'GET', url: viaRedirect });
    expect(hop.status).toBe('error');
    expect(String(hop.content)).toContain("The host localhost is not in this tool's allowed hosts");
    expect(String(hop.content)).not.toContain('internal-only');
  });
});
