/** Every attack path x read, write, edit: zero escapes, each refusal the clear "outside the workspace" error. */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { mkdir, readdir, lstat } from 'node:fs/promises';
import path from 'node:path';
import { tempDir, makeCtx } from './helpers.js';
import { setupAttackPaths, type AttackFixture } from './attack-paths.js';
import { Workspace } from '../src/workspace.js';
import { ReadTool } from '../src/tools/read.js';
import { WriteTool } from '../src/tools/write.js';
import { EditTool } from '../src/tools/edit.js';

let base: string;
let cleanup: () => Promise<void>;
let ws: string;
let fx: AttackFixture;
let before: Map<string, string>;
let sandbox: Workspace;
let read: Awaited<ReturnType<typeof ReadTool.init>>;
let write: Awaited<ReturnType<typeof WriteTool.init>>;
let edit: Awaited<ReturnType<typeof EditTool.init>>;

beforeAll(async () => {
  ({ dir: base, cleanup } = await tempDir('escape-'));
  ws = path.join(base, 'ws');
  await mkdir(ws);
  await mkdir(path.join(base, 'outside'));
  fx = await setupAttackPaths(ws, path.join(base, 'outside'));
  before = await fx.snapshotOutside();
  sandbox = await Workspace.create({ root: ws });
  const initCtx = { workspaceRoot: ws };
  [read, write, edit] = await Promise.all([ReadTool.init(initCtx), WriteTool.init(initCtx), EditTool.init(initCtx)]);
});
afterAll(async () => {
  await fx.cleanup();
  await cleanup();
});

/** Runs a tool; returns its output text or the error message (never throws). */
async function attempt(
  fn: () => Promise<{ output: string; attachments?: unknown[] }>,
): Promise<{ ok: boolean; text: string }> {
  try {
    const r = await fn();
    return { ok: true, text: r.output + JSON.stringify(r.attachments ?? []) };
  } catch (e) {
    return { ok: false, text: (e as Error).message };
  }
}

/** Guard for the machine: never hand a path the resolver accepts for writing to write/edit when it is meant to be outside. */
async function assertResolverRefuses(p: string): Promise<void> {
  await expect(sandbox.resolve(p, 'write')).rejects.toThrow(/outside the workspace/);
}

describe('path escapes: read, write, edit', () => {
  it('has at least 30 attack paths', () => {
    expect(fx.attacks.length).toBeGreaterThanOrEqual(30);
    expect(fx.attacks.filter((a) => a.expect === 'outside').length).toBeGreaterThanOrEqual(30);
  });

  it('every outside attack is refused by read, write and edit with the "outside the workspace" error', async () => {
    const escapes: string[] = [];
    for (const a of fx.attacks.filter((x) => x.expect === 'outside')) {
      await assertResolverRefuses(a.path);
      const ctx = makeCtx({ sessionID: 'attacker' });
      const results = {
        read: await attempt(() => read.execute(read.parameters.parse({ filePath: a.path }), ctx)),
        write: await attempt(() => write.execute(write.parameters.parse({ filePath: a.path, content: 'PWNED' }), ctx)),
        editCreate: await attempt(() =>
          edit.execute(edit.parameters.parse({ filePath: a.path, oldString: '', newString: 'PWNED' }), ctx),
        ),
        editReplace: await attempt(() =>
          edit.execute(edit.parameters.parse({ filePath: a.path, oldString: fx.secret, newString: 'PWNED' }), ctx),
        ),
      };
      for (const [tool, r] of Object.entries(results)) {
        if (r.ok || !r.text.includes('outside the workspace') || r.text.includes(fx.secret))
          escapes.push(`${tool} <- ${a.label}: ${r.text.slice(0, 120)}`);
      }
    }
    expect(escapes).toEqual([]);
  });

  it('inside-looking attacks never reveal or touch anything outside', async () => {
    const problems: string[] = [];
    for (const a of fx.attacks.filter((x) => x.expect === 'inside')) {
      const ctx = makeCtx({ sessionID: 'attacker-inside' });
      const resolved = await sandbox.resolve(a.path, 'write');
      if (!resolved.startsWith(ws + path.sep)) problems.push(`${a.label} resolved to ${resolved}`);
      const r = await attempt(() => read.execute(read.parameters.parse({ filePath: a.path }), ctx));
      if (r.text.includes(fx.secret)) problems.push(`read revealed the secret via ${a.label}`);
      const exists = await lstat(resolved).then(
        () => true,
        () => false,
      );
      if (!exists) {
        const w = await attempt(() =>
          write.execute(write.parameters.parse({ filePath: a.path, content: 'inside write' }), ctx),
        );
        if (!w.ok) problems.push(`write of inside path ${a.label} failed: ${w.text}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('nothing outside the workspace was created or modified, and the parent holds no new entries', async () => {
    expect(await fx.snapshotOutside()).toEqual(before);
    expect((await readdir(base)).sort()).toEqual(['outside', 'ws', 'ws-evil']);
    await expect(lstat('/etc/toolbelt-escape-probe')).rejects.toThrow();
  });
});

describe('refusals do not reveal symlink targets', () => {
  it('the error for a symlink pointing outside names neither the target nor its directory', async () => {
    const { tempDir } = await import('./helpers.js');
    const { symlink, mkdir, writeFile } = await import('node:fs/promises');
    const { Workspace } = await import('../src/workspace.js');
    const ws = await tempDir('leak-ws-');
    const out = await tempDir('leak-out-');
    try {
      await mkdir(path.join(out.dir, 'hidden-name'));
      await writeFile(path.join(out.dir, 'hidden-name', 'target.txt'), 'x');
      await symlink(path.join(out.dir, 'hidden-name', 'target.txt'), path.join(ws.dir, 'link.txt'));
      const w = await Workspace.create({ root: ws.dir });
      const err = await w.resolve('link.txt').then(
        () => undefined,
        (e: Error) => e,
      );
      expect(err?.message).toMatch(/outside the workspace \(it resolves through a symbolic link to a place outside\)/);
      expect(err?.message).not.toContain('hidden-name');
      expect(err?.message).not.toContain(out.dir);
    } finally {
      await ws.cleanup();
      await out.cleanup();
    }
  });
});
