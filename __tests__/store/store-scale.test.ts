/**
 * State across processes, for real: PostgreSQL started in a temp dir; the built CLI with
 * `--store postgres://...` (the password never printed); `toolbelt memory import`; two processes
 * appending to one note and writing one todo list at once; and two `toolbelt mcp --http
 * --stateless --store` replicas behind a round-robin proxy this test writes: a todo list written
 * through one is read through the other, a pending call started on one is completed on the other
 * and reaches the next turn, 100 appends through each at once leave all 200, and SIGKILL of one
 * mid-write leaves the other serving with nothing torn.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, utimes, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CLI, ROOT, ensureDist } from '../support/dist.js';
import { tempDir } from '../support/helpers.js';
import { startPostgres, type PgServer } from '../support/postgres-server.js';

const PG_MISSING = existsSync('/usr/lib/postgresql/15/bin/initdb')
  ? undefined
  : 'PostgreSQL 15 is not installed here (apt-get install postgresql); the cross-process store tests are skipped';
if (PG_MISSING) console.warn(PG_MISSING);
const suite = PG_MISSING ? describe.skip : describe;

const TOOLS = path.join(ROOT, '__tests__', 'fixtures', 'store-tools.mjs');
const APPENDER = path.join(ROOT, '__tests__', 'fixtures', 'store-appender.mjs');
const MERGER = path.join(ROOT, '__tests__', 'fixtures', 'store-todo-merger.mjs');
const SESSION_META = 'agent-toolbelt/session';

let pg: PgServer;
let ws: { dir: string; cleanup: () => Promise<void> };
const children = new Set<ChildProcess>();

/** The environment of every child: nothing from the host but PATH. */
const env = (extra: Record<string, string> = {}) => ({ PATH: process.env.PATH ?? '/usr/bin:/bin', ...extra });

beforeAll(async () => {
  if (PG_MISSING) return;
  await ensureDist();
  ws = await tempDir('toolbelt-store-scale-');
  const started = await startPostgres();
  if ('skip' in started) throw new Error(started.skip);
  pg = started;
}, 120_000);
afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  await pg?.stop();
  await ws?.cleanup();
}, 60_000);

function run(
  args: string[],
  extraEnv: Record<string, string> = {},
  cmd = CLI,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cmd, ...args], {
      cwd: ws.dir,
      env: env(extraEnv),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => {
      children.delete(child);
      resolve({ code, stdout, stderr });
    });
  });
}

