/**
 * What a tool says about its own output (`metadata.truncated`) never switches the registry's output
 * cap off: `false` on an output over the cap is cut and saved like any other, and `true` (a tool
 * that cut its output itself) is trusted only up to SELF_CAPPED_MAX_FACTOR times the byte cap.
 * Real glob over a real temp tree with long paths; a user tool through the real registry.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { Tool, createRegistry, registerBuiltinTools } from '../../src/index.js';
import { CAPPED_ERROR_MAX_CHARS, DEFAULT_MAX_BYTES, SELF_CAPPED_MAX_FACTOR } from '../../src/constants.js';
import { MAX_GLOB_RESULTS } from '../../src/tools/files/glob.js';
import { tempDir } from '../support/helpers.js';

let ws: { dir: string; cleanup: () => Promise<void> };

/** A chain of `depth` directories with 200-character names: paths of ~200 x depth bytes. */
function longDir(root: string, tag: string, depth: number): string {
  const parts = Array.from({ length: depth }, (_, i) => `${tag}${i}-${'d'.repeat(200)}`);
  const dir = path.join(root, ...parts);
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

beforeAll(async () => {
  ws = await tempDir('output-caps-');
  // Under MAX_GLOB_RESULTS files (glob says truncated: false) whose list passes the 50 KB cap.
  const few = longDir(path.join(ws.dir, 'few'), 'a', 5);
  for (let i = 0; i < MAX_GLOB_RESULTS - 1; i++) fs.writeFileSync(path.join(few, `f${i}.txt`), '');
  // More than MAX_GLOB_RESULTS (glob cuts its own list: truncated: true) with ~3 KB paths.
  const many = longDir(path.join(ws.dir, 'many'), 'b', 15);
  for (let i = 0; i < MAX_GLOB_RESULTS + 5; i++) fs.writeFileSync(path.join(many, `g${i}.txt`), '');
});
afterAll(() => ws.cleanup());

describe('glob with a huge listing', () => {
  it('fewer than MAX_GLOB_RESULTS long paths over the cap: cut to the cap, every path saved', async () => {
    const registry = registerBuiltinTools(createRegistry(), ['glob']);
    try {
      const r = await registry.execute('glob', { pattern: 'few/**/*.txt' }, {}, { workspaceRoot: ws.dir });
      expect(r.error).toBeUndefined();
      const { output, metadata } = r.result;
      expect(metadata.count).toBe(MAX_GLOB_RESULTS - 1);
      expect(Buffer.byteLength(output)).toBeLessThan(DEFAULT_MAX_BYTES + 1024);
      expect(metadata.truncated).toBe(true);
      const saved = fs.readFileSync(metadata.outputPath as string, 'utf8');
      expect(saved.trim().split('\n')).toHaveLength(MAX_GLOB_RESULTS - 1);
      expect(output).toContain(`The full output is saved at ${metadata.outputPath as string}`);
    } finally {
      await registry.dispose();
    }
  });

  it('a list glob cut itself but still over SELF_CAPPED_MAX_FACTOR x the cap: cut again and saved', async () => {
    const registry = registerBuiltinTools(createRegistry(), ['glob']);
    try {
      const r = await registry.execute('glob', { pattern: 'many/**/*.txt' }, {}, { workspaceRoot: ws.dir });
      const { output, metadata } = r.result;
      expect(metadata.count).toBe(MAX_GLOB_RESULTS + 5);
      expect(typeof metadata.fullListPath).toBe('string'); // glob's own saved list survives
      expect(Buffer.byteLength(output)).toBeLessThan(DEFAULT_MAX_BYTES * SELF_CAPPED_MAX_FACTOR + 1024);
      expect(fs.readFileSync(metadata.outputPath as string, 'utf8').split('\n').length).toBeGreaterThan(
        MAX_GLOB_RESULTS,
      );
    } finally {
      await registry.dispose();
    }
  });
});

describe('a failed call over the cap', () => {
  const fails = Tool.define('fails', {
    description: 'Reports an error with `size` bytes of output',
    parameters: z.object({ size: z.number(), error: z.union([z.string(), z.boolean()]) }),
    async execute(args) {
      return { title: 'x', metadata: { error: args.error, truncated: false }, output: 'y'.repeat(args.size) };
    },
  });

  it('is cut and saved like a success, and the error sentence stays after the cut', async () => {
    const registry = createRegistry({ truncate: { maxBytes: 1000 } });
    registry.register(fails, { permissions: { required: [] } });
    try {
      const said = await registry.execute('fails', { size: 60_000, error: 'The thing failed; try again.' });
      expect(said.success).toBe(false);
      expect(said.error).toBe('The thing failed; try again.');
      expect(Buffer.byteLength(said.result.output)).toBeLessThan(2000);
      expect(said.result.output).toMatch(/\.\.\. output truncated: .*\n\nError: The thing failed; try again\.$/s);
      const saved = fs.readFileSync(said.result.metadata.outputPath as string, 'utf8');
      expect(saved).toBe(`${'y'.repeat(60_000)}\n\nError: The thing failed; try again.`);
      const flagged = await registry.execute('fails', { size: 60_000, error: true });
      expect(flagged.success).toBe(false);
      expect(Buffer.byteLength(flagged.result.output)).toBeLessThan(2000);
      // An error sentence of CAPPED_ERROR_MAX_CHARS is put back after the cut; one character more
      // (an MCP error that is its whole output) is only in the saved file.
      for (const [length, back] of [
        [CAPPED_ERROR_MAX_CHARS, true],
        [CAPPED_ERROR_MAX_CHARS + 1, false],
      ] as const) {
        const error = 'e'.repeat(length);
        const r = await registry.execute('fails', { size: 60_000, error });
        expect([length, r.result.output.endsWith(`\n\nError: ${error}`)]).toEqual([length, back]);
        expect(fs.readFileSync(r.result.metadata.outputPath as string, 'utf8')).toContain(error);
      }
    } finally {
      await registry.dispose();
    }
  });
});

describe('a thrown error over the cap', () => {
  it('is cut and saved: the caller reads the cut text, the whole message is in the file', async () => {
    const message = `The service answered: ${'q'.repeat(100_000)} (end)`;
    const throws = Tool.define('throws', {
      description: 'Throws a long error',
      parameters: z.object({}),
      async execute(): Promise<Tool.Result> {
        throw new Error(message);
      },
    });
    const registry = createRegistry();
    registry.register(throws, { permissions: { required: [] } });
    try {
      const r = await registry.execute('throws', {});
      expect(r.success).toBe(false);
      expect(Buffer.byteLength(r.result.output)).toBeLessThan(DEFAULT_MAX_BYTES + 1024);
      expect(r.error).toBe(r.result.output);
      expect(r.result.output).toMatch(
        /^The service answered: q+\n\n\.\.\. output truncated: .* The full output is saved at /s,
      );
      expect(fs.readFileSync(r.result.metadata.outputPath as string, 'utf8')).toBe(message);
      // A short one is untouched.
      const short = Tool.define('short', {
        description: 'Throws a short error',
        parameters: z.object({}),
        async execute(): Promise<Tool.Result> {
          throw new Error('The thing failed; try again.');
        },
      });
      registry.register(short, { permissions: { required: [] } });
      expect((await registry.execute('short', {})).result.output).toBe('The thing failed; try again.');
    } finally {
      await registry.dispose();
    }
  });
});

describe('a tool setting metadata.truncated itself', () => {
  const says = Tool.define('says', {
    description: 'Returns `size` bytes, saying truncated as told',
    parameters: z.object({ size: z.number(), truncated: z.boolean() }),
    async execute(args) {
      return { title: 'x', metadata: { truncated: args.truncated }, output: 'x'.repeat(args.size) };
    },
  });
  const CAP = 1000;

  async function call(size: number, truncated: boolean) {
    const registry = createRegistry({ truncate: { maxBytes: CAP } });
    registry.register(says, { permissions: { required: [] } });
    try {
      const { result } = await registry.execute('says', { size, truncated });
      // Read before dispose(), which removes the registry's private output directory.
      const path = result.metadata.outputPath as string | undefined;
      return { ...result, saved: path === undefined ? undefined : fs.readFileSync(path, 'utf8') };
    } finally {
      await registry.dispose();
    }
  }

  it('truncated: false is cut at the cap, one byte past it; at the cap it is left whole', async () => {
    expect((await call(CAP, false)).output).toBe('x'.repeat(CAP));
    const past = await call(CAP + 1, false);
    expect(past.metadata.truncated).toBe(true);
    expect(past.output).toMatch(/^x{0,1000}\n\n\.\.\. output truncated: .* The full output is saved at /s);
    expect(past.saved).toBe('x'.repeat(CAP + 1));
  });

  it(`truncated: true is left alone up to ${SELF_CAPPED_MAX_FACTOR} x the cap, cut one byte past it`, async () => {
    const edge = CAP * SELF_CAPPED_MAX_FACTOR;
    const at = await call(edge, true);
    expect(at.output).toBe('x'.repeat(edge));
    expect(at.metadata.outputPath).toBeUndefined();
    const past = await call(edge + 1, true);
    expect(past.output).toContain('... output truncated');
    expect(past.saved).toBe('x'.repeat(edge + 1));
  });
});
