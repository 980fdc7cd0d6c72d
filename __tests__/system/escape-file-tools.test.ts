/** Every attack path x read, write, edit: zero escapes, each refusal the clear "outside the workspace" error. */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { mkdir, readdir, lstat } from 'node:fs/promises';
import path from 'node:path';
import { duplicates, tempDir, makeCtx } from '../support/helpers.js';
import { setupAttackPaths, type AttackFixture } from '../support/attack-paths.js';
import { Workspace } from '../../src/workspace/workspace.js';
import { ReadTool } from '../../src/tools/files/read.js';
import { WriteTool } from '../../src/tools/files/write.js';
import { EditTool } from '../../src/tools/files/edit.js';
import { createRegistry, registerBuiltinTools } from '../../src/index.js';

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
  it('has at least 30 attack paths, each named once and each path tried once', () => {
    expect(duplicates(fx.attacks.map((a) => a.label))).toEqual([]);
    expect(duplicates(fx.attacks.map((a) => a.path))).toEqual([]);
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

  it('every outside attack against move (both ends), delete, file_info, the memory tools and bash workdir: nothing outside touched or shown', async () => {
    const escapes: string[] = [];
    let cases = 0;
    let linksActedOn = 0;
    const labels = fx.attacks.filter((x) => x.expect === 'outside').map((a) => a.label);
    /** One call against a fresh copy of the fixture (move and delete change the links they act on). */
    const probe = async (label: string, tool: string, argsOf: (p: string) => Record<string, unknown>) => {
      const t = await tempDir('escape-more-');
      try {
        const ws2 = path.join(t.dir, 'ws');
        await mkdir(ws2);
        await mkdir(path.join(t.dir, 'outside'));
        const fx2 = await setupAttackPaths(ws2, path.join(t.dir, 'outside'));
        const a = fx2.attacks.find((x) => x.label === label)!;
        const before2 = await fx2.snapshotOutside();
        // Is the path itself (not followed) a link that lives in the workspace? Entry tools act on it.
        const entry = path.resolve(ws2, a.path.includes('\0') ? '.' : a.path);
        const entryIsLink =
          path.dirname(entry).startsWith(ws2) &&
          (await lstat(entry).then(
            (st) => st.isSymbolicLink(),
            () => false,
          ));
        const registry = registerBuiltinTools(createRegistry());
        const args = argsOf(a.path);
        const res = await registry.execute(tool, args, { sessionID: 'attacker-more' }, { workspaceRoot: ws2 });
        cases++;
        const text = res.result.output;
        const problems: string[] = [];
        if (text.includes(fx2.secret)) problems.push('revealed the secret');
        if (JSON.stringify([...(await fx2.snapshotOutside())]) !== JSON.stringify([...before2]))
          problems.push('changed something outside');
        if (!tool.startsWith('memory_')) {
          // move, delete and file_info act on a link that lives in the workspace as an entry (move or
          // delete the link, replace it, describe it), never on its target.
          const onLink = res.success && entryIsLink && ['move', 'delete', 'file_info'].includes(tool);
          if (onLink) linksActedOn++;
          else if (res.success || !/outside the workspace/.test(text)) problems.push('not refused by the sandbox');
        }
        if (problems.length)
          escapes.push(
            `${tool} ${JSON.stringify(args).slice(0, 70)} <- ${label}: ${problems.join(', ')}: ${text.slice(0, 100)}`,
          );
        await fx2.cleanup();
      } finally {
        await t.cleanup();
      }
    };
    for (const label of labels) {
      await probe(label, 'move', (p) => ({ from: p, to: 'moved-by-attack.txt' }));
      await probe(label, 'move', (p) => ({ from: 'inside.txt', to: p, overwrite: true }));
      await probe(label, 'delete', (p) => ({ path: p, recursive: true }));
      await probe(label, 'file_info', (p) => ({ path: p }));
      await probe(label, 'bash', (p) => ({
        command: 'pwd; cat secret.txt; touch bash-was-here',
        workdir: p,
        description: 'probe',
      }));
      // The memory tools take paths under the memory directory: an attack path (also with ".md")
      // may name a note there, but nothing outside may be read or written.
      for (const md of ['', '.md']) {
        await probe(label, 'memory_read', (p) => ({ path: p + md }));
        await probe(label, 'memory_write', (p) => ({ path: p + md, content: 'PWNED' }));
        await probe(label, 'memory_patch', (p) => ({ path: p + md, old_str: 'line two', new_str: 'PWNED' }));
        await probe(label, 'memory_append', (p) => ({ path: p + md, entry: 'PWNED' }));
        await probe(label, 'memory_list', (p) => ({ dir: p + md }));
      }
    }
    console.log(
      `path escapes (move x2, delete, file_info, bash workdir, 5 memory tools x2): ${labels.length} attack paths, ${cases} cases, ${escapes.length} escapes (${linksActedOn} acted on a link inside the workspace as an entry, its target untouched)`,
    );
    expect(escapes).toEqual([]);
  }, 300_000);

  it('nothing outside the workspace was created or modified, and the parent holds no new entries', async () => {
    expect(await fx.snapshotOutside()).toEqual(before);
    expect((await readdir(base)).sort()).toEqual(['outside', 'ws', 'ws-evil']);
    await expect(lstat('/etc/toolbelt-escape-probe')).rejects.toThrow();
  });
});

describe('refusals do not reveal symlink targets', () => {
  it('the error for a symlink pointing outside names neither the target nor its directory', async () => {
    const { tempDir } = await import('../support/helpers.js');
    const { symlink, mkdir, writeFile } = await import('node:fs/promises');
    const { Workspace } = await import('../../src/workspace/workspace.js');
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