suite('the CLI with --store', () => {
  it('lists, runs and fails without ever printing the password', async () => {
    const list = await run(['list', '--store', pg.url]);
    expect(list.code).toBe(0);
    expect(list.stdout).toContain('todowrite');
    const viaEnv = await run(
      ['run', 'todowrite', '{"todos":[{"id":"1","content":"from env","status":"pending"}]}', '--session', 'cli-s'],
      {
        TOOLBELT_STORE_URL: pg.url,
      },
    );
    expect(viaEnv.code).toBe(0);
    const read = await run(['run', 'todoread', '{}', '--session', 'cli-s', '--store', pg.url]);
    expect(read.stdout).toContain('[ ] from env');
    const down = await run(['list', '--store', pg.url.replace(`:${pg.port}/`, ':1/')]);
    expect(down.code).toBe(2);
    expect(down.stderr).toMatch(/Cannot open the store postgres:\/\/toolbelt:\*\*\*@127\.0\.0\.1:1\/postgres/);
    for (const r of [list, viaEnv, read, down]) expect(r.stdout + r.stderr).not.toContain(pg.password);
  }, 60_000);

  it('toolbelt memory import moves the notes of .agent-memory into the store', async () => {
    const mem = path.join(ws.dir, '.agent-memory');
    await mkdir(path.join(mem, 'people'), { recursive: true });
    await writeFile(path.join(mem, 'project.md'), '> Summary: the project\n\nShip in May.\n');
    await writeFile(path.join(mem, 'people', 'alice.md'), 'Alice likes tea.\n');
    const imported = await run(['memory', 'import', '--store', pg.url, '--store-namespace', 'imported']);
    expect(imported.stdout).toMatch(/^Imported 2 of 2 notes from .* into the store postgres:\/\/toolbelt:\*\*\*@/);
    expect(imported.code).toBe(0);
    const read = await run([
      'run',
      'memory_read',
      '{"path":"people/alice.md"}',
      '--store',
      pg.url,
      '--store-namespace',
      'imported',
    ]);
    expect(read.stdout).toContain('Alice likes tea.');
    const list = await run(['run', 'memory_list', '{}', '--store', pg.url, '--store-namespace', 'imported']);
    expect(list.stdout).toContain('"summary":"the project"');
    // Without a store the files stay the notes, readable and writable by hand.
    const files = await run(['run', 'memory_read', '{"path":"project.md"}']);
    expect(files.stdout).toContain('Ship in May.');
  }, 60_000);

  it('toolbelt memory import never loses a note: what is in the store is skipped, --overwrite replaces and says so', async () => {
    const mem = path.join(ws.dir, 'notes-again');
    await mkdir(path.join(mem, 'people'), { recursive: true });
    const store = ['--store', pg.url, '--store-namespace', 'reimport'];
    await writeFile(path.join(mem, 'project.md'), 'Ship in May.\n');
    await writeFile(path.join(mem, 'people', 'alice.md'), 'Alice likes tea.\n');
    expect((await run(['memory', 'import', '--from', mem, ...store])).code).toBe(0);
    // The note changes in the store (an entry appended through a replica); a new file appears.
    const appended = await run(['run', 'memory_append', '{"path":"project.md","entry":"- moved to June"}', ...store]);
    expect(appended.stdout).toContain('Appended to project.md');
    await writeFile(path.join(mem, 'people', 'bob.md'), 'Bob likes coffee.\n');
    // The files were last changed long before the store's copy (project.md) or long after (alice.md).
    const past = new Date('2020-01-01T00:00:00Z');
    const future = new Date(Date.now() + 24 * 3600_000);
    await utimes(path.join(mem, 'project.md'), past, past);

    const again = await run(['memory', 'import', '--from', mem, ...store]);
    expect(again.code).toBe(0);
    const lines = again.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^Imported 1 of 3 notes from /);
    expect(lines).toHaveLength(4);
    expect(lines).toContain('  created people/bob.md');
    expect(lines).toContain("  unchanged people/alice.md: the store already holds the file's text");
    expect(lines).toContainEqual(
      expect.stringMatching(
        /^ {2}skipped project\.md: already in the store \(changed \d{4}-.*Z\); pass --overwrite to replace it with the file$/,
      ),
    );
    const kept = await run(['run', 'memory_read', '{"path":"project.md"}', ...store]);
    expect(kept.stdout).toContain('- moved to June');

    await writeFile(path.join(mem, 'people', 'alice.md'), 'Alice likes green tea.\n');
    await utimes(path.join(mem, 'people', 'alice.md'), future, future);
    const over = await run(['memory', 'import', '--from', mem, '--overwrite', ...store]);
    expect(over.code).toBe(0);
    const report = over.stdout.trim().split('\n');
    expect(report[0]).toMatch(/^Imported 2 of 3 notes from /);
    expect(report).toContain('  replaced people/alice.md');
    expect(report).toContain("  unchanged people/bob.md: the store already holds the file's text");
    expect(report).toContainEqual(
      expect.stringMatching(
        /^ {2}replaced project\.md: its store copy \(changed \d{4}-.*Z\) was newer than the file \(changed 2020-01-01T00:00:00\.000Z\); what only the store had is gone$/,
      ),
    );
    const replaced = await run(['run', 'memory_read', '{"path":"project.md"}', ...store]);
    expect(replaced.stdout).not.toContain('- moved to June');
    expect((await run(['run', 'memory_read', '{"path":"people/alice.md"}', ...store])).stdout).toContain('green tea');
  }, 60_000);

  it('two processes appending to one note and writing one list at once lose nothing', async () => {
    const [a, b] = await Promise.all([
      run([pg.url, 'A', '50', ws.dir], {}, APPENDER),
      run([pg.url, 'B', '50', ws.dir], {}, APPENDER),
    ]);
    expect(JSON.parse(a.stdout)).toEqual({ failed: [] });
    expect(JSON.parse(b.stdout)).toEqual({ failed: [] });
    const read = await run([
      'run',
      'memory_read',
      '{"path":"shared.md"}',
      '--store',
      pg.url,
      '--store-namespace',
      'concurrency',
    ]);
    const lines = read.stdout.trim().split('\n');
    for (const tag of ['A', 'B']) for (let i = 0; i < 50; i++) expect(lines).toContain(`- ${tag} entry ${i}`);
    expect(lines).toHaveLength(100);
    const todo = await run([
      'run',
      'todoread',
      '{}',
      '--session',
      'shared-list',
      '--store',
      pg.url,
      '--store-namespace',
      'concurrency',
    ]);
    // The list is one writer's whole list, never a mix of two.
    expect(todo.stdout).toMatch(/^2 todos|1 open todo \(0 in progress, 1 pending\), 1 completed/);
    const owner = /\[x\] written by ([AB]) /.exec(todo.stdout)?.[1];
    expect(todo.stdout).toMatch(new RegExp(`\\[ \\] ${owner} list \\d+ `));
  }, 120_000);

  it('two processes merging distinct items into one todo list at once: every item of both is there', async () => {
    const N = 40;
    const [a, b] = await Promise.all([
      run([pg.url, 'A', String(N)], {}, MERGER),
      run([pg.url, 'B', String(N)], {}, MERGER),
    ]);
    expect([a.stderr, b.stderr]).toEqual(['', '']);
    expect(JSON.parse(a.stdout)).toEqual({ failed: [] });
    expect(JSON.parse(b.stdout)).toEqual({ failed: [] });
    const todo = await run([
      'run',
      'todoread',
      '{}',
      '--session',
      'merged-list',
      '--store',
      pg.url,
      '--store-namespace',
      'merging',
    ]);
    expect(todo.stdout).toMatch(new RegExp(`^${2 * N} open todos`));
    for (const tag of ['A', 'B']) for (let i = 0; i < N; i++) expect(todo.stdout).toContain(`[ ] ${tag} item ${i} (`);
  }, 120_000);
});

