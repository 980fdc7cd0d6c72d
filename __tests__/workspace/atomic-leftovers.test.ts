/**
 * Temp files left by a killed atomic write: removed at the next write to their directory (only our
 * own name pattern, only when the writer is gone and the file is old enough), never a user's file,
 * and never shown by list, glob or grep (either backend) while they exist.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { spawn } from 'node:child_process';
import { lutimes, mkdir, readdir, symlink, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createRegistry, registerBuiltinTools, type Registry } from '../../src/index.js';
import { STALE_TEMP_MAX_AGE_MS, STALE_TEMP_MIN_AGE_MS, isAtomicTempName } from '../../src/workspace/atomic-write.js';
import { findExecutable } from '../../src/platform/files.js';
import { tempDir } from '../support/helpers.js';

const RG = await findExecutable('rg');

let base: { dir: string; cleanup: () => Promise<void> };
let ws: string;
let registry: Registry;
let deadPid: number;

/** The pid of a process that has already exited. */
function exitedPid(): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
    child.on('error', reject);
    child.on('exit', () => resolve(child.pid!));
  });
}

const ago = (ms: number) => new Date(Date.now() - ms);

/** Whether `out` names the entry `name` itself (not a longer name that contains it). */
function names(out: string, name: string): boolean {
  const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`(^|[\\s/])${escaped}($|[\\s:@])`, 'm').test(out);
}

beforeAll(async () => {
  base = await tempDir('leftovers-');
  ws = path.join(base.dir, 'ws');
  await mkdir(ws);
  registry = registerBuiltinTools(createRegistry());
  deadPid = await exitedPid();
});
afterAll(() => base.cleanup());

describe('temp files of killed atomic writes', () => {
  it('are never listed, globbed or grepped, and the next write to the directory removes only the stale ones', async () => {
    const init = { workspaceRoot: ws };
    const file = (name: string) => path.join(ws, name);
    await writeFile(file('a.txt'), 'needle in a\n');
    // Ours and stale: the writer is gone and the file is older than the minimum age.
    const stale = `.a.txt.${deadPid}-0123456789ab.toolbelt.tmp`;
    // Ours and ancient: removed whoever wrote it (pid 1 is alive; a reused pid looks like this).
    const ancient = `.b.txt.1-aaaaaaaaaaaa.toolbelt.tmp`;
    // Ours but possibly still being written: too young, or its writer (this process) is alive.
    const young = `.a.txt.${deadPid}-bbbbbbbbbbbb.toolbelt.tmp`;
    const live = `.a.txt.${process.pid}-cccccccccccc.toolbelt.tmp`;
    for (const n of [stale, ancient, young, live]) await writeFile(file(n), 'needle half-written\n');
    await utimes(file(stale), ago(STALE_TEMP_MIN_AGE_MS + 5_000), ago(STALE_TEMP_MIN_AGE_MS + 5_000));
    await utimes(file(ancient), ago(STALE_TEMP_MAX_AGE_MS + 5_000), ago(STALE_TEMP_MAX_AGE_MS + 5_000));
    await utimes(file(live), ago(STALE_TEMP_MIN_AGE_MS + 5_000), ago(STALE_TEMP_MIN_AGE_MS + 5_000));
    // The user's files, however close to the pattern: never removed, always shown.
    const users = [
      'notes.tmp',
      '.a.txt.0a1b2c3d4e5f.tmp', // an older naming scheme: cannot be told from a user's file
      `${stale}.bak`,
      `a.txt.${deadPid}-0123456789ab.toolbelt.tmp`, // no leading dot
      `.a.txt.x${deadPid}-0123456789ab.toolbelt.tmp`, // not a pid
    ];
    for (const n of users) {
      await writeFile(file(n), 'needle of the user\n');
      await utimes(file(n), ago(STALE_TEMP_MAX_AGE_MS + 5_000), ago(STALE_TEMP_MAX_AGE_MS + 5_000));
    }
    // A link with our pattern is not a file we wrote: kept.
    const link = `.c.txt.${deadPid}-dddddddddddd.toolbelt.tmp`;
    await symlink('a.txt', file(link));
    await lutimes(file(link), ago(STALE_TEMP_MAX_AGE_MS + 5_000), ago(STALE_TEMP_MAX_AGE_MS + 5_000));
    expect([stale, ancient, young, live, link].filter((n) => !isAtomicTempName(n))).toEqual([]);
    expect(users.filter(isAtomicTempName)).toEqual([]);

    const outputs: Record<string, string> = {};
    outputs.list = (await registry.execute('list', { path: '.' }, {}, init)).result.output;
    outputs.glob = (await registry.execute('glob', { pattern: '**/*' }, {}, init)).result.output;
    for (const backend of RG ? (['js', 'rg'] as const) : (['js'] as const)) {
      const res = await registry.execute('grep', { pattern: 'needle' }, {}, { ...init, grepBackend: backend });
      outputs[`grep ${backend}`] = res.result.output;
    }
    for (const [tool, out] of Object.entries(outputs)) {
      const shown = [stale, ancient, young, live].filter((n) => names(out, n));
      expect({ tool, shown }).toEqual({ tool, shown: [] });
      expect({ tool, missing: users.filter((n) => !names(out, n)) }).toEqual({ tool, missing: [] });
    }

    const wrote = await registry.execute('write', { filePath: 'new.txt', content: 'fresh\n' }, {}, init);
    expect(wrote.error).toBeUndefined();
    const left = await readdir(ws);
    expect(left.filter((n) => n === stale || n === ancient)).toEqual([]);
    expect([young, live, link, ...users].filter((n) => !left.includes(n))).toEqual([]);
  });
});
