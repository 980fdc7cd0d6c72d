/**
 * The CLI's saved full outputs outlive the process: a one-shot `toolbelt run` that cuts its output
 * prints a path in its state directory that is still readable after it exited (by the read tool
 * of a later run too), and the directory is bounded by CLI_MAX_SAVED_OUTPUTS files and
 * CLI_MAX_SAVED_OUTPUT_BYTES bytes, oldest first. Real CLI processes from dist/, a real temp state dir.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ensureDist, CLI } from '../support/dist.js';
import { tempDir } from '../support/helpers.js';
import { CLI_MAX_SAVED_OUTPUTS, CLI_MAX_SAVED_OUTPUT_BYTES, pruneSavedOutputs } from '../../src/cli/state.js';

let ws: Awaited<ReturnType<typeof tempDir>>;
let state: Awaited<ReturnType<typeof tempDir>>;

beforeAll(async () => {
  await ensureDist();
  ws = await tempDir('cli-outputs-ws-');
  state = await tempDir('cli-outputs-state-');
}, 180_000);
afterAll(async () => {
  await ws.cleanup();
  await state.cleanup();
});

function toolbelt(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd: ws.dir,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out, err }));
  });
}

const BIG = ['run', 'bash', JSON.stringify({ command: 'seq 1 100000', description: 'count' }), '--sandbox', 'off'];
const savedPath = (text: string) => /is saved at (\S+?\.txt)/.exec(text)?.[1];

describe('toolbelt run: the saved output outlives the process', () => {
  it('the printed path is in the state directory and readable after exit, also by a later run', async () => {
    const env = { TOOLBELT_STATE_DIR: state.dir };
    const first = await toolbelt([...BIG, '--workspace', ws.dir], env);
    expect(first.code).toBe(0);
    const saved = savedPath(first.out);
    expect(saved).toBeDefined();
    expect(path.dirname(saved!)).toBe(path.join(fs.realpathSync(state.dir), 'outputs'));
    const text = fs.readFileSync(saved!, 'utf8');
    expect(text.trimEnd().split('\n').at(-1)).toBe('100000');
    expect(fs.statSync(saved!).mode & 0o777).toBe(0o600);
    const later = await toolbelt(
      ['run', 'read', JSON.stringify({ filePath: saved, offset: 99_999 }), '--workspace', ws.dir],
      env,
    );
    expect([later.code, later.err]).toEqual([0, '']);
    expect(later.out).toMatch(/^100000: 100000$/m);
  }, 60_000);

  it(`the directory keeps CLI_MAX_SAVED_OUTPUTS (${CLI_MAX_SAVED_OUTPUTS}) files: a run past it removes the oldest`, async () => {
    const own = await tempDir('cli-outputs-bound-');
    try {
      const dir = path.join(own.dir, 'outputs');
      fs.mkdirSync(dir, { mode: 0o700 });
      // At the edge: exactly the limit, the oldest first (older mtimes).
      const old = Date.now() / 1000 - 10_000;
      for (let i = 0; i < CLI_MAX_SAVED_OUTPUTS; i++) {
        const f = path.join(dir, `bash-${1000 + i}-${(i + 0x10000000).toString(16)}.txt`);
        fs.writeFileSync(f, `old ${i}\n`, { mode: 0o600 });
        fs.utimesSync(f, old + i, old + i);
      }
      const foreign = path.join(dir, 'notes.md'); // not a saved output: never counted or removed
      fs.writeFileSync(foreign, 'mine');
      const ran = await toolbelt([...BIG, '--workspace', ws.dir], { TOOLBELT_STATE_DIR: own.dir });
      const saved = savedPath(ran.out)!;
      expect(fs.existsSync(saved)).toBe(true);
      const left = fs.readdirSync(dir).filter((n) => n.endsWith('.txt'));
      expect(left).toHaveLength(CLI_MAX_SAVED_OUTPUTS);
      expect(left).not.toContain(`bash-1000-${(0x10000000).toString(16)}.txt`); // the oldest went
      expect(left).toContain(`bash-1001-${(0x10000001).toString(16)}.txt`);
      expect(fs.existsSync(foreign)).toBe(true);
    } finally {
      await own.cleanup();
    }
  }, 60_000);

  it('a state directory open to other users is not used: saved outputs then last only while the command runs', async () => {
    const own = await tempDir('cli-outputs-open-');
    try {
      fs.chmodSync(own.dir, 0o777);
      const ran = await toolbelt([...BIG, '--workspace', ws.dir], { TOOLBELT_STATE_DIR: own.dir });
      expect(ran.err).toContain(
        `toolbelt: saved outputs are kept only while this command runs: ${own.dir} is writable by other users (mode 777).`,
      );
      const saved = savedPath(ran.out)!;
      expect(saved.startsWith(own.dir)).toBe(false);
      expect(fs.existsSync(saved)).toBe(false); // the per-process directory went at exit
    } finally {
      fs.chmodSync(own.dir, 0o700);
      await own.cleanup();
    }
  }, 60_000);
});

describe('pruneSavedOutputs: CLI_MAX_SAVED_OUTPUT_BYTES', () => {
  it('files adding up to exactly the limit stay; one byte more and the oldest goes (the newest always stays)', async () => {
    const own = await tempDir('cli-outputs-bytes-');
    try {
      const file = (name: string, size: number, age: number) => {
        const f = path.join(own.dir, name);
        fs.writeFileSync(f, '');
        fs.truncateSync(f, size); // sparse: no disk used
        const t = Date.now() / 1000 - age;
        fs.utimesSync(f, t, t);
        return f;
      };
      const oldest = file('read-1-0000000a.txt', CLI_MAX_SAVED_OUTPUT_BYTES - 10, 300);
      file('read-2-0000000b.txt', 10, 200);
      expect(await pruneSavedOutputs(own.dir)).toBe(0);
      file('read-3-0000000c.txt', 1, 100);
      expect(await pruneSavedOutputs(own.dir)).toBe(1);
      expect(fs.existsSync(oldest)).toBe(false);
      const huge = file('read-4-0000000d.txt', CLI_MAX_SAVED_OUTPUT_BYTES + 1, 0);
      expect(await pruneSavedOutputs(own.dir)).toBe(2);
      expect(fs.readdirSync(own.dir)).toEqual([path.basename(huge)]);
    } finally {
      await own.cleanup();
    }
  });
});