/** A `toolbelt mcp --http 0 --stateless --store URL` replica; resolves with its URL once it serves. */
function replica(): Promise<{ url: string; child: ChildProcess }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        CLI,
        'mcp',
        '--http',
        '0',
        '--stateless',
        '--store',
        pg.url,
        '--store-namespace',
        'scale',
        '--tools',
        TOOLS,
        '--workspace',
        ws.dir,
      ],
      { cwd: ws.dir, env: env(), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    children.add(child);
    child.on('exit', () => children.delete(child));
    let err = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      err += d;
      const m = /at (http:\/\/\S+?)(?:,| |$)/m.exec(err);
      if (m) {
        expect(err).not.toContain(pg.password);
        expect(err).toMatch(/state in the store postgres:\/\/toolbelt:\*\*\*@/);
        resolve({ url: m[1], child });
      }
    });
    child.on('error', reject);
    child.on('exit', (code) => reject(new Error(`replica exited ${code}: ${err}`)));
  });
}

/** A round-robin HTTP proxy over `upstreams`; an upstream that refuses the connection is skipped (as a load balancer's health check would). */
async function roundRobin(upstreams: string[]): Promise<{ url: string; served: number[]; close: () => Promise<void> }> {
  const served = upstreams.map(() => 0);
  let next = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const attempt = (tries: number) => {
        const i = next++ % upstreams.length;
        const target = new URL(req.url ?? '/', upstreams[i]);
        const out = http.request(
          target,
          { method: req.method, headers: { ...req.headers, host: target.host } },
          (up) => {
            served[i]++;
            res.writeHead(up.statusCode ?? 502, up.headers);
            up.pipe(res);
          },
        );
        out.on('error', () => (tries > 1 ? attempt(tries - 1) : res.writeHead(502).end()));
        out.end(body);
      };
      attempt(upstreams.length);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    served,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

async function client(url: string): Promise<Client> {
  const c = new Client({ name: 'scale-test', version: '1.0.0' });
  await c.connect(new StreamableHTTPClientTransport(new URL(url)));
  return c;
}

/** One call; `session` null sends no `_meta`, as a stock MCP client does. */
async function callText(c: Client, name: string, args: Record<string, unknown>, session: string | null = 'chat-1') {
  const res = await c.callTool({ name, arguments: args, ...(session ? { _meta: { [SESSION_META]: session } } : {}) });
  const text = (res.content as Array<{ type: string; text?: string }>).map((p) => p.text ?? '').join('');
  return { text, isError: res.isError === true };
}

suite('two stateless MCP replicas on one store behind a round-robin proxy', () => {
  it('share todo lists, pending calls and memory; survive SIGKILL of one mid-write', async () => {
    const [a, b] = await Promise.all([replica(), replica()]);
    const proxy = await roundRobin([a.url, b.url]);
    const viaProxy = await client(`${proxy.url}/mcp`);
    try {
      // A todo list written through one replica is read through the other.
      const before = [...proxy.served];
      const w = await callText(viaProxy, 'todowrite', {
        todos: [{ id: '1', content: 'Scale out', status: 'in_progress' }],
      });
      expect(w.isError).toBe(false);
      const r = await callText(viaProxy, 'todoread', {});
      expect(r.text).toContain('[~] Scale out');
      expect(proxy.served[0] - before[0]).toBeGreaterThan(0);
      expect(proxy.served[1] - before[1]).toBeGreaterThan(0);
      // A stock client (no _meta) keeps its own list across the replicas as well.
      const stock = { todos: [{ id: 's', content: 'Stock client', status: 'pending' }] };
      expect((await callText(viaProxy, 'todowrite', stock, null)).isError).toBe(false);
      for (let i = 0; i < 2; i++) {
        const seen = await callText(viaProxy, 'todoread', {}, null);
        expect(seen.text).toContain('[ ] Stock client');
        expect(seen.text).not.toContain('Scale out');
      }

      // A pending call started on A is completed through B, and its result reaches the next turn.
      const ca = await client(`${a.url.replace(/\/mcp$/, '')}/mcp`);
      const cb = await client(`${b.url.replace(/\/mcp$/, '')}/mcp`);
      const asked = await callText(ca, 'ask_person', { question: 'Deploy?' });
      const callId = /The result of this call \(([^)]+)\)/.exec(asked.text)?.[1];
      expect(callId).toBeDefined();
      const submitted = await callText(cb, 'submit_answer', { callId, answer: 'Yes, deploy on Friday.' });
      expect(submitted.text).toMatch(/^accepted /);
      const again = await callText(ca, 'submit_answer', { callId, answer: 'No.' });
      expect(again.isError).toBe(true);
      expect(again.text).toMatch(/already completed/);
      const late = await callText(ca, 'late_results', {});
      expect(late.text).toContain('The late result of your earlier call to ask_person');
      expect(late.text).toContain('Yes, deploy on Friday.');
      expect((await callText(cb, 'late_results', {})).text).toBe('');

      // 100 appends through each replica at once leave all 200.
      const appends = (c: Client, tag: string, n: number) =>
        Promise.all(
          Array.from({ length: n }, (_, i) => callText(c, 'memory_append', { path: 'log.md', entry: `- ${tag} ${i}` })),
        );
      const results = [...(await Promise.all([appends(ca, 'A', 100), appends(cb, 'B', 100)]))].flat();
      expect(results.filter((x) => x.isError)).toEqual([]);
      // The note was new: exactly one of the 200 created it.
      expect(results.filter((x) => x.text.startsWith('Created log.md'))).toHaveLength(1);
      const lines = (await callText(viaProxy, 'memory_read', { path: 'log.md' })).text.trim().split('\n');
      expect(lines).toHaveLength(200);
      for (const tag of ['A', 'B']) for (let i = 0; i < 100; i++) expect(lines).toContain(`- ${tag} ${i}`);

      // SIGKILL of A in the middle of a burst of writes: B keeps serving, nothing is torn.
      const burst = appends(ca, 'K', 40).catch(() => []);
      await new Promise((res) => setTimeout(res, 50));
      a.child.kill('SIGKILL');
      await burst;
      await ca.close().catch(() => undefined);
      const after = (await callText(viaProxy, 'memory_read', { path: 'log.md' })).text.trim().split('\n');
      for (const line of after) expect(line).toMatch(/^- [ABK] \d+$/);
      expect(after.filter((l) => /^- [AB] /.test(l))).toHaveLength(200);
      const more = await callText(viaProxy, 'memory_append', { path: 'log.md', entry: '- after the kill' });
      expect(more.isError).toBe(false);
      expect((await callText(viaProxy, 'todoread', {})).text).toContain('[~] Scale out');
      await cb.close();
    } finally {
      await viaProxy.close().catch(() => undefined);
      await proxy.close();
      for (const c of [a.child, b.child]) c.kill('SIGTERM');
    }
  }, 180_000);
});
