/**
 * Servers that fail, and files a server cannot take: each gives a sentence or a bounded answer, the
 * edit itself succeeds or fails on its own, and no server process is left behind. The faulty servers
 * are tiny fakes (support.ts); the real TypeScript server covers restarts, big and non-UTF-8 files,
 * 50 edits in a row, and the host's exit.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { tempDir } from '../support/helpers.js';
import { ROOT, ensureDist } from '../support/dist.js';
import { createRegistry, registerBuiltinTools } from '../../src/index.js';
import type { Tool } from '../../src/authoring/tool.js';
import { managerFor } from '../../src/lsp/manager.js';
import { fakeServer, processGone, type Fault } from './support.js';

let dir: string;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  ({ dir, cleanup } = await tempDir('lsp-faults-'));
  await writeFile(path.join(dir, 'tsconfig.json'), '{"compilerOptions":{"strict":true,"noEmit":true}}');
});
afterAll(() => cleanup());

/** A registry with write, edit and read over `dir`, and what `initCtx.lsp` says. */
function setup(lsp: Tool.InitContext['lsp']) {
  const registry = createRegistry();
  registerBuiltinTools(registry, ['read', 'write', 'edit', 'lsp']);
  const initCtx: Tool.InitContext = { workspaceRoot: dir, lsp };
  const call = async (tool: string, args: Record<string, unknown>) =>
    registry.execute(tool, args, { sessionID: 's' }, initCtx);
  const servers = () => managerFor({ extra: { registry } }).running();
  return { registry, call, servers };
}

async function withFake(fault: Fault, waitMs: number, file: string) {
  const { registry, call, servers } = setup({
    servers: { fake: await fakeServer(dir, fault) },
    diagnosticsWaitMs: waitMs,
  });
  const first = await call('write', { filePath: file, content: 'one\n' });
  const pids = servers().flatMap((s) => (s.pid ? [s.pid] : []));
  return { registry, call, first, pids };
}

