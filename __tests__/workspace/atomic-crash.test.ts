/**
 * A real child process rewriting a large file through atomicWriteFile is SIGKILLed at random
 * moments, many times: the file must always hold one complete version, never a mix or a stub.
 * The child imports src/workspace/workspace.ts compiled on the fly with swc (no dist/ build needed).
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { spawn } from 'node:child_process';
import { readFile, writeFile, readdir, mkdir, utimes } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bytesDiffer, tempDir } from '../support/helpers.js';
import { STALE_TEMP_MIN_AGE_MS, atomicWriteFile, isAtomicTempName } from '../../src/workspace/atomic-write.js';
import { ROOT, ensureDist } from '../support/dist.js';

const here = path.dirname(fileURLToPath(import.meta.url));
/** Kills in total, run in PARALLEL children at a time (each on its own file). */
const KILLS = 50;
const PARALLEL = 5;
const SIZE = 2 * 1024 * 1024;

let dir: string;
let cleanup: () => Promise<void>;
let modulePath: string;

beforeAll(async () => {
  ({ dir, cleanup } = await tempDir('crash-'));
  // The built module, with everything it imports (workspace.ts alone no longer stands on its own).
  await ensureDist();
  modulePath = path.join(ROOT, 'dist', 'workspace', 'workspace.js');
}, 180_000);
afterAll(() => cleanup());

/** Starts the writer, lets it begin its `nth` write, waits `delayMs`, then SIGKILLs it. */
function runAndKill(target: string, nth: number, delayMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [path.join(here, '..', 'fixtures', 'atomic-writer.mjs'), modulePath, target, String(SIZE)],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let seen = 0;
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.stdout.on('data', (d: Buffer) => {
      seen += d
        .toString()
        .split('\n')
        .filter((l) => l === 'w').length;
      if (seen >= nth && !child.killed) setTimeout(() => child.kill('SIGKILL'), delayMs);
    });
    child.on('exit', (code, signal) =>
      signal === 'SIGKILL' ? resolve() : reject(new Error(`writer exited ${code}: ${stderr}`)),
    );
  });
}

describe('atomicWriteFile under SIGKILL', () => {
  it(`the target is always complete old or new content across ${KILLS} kills`, async () => {
    const A = Buffer.alloc(SIZE, 'A');
    const B = Buffer.alloc(SIZE, 'B');
    let midWrite = 0;
    let kills = 0;
    // PARALLEL lanes, each its own directory and file, KILLS / PARALLEL kills each.
    await Promise.all(
      Array.from({ length: PARALLEL }, async (_, lane) => {
        const laneDir = path.join(dir, `lane-${lane}`);
        await mkdir(laneDir);
        const target = path.join(laneDir, 'big.txt');
        await writeFile(target, A);
        const seen = new Set<string>();
        for (let i = 0; i < KILLS / PARALLEL; i++) {
          await runAndKill(target, 1 + (i % 3), (i + lane) % 7);
          kills++;
          const now = await readFile(target);
          expect(now.length).toBe(SIZE);
          expect([bytesDiffer(now, A), bytesDiffer(now, B)]).toContain('same bytes');
          // A new leftover temp file proves this kill landed inside a write (the target still intact).
          const temps = (await readdir(laneDir)).filter((n) => n.endsWith('.tmp'));
          if (temps.some((n) => !seen.has(n))) midWrite++;
          for (const n of temps) seen.add(n);
        }
      }),
    );
    // The temp files those kills left are ours by name; once old enough, the next write to their
    // directory removes every one of them.
    let leftovers = 0;
    for (let lane = 0; lane < PARALLEL; lane++) {
      const laneDir = path.join(dir, `lane-${lane}`);
      const temps = (await readdir(laneDir)).filter((n) => n.endsWith('.tmp'));
      expect(temps.filter((n) => !isAtomicTempName(n))).toEqual([]);
      leftovers += temps.length;
      const old = new Date(Date.now() - STALE_TEMP_MIN_AGE_MS - 5_000);
      for (const n of temps) await utimes(path.join(laneDir, n), old, old);
      await atomicWriteFile(path.join(laneDir, 'big.txt'), 'after the crashes\n');
      expect(await readdir(laneDir)).toEqual(['big.txt']);
    }
    console.log(
      `atomic-crash: ${kills} SIGKILLs during writes, ${midWrite} landed mid-write, 0 torn files; ` +
        `${leftovers} leftover temp files, all removed by the next write`,
    );
    expect(kills).toBeGreaterThanOrEqual(50);
    expect(midWrite).toBeGreaterThan(0);
    expect(leftovers).toBeGreaterThan(0);
  });
});
