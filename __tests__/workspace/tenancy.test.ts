/**
 * Tenancy and the tool-output directory: two registries are two worlds (read tracker, todo lists,
 * saved outputs, default session), and the directory of saved outputs is private to the registry
 * that made it (0700, never a followed symlink, files 0600), so no one can widen what read may read.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chown, lstat, mkdir, readFile, readdir, symlink, unlink, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { Tool, createRegistry, registerBuiltinTools, type Registry } from '../../src/index.js';
import { tempDir, until } from '../support/helpers.js';
import { ROOT, ensureDist } from '../support/dist.js';

let base: { dir: string; cleanup: () => Promise<void> };
let ws: string;

const Big = Tool.define('big', {
  description: 'prints a lot',
  parameters: z.object({ marker: z.string() }),
  execute: async (a) => ({
    title: 'big',
    metadata: {},
    output: Array.from({ length: 3000 }, (_, i) => `${a.marker} ${i}`).join('\n'),
  }),
});

function world(options: Parameters<typeof createRegistry>[0] = {}): Registry {
  return registerBuiltinTools(createRegistry(options)).register(Big, { permissions: { required: [] } });
}

beforeAll(async () => {
  base = await tempDir('tenancy-');
  ws = path.join(base.dir, 'ws');
  await mkdir(ws);
  await writeFile(path.join(ws, 'a.txt'), 'alpha\n');
});
afterAll(() => base.cleanup());

describe('two registries are two worlds', () => {
  it('a file read in one registry does not count as read in the other', async () => {
    const init = { workspaceRoot: ws };
    const a = world();
    const b = world();
    expect((await a.execute('read', { filePath: 'a.txt' }, { sessionID: 's' }, init)).success).toBe(true);
    const inB = await b.execute(
      'edit',
      { filePath: 'a.txt', oldString: 'alpha', newString: 'beta' },
      { sessionID: 's' },
      init,
    );
    expect(inB.success).toBe(false);
    expect(inB.error).toMatch(/has not been read in this session/);
    const inA = await a.execute(
      'edit',
      { filePath: 'a.txt', oldString: 'alpha', newString: 'beta' },
      { sessionID: 's' },
      init,
    );
    expect(inA.error).toBeUndefined();
    expect(await readFile(path.join(ws, 'a.txt'), 'utf8')).toBe('beta\n');
  });

  it("move and delete check freshness against their own registry's reads only", async () => {
    const init = { workspaceRoot: ws };
    const ctx = { sessionID: 's' };
    const a = world();
    const b = world();
    for (const f of ['m1.txt', 'd1.txt']) await writeFile(path.join(ws, f), 'v1\n');
    for (const f of ['m1.txt', 'd1.txt'])
      expect((await a.execute('read', { filePath: f }, ctx, init)).success).toBe(true);
    // Changed on disk after A read them (a later mtime and another size).
    for (const f of ['m1.txt', 'd1.txt']) {
      await writeFile(path.join(ws, f), 'version two\n');
      await utimes(path.join(ws, f), new Date(), new Date(Date.now() + 5_000));
    }
    // A read the old version: both refuse and say to read again.
    const moveA = await a.execute('move', { from: 'm1.txt', to: 'm2.txt' }, ctx, init);
    expect(moveA.error).toMatch(/changed on disk since it was read/);
    const deleteA = await a.execute('delete', { path: 'd1.txt' }, ctx, init);
    expect(deleteA.error).toMatch(/changed on disk since it was read/);
    // B never read them: A's reads are not B's, so nothing is stale for B.
    const moveB = await b.execute('move', { from: 'm1.txt', to: 'm2.txt' }, ctx, init);
    expect(moveB.error).toBeUndefined();
    const deleteB = await b.execute('delete', { path: 'd1.txt' }, ctx, init);
    expect(deleteB.error).toBeUndefined();
    await expect(lstat(path.join(ws, 'd1.txt'))).rejects.toThrow(/ENOENT/);
    // A read carried over by A's move stays in A: B may not overwrite the moved file unread.
    await writeFile(path.join(ws, 'm3.txt'), 'three\n');
    expect((await a.execute('read', { filePath: 'm3.txt' }, ctx, init)).success).toBe(true);
    expect((await a.execute('move', { from: 'm3.txt', to: 'm4.txt' }, ctx, init)).error).toBeUndefined();
    const writeB = await b.execute('write', { filePath: 'm4.txt', content: 'from B\n' }, ctx, init);
    expect(writeB.error).toMatch(/has not been read in this session/);
    expect((await a.execute('write', { filePath: 'm4.txt', content: 'from A\n' }, ctx, init)).error).toBeUndefined();
  });

  it('todo lists of one session id are separate per registry, also for calls that name no session', async () => {
    const a = world();
    const b = world();
    const todos = [{ id: '1', content: 'only in A', status: 'pending' }];
    await a.execute('todowrite', { todos }, { sessionID: 's' });
    await a.execute('todowrite', { todos }, {});
    expect((await a.execute('todoread', {}, { sessionID: 's' })).result.output).toContain('only in A');
    expect((await b.execute('todoread', {}, { sessionID: 's' })).result.output).not.toContain('only in A');
    expect((await b.execute('todoread', {}, {})).result.output).not.toContain('only in A');
    expect(a.tenant.id).not.toBe(b.tenant.id);
  });

  it('a saved output is readable by the registry that produced it and by no other', async () => {
    const init = { workspaceRoot: ws };
    const a = world();
    const b = world();
    const cut = await a.execute('big', { marker: 'TENANT-A-SECRET' }, {}, init);
    const saved = cut.result.metadata.outputPath as string;
    expect(path.dirname(saved)).toBe(a.tenant.outputs.dir);
    expect(a.tenant.outputs.dir).not.toBe(b.tenant.outputs.dir);
    const own = await a.execute('read', { filePath: saved, offset: 2999, limit: 1 }, {}, init);
    expect(own.result.output).toContain('TENANT-A-SECRET 2998');
    const other = await b.execute('read', { filePath: saved }, {}, init);
    expect(other.success).toBe(false);
    expect(other.error).toMatch(/outside the workspace/);
    expect(other.error).not.toContain('TENANT-A-SECRET');
    const grepped = await b.execute('grep', { pattern: 'TENANT-A-SECRET', path: path.dirname(saved) }, {}, init);
    expect(grepped.success).toBe(false);
  });
});

describe('the tool-output directory is private', () => {
  it('is made 0700 with files 0600, owned by this user', async () => {
    const r = world();
    const cut = await r.execute('big', { marker: 'm' }, {});
    const saved = cut.result.metadata.outputPath as string;
    const dirStat = await lstat(path.dirname(saved));
    const fileStat = await lstat(saved);
    expect({ dir: (dirStat.mode & 0o777).toString(8), file: (fileStat.mode & 0o777).toString(8) }).toEqual({
      dir: '700',
      file: '600',
    });
    expect(dirStat.uid).toBe(process.getuid!());
  });

  it('a symlink planted where the directory will be is never followed: nothing saved there, nothing readable through it', async () => {
    const init = { workspaceRoot: ws };
    const r = world();
    // The attacker wins the race to the (private, random) name and points it at / (removed after).
    await symlink('/', r.tenant.outputs.dir);
    try {
      const viaLink = await r.execute('read', { filePath: path.join(r.tenant.outputs.dir, 'etc', 'passwd') }, {}, init);
      expect(viaLink.success).toBe(false);
      expect(viaLink.error).toMatch(/outside the workspace/);
      const cut = await r.execute('big', { marker: 'x' }, {}, init);
      expect(cut.result.metadata.outputPath).toBeUndefined();
      expect(cut.result.output).toMatch(/could not be saved: The tool-output directory .* is a symbolic link/);
      const bash = await r.execute('bash', { command: 'seq 1 20000', description: 'many lines' }, {}, init);
      expect(bash.result.metadata.outputPath).toBeUndefined();
      expect(bash.result.output).toMatch(/could not be saved \(The tool-output directory .* is a symbolic link/);
    } finally {
      await unlink(r.tenant.outputs.dir);
    }
  });

  it('a directory someone else made open (or a file) in its place is refused', async () => {
    const dir = path.join(base.dir, 'shared-out');
    await mkdir(dir, { mode: 0o777 });
    const { chmod } = await import('node:fs/promises');
    await chmod(dir, 0o777);
    const r = world({ truncate: { outputDir: dir } });
    const cut = await r.execute('big', { marker: 'x' }, {});
    expect(cut.result.output).toMatch(/is open to other users \(mode 777\)/);
    const fileInPlace = path.join(base.dir, 'not-a-dir');
    await writeFile(fileInPlace, '');
    const r2 = world({ truncate: { outputDir: fileInPlace } });
    expect((await r2.execute('big', { marker: 'x' }, {})).result.output).toMatch(/is not a directory/);
  });
});

describe('private output directories live as long as their registry', () => {
  it('dispose() removes the directory with its saved outputs; a host-chosen outputDir is kept', async () => {
    const r = world();
    const cut = await r.execute('big', { marker: 'm' }, {});
    const dir = path.dirname(cut.result.metadata.outputPath as string);
    expect(dir).toBe(r.tenant.outputs.dir);
    expect(existsSync(dir)).toBe(true);
    await r.dispose();
    expect(existsSync(dir)).toBe(false);

    const chosen = path.join(base.dir, 'chosen-out');
    await mkdir(chosen, { mode: 0o700 });
    const host = world({ truncate: { outputDir: chosen } });
    const kept = (await host.execute('big', { marker: 'k' }, {})).result.metadata.outputPath as string;
    await host.dispose();
    expect(await readdir(chosen)).toEqual([path.basename(kept)]);
  });

  describe('across processes (children import dist/)', () => {
    const fixture = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'output-dir-owner.mjs');
    let outBase: { dir: string; cleanup: () => Promise<void> };
    const children: ChildProcessWithoutNullStreams[] = [];
    beforeAll(async () => {
      await ensureDist();
      outBase = await tempDir('outputs-base-');
    }, 180_000);
    afterAll(async () => {
      for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
      await outBase.cleanup();
    });

    /** Starts the fixture in `mode`; `line(prefix)` resolves with the first stdout line starting with it. */
    function child(mode: string) {
      const proc = spawn(process.execPath, [fixture, path.join(ROOT, 'dist'), mode], {
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', TOOLBELT_OUTPUT_DIR: outBase.dir },
      });
      children.push(proc);
      let out = '';
      let err = '';
      proc.stderr.on('data', (d) => (err += d));
      const exited = new Promise<number | NodeJS.Signals | null>((resolve) =>
        proc.on('exit', (code, signal) => resolve(signal ?? code)),
      );
      proc.stdout.on('data', (d) => (out += d));
      const line = async (prefix: string): Promise<string> => {
        let found: string | undefined;
        await until(
          () => {
            found = out.split('\n').find((l) => l.startsWith(prefix));
            if (found === undefined && proc.exitCode !== null) throw new Error(`child exited: ${err}`);
            return found !== undefined;
          },
          `"${prefix}" from the ${mode} child (stderr: ${err})`,
          60_000,
        );
        return found!.slice(prefix.length);
      };
      return { proc, line, exited };
    }

    it('a process that exits normally leaves no directory', async () => {
      const c = child('save-and-exit');
      const dir = await c.line('dir ');
      expect(path.dirname(dir)).toBe(outBase.dir);
      expect(await c.exited).toBe(0);
      expect(existsSync(dir)).toBe(false);
    }, 60_000);

    it("a SIGKILLed process's directory is swept by the next start; a live process's, another namespace's, a link and a file of our name are not", async () => {
      const killed = child('save-and-wait');
      const killedDir = await killed.line('dir ');
      const live = child('save-and-wait');
      const liveDir = await live.line('dir ');
      killed.proc.kill('SIGKILL');
      expect(await killed.exited).toBe('SIGKILL');
      expect(existsSync(killedDir)).toBe(true);
      // Look-alikes named as if a dead process (the killed child's pid) had made them.
      const [, uid, deadPid, ns] = /^agent-toolbelt-(\d+)-(\d+)-(\d+)-[0-9a-f]{16}$/.exec(path.basename(killedDir))!;
      const named = (nsId: string, hex: string) =>
        path.join(outBase.dir, `agent-toolbelt-${uid}-${deadPid}-${nsId}-${hex}`);
      const { dir: decoy, cleanup: decoyCleanup } = await tempDir('outputs-decoy-');
      try {
        await writeFile(path.join(decoy, 'keep.txt'), 'keep');
        const link = named(ns, 'a'.repeat(16));
        await symlink(decoy, link);
        const file = named(ns, 'b'.repeat(16));
        await writeFile(file, 'not a directory');
        const otherNs = named(String(Number(ns) + 1), 'c'.repeat(16));
        await mkdir(otherNs, { mode: 0o700 });
        const othersDir = named(ns, 'd'.repeat(16));
        const asRoot = process.getuid?.() === 0;
        if (asRoot) {
          await mkdir(othersDir, { mode: 0o700 });
          await chown(othersDir, 65534, 65534);
        }

        const next = child('start');
        await next.line('started');
        await until(() => !existsSync(killedDir), "the next start to sweep the killed process's directory", 30_000);
        next.proc.stdin.write('finish\n');
        expect(await next.line('removed ')).toBe('1');
        expect(await next.exited).toBe(0);

        expect(existsSync(liveDir)).toBe(true);
        expect((await lstat(link)).isSymbolicLink()).toBe(true);
        expect(await readdir(decoy)).toEqual(['keep.txt']);
        expect(await readFile(file, 'utf8')).toBe('not a directory');
        expect(existsSync(otherNs)).toBe(true);
        if (asRoot) expect(existsSync(othersDir)).toBe(true);
      } finally {
        await decoyCleanup();
      }
      live.proc.stdin.end();
      expect(await live.exited).toBe(0);
      expect(existsSync(liveDir)).toBe(false);
    }, 120_000);
  });
});