describe('faulty servers', () => {
  it('missing: the write succeeds and says once that the server was not found', async () => {
    const { registry, call } = setup({
      servers: { fake: { name: 'Fake', command: 'no-such-language-server', extensions: ['.fake'] } },
    });
    const a = await call('write', { filePath: 'a.fake', content: 'x' });
    expect(a.success).toBe(true);
    expect(a.result.output).toBe(
      "Created a.fake (1 bytes, +1 lines).\n\n(No Fake diagnostics: no-such-language-server was not found in the workspace's node_modules/.bin or on PATH; install it or set initCtx.lsp.servers.fake.command.)",
    );
    const b = await call('write', { filePath: 'b.fake', content: 'x' });
    expect(b.result.output).toBe('Created b.fake (1 bytes, +1 lines).');
    const asked = await call('lsp', { operation: 'diagnostics', filePath: 'b.fake' });
    expect(asked.success).toBe(false);
    expect(asked.result.output).toContain('No Fake server for b.fake: no-such-language-server was not found');
    await registry.dispose();
  });

  it('crashes at start: restarted once, then left off with the reason; the edits succeed', async () => {
    const { registry, call, first } = await withFake('crash', 10_000, 'c.fake');
    expect(first.success).toBe(true);
    expect(first.result.output).toContain(
      'Diagnostics not known yet (the Fake server exited (code 3); its last output: fake: cannot start)',
    );
    const second = await call('write', { filePath: 'c2.fake', content: 'two\n' });
    expect(second.result.output).toContain('Diagnostics not known yet (the Fake server exited (code 3)');
    const third = await call('write', { filePath: 'c3.fake', content: 'three\n' });
    expect(third.result.output).toContain(
      '(No Fake diagnostics: the Fake server ended twice (last: it exited (code 3); its last output: fake: cannot start), so it is not started again in this session.)',
    );
    expect(await readFile(path.join(dir, 'c3.fake'), 'utf8')).toBe('three\n');
    await registry.dispose();
  });

  it('hangs: the edit answers after the wait with "not known yet", and dispose kills it', async () => {
    const { registry, first, pids } = await withFake('hang', 300, 'h.fake');
    expect(first.success).toBe(true);
    expect(first.result.output).toContain('Diagnostics not known yet (the Fake server did not answer within 300 ms)');
    expect(pids).toHaveLength(1);
    await registry.dispose();
    expect(await processGone(pids[0])).toBe(true);
  });

  it('answers garbage: stopped with a sentence saying so', async () => {
    const { registry, first, pids } = await withFake('garbage', 10_000, 'g.fake');
    expect(first.success).toBe(true);
    expect(first.result.output).toMatch(
      /Diagnostics not known yet \(the Fake server answered with something that is not LSP \(/,
    );
    expect(await processGone(pids[0])).toBe(true);
    await registry.dispose();
  });

  it('floods diagnostics: the answer lists LSP_MAX_DIAGNOSTICS with a count, messages cut', async () => {
    const { registry, first, pids } = await withFake('flood', 30_000, 'f.fake');
    expect(first.success).toBe(true);
    const out = first.result.output;
    expect(out).toContain('Fake found 1000 errors this change introduced:');
    expect(out.split('\n').filter((l) => l.startsWith('f.fake:1:1 - error'))).toHaveLength(20);
    expect(out).toContain('(980 more not shown; lsp with operation "diagnostics" lists 20 at a time.)');
    expect(out.length).toBeLessThan(10_000);
    await registry.dispose();
    expect(await processGone(pids[0])).toBe(true);
  }, 60_000);

  it('sends a message past LSP_MAX_MESSAGE_BYTES: stopped, with the reason', async () => {
    const { registry, first, pids } = await withFake('huge', 30_000, 'u.fake');
    expect(first.success).toBe(true);
    expect(first.result.output).toContain(
      'Diagnostics not known yet (the Fake server sent a message larger than 33554432 bytes (it floods the client))',
    );
    expect(await processGone(pids[0])).toBe(true);
    await registry.dispose();
  }, 60_000);
});

describe('the real server under stress', () => {
  it('restarts once after a crash, then stays off; dispose leaves no process', async () => {
    const { registry, call, servers } = setup({ diagnosticsWaitMs: 60_000 });
    const first = await call('write', { filePath: 'r.ts', content: 'export const r = 1;\n' });
    expect(first.result.output).toContain('TypeScript');
    const [one] = servers();
    process.kill(-one.pid!, 'SIGKILL');
    expect(await processGone(one.pid!)).toBe(true);
    const second = await call('write', { filePath: 'r.ts', content: 'export const r: number = "2";\n' });
    expect(second.result.output).toContain(
      "r.ts:1:14 - error TS2322: Type 'string' is not assignable to type 'number'.",
    );
    const [two] = servers();
    expect(two.pid).not.toBe(one.pid);
    process.kill(-two.pid!, 'SIGKILL');
    expect(await processGone(two.pid!)).toBe(true);
    const third = await call('write', { filePath: 'r.ts', content: 'export const r = 3;\n' });
    expect(third.success).toBe(true);
    expect(third.result.output).toMatch(
      /\(No TypeScript diagnostics: the TypeScript server ended twice \(last: it exited \(signal SIGKILL\)/,
    );
    expect(servers()).toEqual([]);
    await registry.dispose();
  }, 120_000);

  it('a 10 MB file and a file that is not UTF-8 get a sentence, start no server, and are written', async () => {
    const { registry, call, servers } = setup({ diagnosticsWaitMs: 60_000 });
    const big = `// ${'x'.repeat(100)}\n`.repeat(100_000);
    const res = await call('write', { filePath: 'big.ts', content: big });
    expect(res.result.output).toContain(
      `(No TypeScript diagnostics: big.ts is ${Buffer.byteLength(big)} bytes, above the 4194304 bytes sent to a language server.)`,
    );
    await writeFile(path.join(dir, 'latin1.ts'), Buffer.from([0x63, 0x6f, 0x6e, 0x73, 0x74, 0x20, 0xe9, 0x3b, 0x0a]));
    await call('read', { filePath: 'latin1.ts' });
    const edited = await call('edit', { filePath: 'latin1.ts', oldString: 'const', newString: 'let' });
    expect(edited.success).toBe(true);
    expect(edited.result.output).toContain('(No TypeScript diagnostics: latin1.ts is not valid UTF-8.)');
    expect(servers()).toEqual([]);
    const asked = await call('lsp', { operation: 'diagnostics', filePath: 'latin1.ts' });
    expect(asked.result.output).toContain('latin1.ts is not valid UTF-8, so no language server is asked about it');
    await registry.dispose();
  }, 60_000);

  it('50 edits in a row: each succeeds with its diagnostics known, one server', async () => {
    const { registry, call, servers } = setup({ diagnosticsWaitMs: 60_000 });
    await call('write', { filePath: 'many.ts', content: 'export let v = 0;\n' });
    for (let i = 0; i < 50; i++) {
      const res = await call('edit', { filePath: 'many.ts', oldString: `v = ${i};`, newString: `v = ${i + 1};` });
      expect(res.success).toBe(true);
      expect(res.result.output).toContain('TypeScript: no new problems; many.ts has no errors now.');
    }
    expect(servers()).toHaveLength(1);
    const pid = servers()[0].pid!;
    await registry.dispose();
    expect(await processGone(pid)).toBe(true);
  }, 180_000);
});

describe("the host's exit", () => {
  beforeAll(() => ensureDist(), 180_000);

  it('a process that exits without dispose leaves no server behind', async () => {
    const script = `
      const { createRegistry, registerBuiltinTools } = await import(${JSON.stringify(path.join(ROOT, 'dist', 'index.js'))});
      const { managerFor } = await import(${JSON.stringify(path.join(ROOT, 'dist', 'lsp', 'manager.js'))});
      const registry = registerBuiltinTools(createRegistry(), ['write']);
      const r = await registry.execute('write', { filePath: 'exit.ts', content: 'export const e = 1;\\n' }, { sessionID: 's' }, { workspaceRoot: ${JSON.stringify(dir)}, lsp: { diagnosticsWaitMs: 60000 } });
      console.log(JSON.stringify({ pids: managerFor({ extra: { registry } }).running().map((s) => s.pid), output: r.result.output }));
      process.exit(0);`;
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
      cwd: ROOT,
    });
    const { pids, output } = JSON.parse(stdout.trim().split('\n').pop()!) as { pids: number[]; output: string };
    expect(output).toContain('TypeScript');
    expect(pids).toHaveLength(1);
    expect(await processGone(pids[0])).toBe(true);
  }, 120_000);
});
