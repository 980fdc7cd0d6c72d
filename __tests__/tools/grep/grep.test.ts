import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { mkdir, writeFile, utimes, symlink, chmod, readFile } from 'node:fs/promises';
import path from 'node:path';
import { GrepTool, MAX_MATCHES } from '../../../src/tools/grep/grep.js';
import { MAX_LINE_LENGTH, GREP_LINE_CUT_MARKER } from '../../../src/tools/grep/results.js';
import { findExecutable } from '../../../src/platform/files.js';
import { compilePattern } from '../../../src/tools/grep/pattern.js';
import { AUTOMATON_LONG_LINE_BYTES } from '../../../src/tools/grep/long-line.js';
import { FIRST_READ_BYTES } from '../../../src/tools/grep/js.js';
import { tempDir, makeCtx } from '../../support/helpers.js';
import { createRegistry } from '../../../src/registry/registry.js';
import { ReadTool } from '../../../src/tools/files/read.js';
import { callTool } from '../../support/tool-call.js';

const RG = await findExecutable('rg');
if (!RG) {
  // Visible in the jest output: the ripgrep half of the table is skipped, the JS half still runs.
  console.warn(
    'grep.test: no `rg` on PATH; the ripgrep backend tests are SKIPPED, and the behaviour table compares nothing: its rows run on the JS backend only (CI installs ripgrep).',
  );
}
const describeRg = RG ? describe : describe.skip;

type Backend = 'rg' | 'js';
type Args = Record<string, unknown>;

let dir: string;
let cleanup: () => Promise<void>;

async function put(rel: string, content: string | Buffer, mtimeSec?: number): Promise<void> {
  const abs = path.join(dir, rel);
  await mkdir(path.dirname(abs), { recursive: true });
  await writeFile(abs, content);
  if (mtimeSec !== undefined) await utimes(abs, mtimeSec, mtimeSec);
}

async function grep(backend: Backend, args: Args, init: Record<string, unknown> = {}, ctx = makeCtx()) {
  const tool = await GrepTool.init({ workspaceRoot: dir, grepBackend: backend, ...init });
  return tool.execute(tool.parameters.parse(args), ctx);
}

/** A saved full match list as its file blocks, sorted (ripgrep searches files in parallel, so its order varies). */
async function savedBlocks(file: string | undefined): Promise<string[] | undefined> {
  return file === undefined ? undefined : (await readFile(file, 'utf8')).split('\n\n').filter(Boolean).sort();
}

/**
 * Runs on both backends (when rg exists) and asserts they print exactly the same (the saved full
 * list's own file name aside) and save the same matches.
 */
async function both(args: Args, init: Record<string, unknown> = {}) {
  const js = await grep('js', args, init);
  if (RG) {
    const rg = await grep('rg', args, init);
    const named = (r: typeof js) => {
      const file = r.metadata.fullListPath;
      return file ? r.output.replace(file, '<full list>') : r.output;
    };
    expect(named(rg)).toBe(named(js));
    const { fullListPath: rgFull, ...rgMeta } = rg.metadata;
    const { fullListPath: jsFull, ...jsMeta } = js.metadata;
    expect({ ...rgMeta, backend: 'js' }).toEqual(jsMeta);
    expect(await savedBlocks(rgFull)).toEqual(await savedBlocks(jsFull));
  }
  return js;
}

const T0 = 1_700_000_000; // fixed mtimes so "newest first" is deterministic

beforeAll(async () => {
  ({ dir, cleanup } = await tempDir('grep-'));
  await put('old.ts', 'const needle = 1\nother\n', T0);
  await put('src/new.ts', 'a\nb\nneedle here\nc\nd\ne\nf\ng\nneedle again\nh\n', T0 + 100);
  await put('src/mid.md', 'docs mention needle\n', T0 + 50);
  await put('we:ird:name.ts', 'needle in a colon file\n', T0 + 10);
  await put('.hidden/h.ts', 'needle hidden\n', T0 + 5);
  await put('.git/config', 'needle in git metadata\n', T0 + 5);
  await put('.gitignore', '*.log\nignored/\n!keep.log\n/rootonly.txt\n');
  await put('x.log', 'needle in log\n', T0);
  await put('keep.log', 'needle kept by negation\n', T0 + 1);
  await put('ignored/i.ts', 'needle ignored dir\n', T0);
  await put('rootonly.txt', 'needle root only\n', T0);
  await put('src/rootonly.txt', 'needle not anchored here\n', T0 + 2);
  await put('nested/.gitignore', 'secret.ts\n');
  await put('nested/secret.ts', 'needle nested ignore\n', T0);
  await put('nested/open.ts', 'needle nested open\n', T0 + 3);
  await put('bin/nul-first.dat', Buffer.concat([Buffer.from([0]), Buffer.from('needle\n')]), T0);
  await put(
    'bin/nul-8191.dat',
    Buffer.concat([Buffer.from('needle\n'), Buffer.alloc(8184, 'x'), Buffer.from([0])]),
    T0,
  );
  await put(
    'bin/nul-100k.dat',
    Buffer.concat([Buffer.from('needle\n'), Buffer.alloc(100_000, 'x'), Buffer.from([0])]),
    T0,
  );
  await put('crlf/win.txt', 'first needle\r\nneedle end\r\n', T0);
});

afterAll(async () => {
  await cleanup();
});

describe('grep: one behaviour table, both backends print the same', () => {
  it('finds matches, groups them by file, newest file first, with line numbers', async () => {
    const res = await both({ pattern: 'needle', path: 'src' });
    expect(res.output).toBe(
      'Found 4 matches in 3 files.\n\n' +
        'src/new.ts:\n  3: needle here\n  9: needle again\n\n' +
        'src/mid.md:\n  1: docs mention needle\n\n' +
        'src/rootonly.txt:\n  1: needle not anchored here',
    );
    expect(res.metadata).toMatchObject({ matches: 4, files: 3, shown: 4 });
  });

  it('respects .gitignore (patterns, directories, negation, anchoring, nested files), skips .git, includes hidden files', async () => {
    const res = await both({ pattern: 'needle' });
    const out = res.output;
    expect(out).not.toContain('x.log');
    expect(out).toContain('keep.log:');
    expect(out).not.toContain('ignored/i.ts');
    expect(out).not.toMatch(/^rootonly\.txt:/m);
    expect(out).toContain('src/rootonly.txt:');
    expect(out).not.toContain('nested/secret.ts');
    expect(out).toContain('nested/open.ts:');
    expect(out).not.toContain('.git/config');
    expect(out).toContain('.hidden/h.ts:');
  });

  it('applies the ignore files above a searched subdirectory', async () => {
    await put('sub2/.gitignore', 'deep/\n');
    await put('sub2/inner/deep/d.ts', 'needle deep\n');
    await put('sub2/inner/deep.ts', 'needle file named deep\n');
    await put('sub2/inner/x.log', 'needle log below\n');
    const res = await both({ pattern: 'needle', path: 'sub2/inner' });
    expect(res.output).not.toContain('deep/d.ts');
    expect(res.output).not.toContain('x.log');
    expect(res.output).toContain('sub2/inner/deep.ts:');
  });

  it('searches an ignored directory when it is named explicitly', async () => {
    const res = await both({ pattern: 'needle', path: 'ignored' });
    expect(res.output).toContain('ignored/i.ts:\n  1: needle ignored dir');
  });

  it('skips binary files: NUL at byte 0, inside the first 8 KB, and far beyond it', async () => {
    const res = await both({ pattern: 'needle', path: 'bin' });
    expect(res.output).toBe('No matches found for "needle" in bin.');
    expect(res.metadata.matches).toBe(0);
  });

  it('refuses an explicitly named binary file with a clear error', async () => {
    for (const backend of RG ? (['js', 'rg'] as const) : (['js'] as const)) {
      await expect(grep(backend, { pattern: 'needle', path: 'bin/nul-100k.dat' })).rejects.toThrow(
        /binary file.*Use read/,
      );
    }
  });

  it('searches a single file given as path, and handles ":" in file names', async () => {
    const res = await both({ pattern: 'needle', path: 'we:ird:name.ts' });
    expect(res.output).toBe('Found 1 match in 1 file.\n\nwe:ird:name.ts:\n  1: needle in a colon file');
  });

  it('shows context lines with "-" and separates distant groups with "--"', async () => {
    const res = await both({ pattern: 'needle', path: 'src/new.ts', context: 2 });
    expect(res.output).toBe(
      'Found 2 matches in 1 file.\n\nsrc/new.ts:\n' +
        '  1- a\n  2- b\n  3: needle here\n  4- c\n  5- d\n  --\n  7- f\n  8- g\n  9: needle again\n  10- h',
    );
    const merged = await both({ pattern: 'needle', path: 'src/new.ts', context: 3 });
    expect(merged.output).not.toContain('--');
    expect(merged.output).toContain('  6- e');
  });

  it('before/after override context', async () => {
    const res = await both({ pattern: 'needle', path: 'src/new.ts', context: 5, before: 0, after: 1 });
    expect(res.output).toBe(
      'Found 2 matches in 1 file.\n\nsrc/new.ts:\n  3: needle here\n  4- c\n  --\n  9: needle again\n  10- h',
    );
  });

  it('is case-sensitive unless caseInsensitive is set', async () => {
    await put('case/c.txt', 'NEEDLE upper\nneedle lower\n');
    const sensitive = await both({ pattern: 'needle', path: 'case' });
    expect(sensitive.metadata.matches).toBe(1);
    const insensitive = await both({ pattern: 'needle', path: 'case', caseInsensitive: true });
    expect(insensitive.metadata.matches).toBe(2);
  });

  it('include filters by file name, by braces, and by path; it never un-ignores a .gitignored file', async () => {
    const ts = await both({ pattern: 'needle', include: '*.ts' });
    expect(ts.output).toContain('old.ts:');
    expect(ts.output).not.toContain('mid.md');
    expect(ts.output).not.toContain('nested/secret.ts'); // ignored stays ignored
    const braces = await both({ pattern: 'needle', include: '*.{md,log}' });
    expect(braces.output).toContain('src/mid.md:');
    expect(braces.output).toContain('keep.log:');
    expect(braces.output).not.toContain('x.log');
    expect(braces.output).not.toContain('.ts:');
    const byPath = await both({ pattern: 'needle', include: 'src/*.ts' });
    expect(byPath.output).toContain('src/new.ts:');
    expect(byPath.output).not.toContain('old.ts');
    await expect(grep('js', { pattern: 'x', include: '!*.ts' })).rejects.toThrow(/one positive glob/);
  });

  it('shows CRLF lines without the \\r (and "$" does not match before \\r, as in ripgrep)', async () => {
    const res = await both({ pattern: 'needle', path: 'crlf' });
    expect(res.output).toContain('  1: first needle\n  2: needle end');
    expect(res.output).not.toContain('\r');
    const anchored = await both({ pattern: 'needle$', path: 'crlf' });
    expect(anchored.metadata.matches).toBe(0);
  });

  it('does not follow symlinks while walking', async () => {
    await put('linked/real/r.txt', 'needle real\n');
    await symlink(path.join(dir, 'linked', 'real'), path.join(dir, 'linked', 'alias'));
    await symlink(path.join(dir, 'linked', 'real', 'r.txt'), path.join(dir, 'linked', 'alias.txt'));
    const res = await both({ pattern: 'needle', path: 'linked' });
    expect(res.output).toBe('Found 1 match in 1 file.\n\nlinked/real/r.txt:\n  1: needle real');
  });
});

describe('grep: limits', () => {
  it(`lines longer than AUTOMATON_LONG_LINE_BYTES (${AUTOMATON_LONG_LINE_BYTES}) are matched whole, in a worker, with context and line numbers as rg gives them`, async () => {
    const long = (c: string) => c.repeat(AUTOMATON_LONG_LINE_BYTES * 3);
    // Long lines first, in the middle, at the end without a newline; matches at their far ends.
    await put(
      'longlines/a.txt',
      [`${long('x')}tailmark`, 'short one', `head ${long('y')} zz9`, 'needle-2 short', `${long('é')}needle-3`].join(
        '\n',
      ),
    );
    for (const pattern of ['tailmark$', 'z+9', 'needle-\\d', 'needle']) {
      const res = await both({ pattern, path: 'longlines', context: 1 });
      expect(res.metadata.matches).toBeGreaterThan(0);
    }
    const res = await both({ pattern: 'needle-\\d', path: 'longlines', context: 1 });
    expect(res.metadata.matches).toBe(2);
    expect(res.output).toContain(`  3- head ${'y'.repeat(MAX_LINE_LENGTH - 5)}${GREP_LINE_CUT_MARKER}`);
    expect(res.output).toContain('  4: needle-2 short');
    expect(res.output).toContain(`  5: ${'é'.repeat(MAX_LINE_LENGTH)}${GREP_LINE_CUT_MARKER}`);
    const none = await both({ pattern: 'y{5}z', path: 'longlines' });
    expect(none.metadata.matches).toBe(0);
  });

  it(`shows exactly ${MAX_MATCHES} matches without a note, and truncates at ${MAX_MATCHES + 1}`, async () => {
    await put('cap100/a.txt', 'hit\n'.repeat(MAX_MATCHES));
    const at = await both({ pattern: 'hit', path: 'cap100' });
    expect(at.metadata).toMatchObject({ matches: MAX_MATCHES, shown: MAX_MATCHES });
    expect(at.output).not.toContain('truncated');
    await put('cap101/a.txt', 'hit\n'.repeat(MAX_MATCHES - 1), T0 + 10);
    await put('cap101/b.txt', 'hit\nhit\n', T0);
    const past = await both({ pattern: 'hit', path: 'cap101' });
    expect(past.metadata).toMatchObject({ matches: MAX_MATCHES + 1, shown: MAX_MATCHES, files: 2 });
    expect(past.output).toMatch(/^Found 101 matches in 2 files; showing the first 100, newest files first\./);
    expect(past.output).toContain('cap101/b.txt:\n  1: hit');
    expect(past.output).not.toContain('  2: hit\n\n(Results'); // only one line of the older file fits
    expect(past.output).toMatch(
      /\(Results truncated at 100 matches\. All 101 matches, grouped by file in the order they were found, are saved at \S+: read it with the read tool or search it with grep, or narrow the search/,
    );
    expect(at.metadata.fullListPath).toBeUndefined(); // nothing saved when everything is shown
    expect(await savedBlocks(past.metadata.fullListPath)).toEqual([
      `cap101/a.txt:\n${Array.from({ length: MAX_MATCHES - 1 }, (_, i) => `  ${i + 1}: hit`).join('\n')}`,
      'cap101/b.txt:\n  1: hit\n  2: hit',
    ]);
  });

  it('saves every match past the cap, with context, where the read tool of the same registry reads it', async () => {
    for (let i = 0; i < 30; i++) await put(`saved/f${String(i).padStart(2, '0')}.txt`, 'x\nhit\n'.repeat(10), T0 + i);
    const registry = createRegistry();
    registry.register(GrepTool);
    registry.register(ReadTool);
    const tools = await registry.tools({ ids: ['grep', 'read'], initCtx: { workspaceRoot: dir, grepBackend: 'js' } });
    const msg = await callTool(tools, 'grep', { pattern: 'hit', path: 'saved', before: 1 });
    const file = msg.result.metadata.fullListPath as string;
    expect(msg.content).toContain(
      `All 300 matches, grouped by file in the order they were found, are saved at ${file}`,
    );
    const blocks = await savedBlocks(file);
    expect(blocks).toHaveLength(30);
    const perFile = Array.from({ length: 10 }, (_, i) => `  ${2 * i + 1}- x\n  ${2 * i + 2}: hit`).join('\n');
    expect(blocks![0]).toBe(`saved/f00.txt:\n${perFile}`);
    const read = await callTool(tools, 'read', { filePath: file, limit: 3 });
    expect(read.status).not.toBe('error');
    expect(read.content).toMatch(/^1: saved\/f\d\d\.txt:\n2: {3}1- x\n3: {3}2: hit\n/);
  });

  it('keeps the newest files when many files match (bounded memory, newest first)', async () => {
    for (let i = 0; i < 30; i++) await put(`many/f${String(i).padStart(2, '0')}.txt`, 'hit\n'.repeat(10), T0 + i);
    const res = await both({ pattern: 'hit', path: 'many' });
    expect(res.metadata).toMatchObject({ matches: 300, files: 30, shown: 100 });
    const shownFiles = [...res.output.matchAll(/^(many\/\S+):$/gm)].map((m) => m[1]);
    expect(shownFiles).toEqual([
      'many/f29.txt',
      'many/f28.txt',
      'many/f27.txt',
      'many/f26.txt',
      'many/f25.txt',
      'many/f24.txt',
      'many/f23.txt',
      'many/f22.txt',
      'many/f21.txt',
      'many/f20.txt',
    ]);
  });

  it(`keeps lines of ${MAX_LINE_LENGTH} characters whole and cuts longer ones with a marker`, async () => {
    const at = 'needle' + 'a'.repeat(MAX_LINE_LENGTH - 6);
    const past = 'needle' + 'b'.repeat(MAX_LINE_LENGTH - 5);
    const wide = 'needle' + 'é'.repeat(5000); // > 8000 bytes: ripgrep's own preview cut is in play
    await put('long/l.txt', `${at}\n${past}\n${wide}\n`);
    const res = await both({ pattern: 'needle', path: 'long' });
    const lines = res.output.split('\n').filter((l) => /^ {2}\d+: /.test(l));
    expect(lines[0]).toBe(`  1: ${at}`);
    expect(lines[1]).toBe(`  2: ${past.slice(0, MAX_LINE_LENGTH)}${GREP_LINE_CUT_MARKER}`);
    expect(lines[2]).toBe(`  3: ${wide.slice(0, MAX_LINE_LENGTH)}${GREP_LINE_CUT_MARKER}`);
    // A very long context line (ripgrep leaves it out; it is read back from the file).
    await put('long/ctx.txt', `${'z'.repeat(9000)}\nneedle\n${'[Omitted long context line]'}\n`);
    const ctx = await both({ pattern: 'needle', path: 'long/ctx.txt', context: 1 });
    expect(ctx.output).toBe(
      `Found 1 match in 1 file.\n\nlong/ctx.txt:\n  1- ${'z'.repeat(MAX_LINE_LENGTH)}${GREP_LINE_CUT_MARKER}\n  2: needle\n  3- [Omitted long context line]`,
    );
  });

  it('reads big files in blocks with context carried across block edges (same output as one piece)', async () => {
    const body = Array.from({ length: 400 }, (_, i) => (i % 37 === 0 ? `needle ${i}` : `line ${i}`)).join('\n') + '\n';
    await put('blocks/b.txt', body);
    const whole = await both({ pattern: 'needle', path: 'blocks', context: 3 });
    const small = await grep('js', { pattern: 'needle', path: 'blocks', context: 3 }, { grepBlockBytes: 50 });
    expect(small.output).toBe(whole.output);
    expect(whole.metadata.matches).toBe(11);
  });

  it('rejects context above the maximum through the schema', async () => {
    const tool = await GrepTool.init({ workspaceRoot: dir });
    expect(() => tool.parameters.parse({ pattern: 'x', context: 21 })).toThrow();
    expect(tool.parameters.parse({ pattern: 'x', context: 20 }).context).toBe(20);
  });
});

describe('grep: patterns', () => {
  it('names the pattern in a clear error for invalid regexes', async () => {
    await expect(grep('js', { pattern: 'foo(' })).rejects.toThrow(
      /Invalid regular expression "foo\(".*Escape special characters/,
    );
    await expect(grep('js', { pattern: '(?=x)y' })).rejects.toThrow(/look-ahead/);
    await expect(grep('js', { pattern: '(a)\\1' })).rejects.toThrow(/back-references/);
    await expect(grep('js', { pattern: '(?i)foo' })).rejects.toThrow(/caseInsensitive: true/);
    await expect(grep('js', { pattern: '[[:alpha:]]' })).rejects.toThrow(/POSIX classes/);
    await expect(grep('js', { pattern: 'a\\nb' })).rejects.toThrow(/one line at a time/);
  });

  it('accepts needless escapes both engines disagree on (\\: \\/ \\-) as the plain characters', async () => {
    expect(compilePattern('a\\:b\\/c\\-d', false).source).toBe('a:b/c-d');
    expect(compilePattern('[a\\-z]', false).source).toBe('[a\\-z]');
    await put('esc/e.txt', 'url http://x/y-z\n');
    const res = await both({ pattern: 'http\\:\\/\\/x\\/y\\-z', path: 'esc' });
    expect(res.metadata.matches).toBe(1);
  });

  it('literal patterns (matched as bytes first) print what rg prints: multi-byte text, invalid UTF-8, escapes, several hits per line, context, block and first-read edges', async () => {
    const bad = Buffer.from([0xe2, 0xff, 0xc3]);
    await put('lit/utf.txt', 'café needle\nnothing\n€uro needle € needle\n😀needle😀\n');
    await put(
      'lit/bad.bin.txt',
      Buffer.concat([Buffer.from('x'), bad, Buffer.from('needle y\nplain\n'), bad, Buffer.from('\n')]),
    );
    await put('lit/esc.txt', 'a.b needle\naxb\nsee a.b\n');
    await put('lit/end.txt', 'needle at the end without newline');
    const filler = (n: number) => Buffer.alloc(n, 'f\n');
    // Around the first read (FIRST_READ_BYTES): a file that fits, one at the edge, one past it.
    await put('lit/edge-under.txt', Buffer.concat([filler(FIRST_READ_BYTES - 8), Buffer.from('needle\n')]));
    await put('lit/edge-at.txt', Buffer.concat([filler(FIRST_READ_BYTES - 7), Buffer.from('needle\n')]));
    await put('lit/edge-past.txt', Buffer.concat([filler(FIRST_READ_BYTES - 6), Buffer.from('needle\n')]));
    for (const [pattern, extra] of [
      ['needle', {}],
      ['café|€uro', {}],
      ['😀needle', {}],
      ['a\\.b', {}],
      ['NEEDLE', { caseInsensitive: true }],
      ['needle|nothing', { context: 1 }],
      ['plain', { before: 1 }],
    ] as const) {
      const res = await both({ pattern, path: 'lit', ...extra });
      expect([pattern, res.metadata.matches > 0]).toEqual([pattern, true]);
    }
    expect((await both({ pattern: 'a\\.b', path: 'lit/esc.txt' })).metadata.matches).toBe(2);
    expect((await both({ pattern: 'needle', path: 'lit' })).metadata.files).toBe(7);
    // Small blocks: the byte test runs per block, context carried across.
    const whole = await grep('js', { pattern: 'needle|nothing', path: 'lit/utf.txt', context: 1 });
    const small = await grep(
      'js',
      { pattern: 'needle|nothing', path: 'lit/utf.txt', context: 1 },
      { grepBlockBytes: 8 },
    );
    expect(small.output).toBe(whole.output);
  });

  it('"." matches a lone \\r inside a line, as in ripgrep', async () => {
    await put('dot/d.txt', Buffer.from('a\rb\n'));
    const res = await both({ pattern: 'a.b', path: 'dot' });
    expect(res.metadata.matches).toBe(1);
  });
});

describe('grep: errors, progress, abort', () => {
  it('reports a missing path and a path outside the workspace clearly', async () => {
    await expect(grep('js', { pattern: 'x', path: 'nope' })).rejects.toThrow(/does not exist.*use glob/);
    await expect(grep('js', { pattern: 'x', path: '..' })).rejects.toThrow(/outside the workspace/);
  });

  it('streams progress (files scanned, matches so far) while searching', async () => {
    const ctx = makeCtx();
    await grep('js', { pattern: 'hit', path: 'many' }, { progressIntervalMs: 0 }, ctx);
    const scanned = ctx.updates.map((u) => u.metadata?.filesScanned).filter((n): n is number => typeof n === 'number');
    expect(ctx.updates[0].title).toMatch(/^grep "hit" in many/);
    expect(scanned.length).toBeGreaterThanOrEqual(30);
    expect(scanned).toEqual([...scanned].sort((a, b) => a - b));
    expect(scanned[scanned.length - 1]).toBe(30);
  });

  it('stops the JS search when aborted', async () => {
    const ctx = makeCtx();
    ctx.abortNow();
    await expect(grep('js', { pattern: 'hit', path: 'many' }, {}, ctx)).rejects.toThrow(/aborted/);
  });

  it('fails clearly when grepBackend "rg" is forced but no rg exists', async () => {
    const saved = process.env.PATH;
    try {
      process.env.PATH = '/nonexistent';
      const forced = await GrepTool.init({ workspaceRoot: dir, grepBackend: 'rg' });
      await expect(forced.execute(forced.parameters.parse({ pattern: 'x' }), makeCtx())).rejects.toThrow(
        /no `rg` binary was found/,
      );
      const auto = await GrepTool.init({ workspaceRoot: dir });
      const res = await auto.execute(auto.parameters.parse({ pattern: 'needle', path: 'src' }), makeCtx());
      expect(res.metadata.backend).toBe('js');
    } finally {
      process.env.PATH = saved;
    }
  });
});

describeRg('grep: ripgrep child process', () => {
  it('kills the rg child when the call is aborted', async () => {
    // A stand-in `rg` that never finishes: proves the kill, independent of how fast real rg is.
    const fake = path.join(dir, 'fake-rg.sh');
    const pidFile = path.join(dir, 'fake-rg.pid');
    await writeFile(fake, `#!/bin/sh\necho $$ > ${JSON.stringify(pidFile)}\nexec sleep 30\n`);
    await chmod(fake, 0o755);
    const ctx = makeCtx();
    const run = grep('rg', { pattern: 'needle', path: 'src' }, { rgPath: fake }, ctx);
    let pid = 0;
    while (!pid) {
      await new Promise((r) => setTimeout(r, 20));
      pid = Number((await readFile(pidFile, 'utf8').catch(() => '')).trim()) || 0;
    }
    expect(isAlive(pid)).toBe(true);
    ctx.abortNow();
    await expect(run).rejects.toThrow(/aborted/);
    expect(ctx.updates.map((u) => u.metadata?.pid)).toContain(pid);
    while (isAlive(pid)) await new Promise((r) => setTimeout(r, 20));
    expect(isAlive(pid)).toBe(false);
  });

  it('reports an rg failure with its message', async () => {
    const fake = path.join(dir, 'failing-rg.sh');
    await writeFile(fake, '#!/bin/sh\necho "rg: something broke" >&2\nexit 2\n');
    await chmod(fake, 0o755);
    await expect(grep('rg', { pattern: 'needle', path: 'src' }, { rgPath: fake })).rejects.toThrow(
      /ripgrep could not search.*something broke/,
    );
  });
});

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('grep: matches longer than deepagents shows (80,000 chars) stay complete', () => {
  it('reports every match and file; what does not fit the output cap is saved with a pointer', async () => {
    // 60 minified-style lines of 3,000+ chars: ~190,000 chars of matching lines.
    for (let i = 0; i < 30; i++) {
      const long = `var a=${'x=1,'.repeat(400)}b="needleXYZ",c=${'y=2,'.repeat(350)};`;
      await put(`min/pkg-${i}/index.min.js`, `${long}\nplain needleXYZ line\n`, T0 + i);
    }
    const registry = createRegistry().register(GrepTool);
    for (const backend of RG ? (['rg', 'js'] as const) : (['js'] as const)) {
      const res = await registry.execute('grep', { pattern: 'needleXYZ', path: 'min' }, makeCtx(), {
        workspaceRoot: dir,
        grepBackend: backend,
      });
      expect(res.success).toBe(true);
      const meta = res.result.metadata as Record<string, unknown>;
      expect(meta).toMatchObject({ matches: 60, files: 30 });
      // ~190,000 characters of matches exceed the output cap: the output is cut and the whole saved.
      expect({ backend, outputPath: meta.outputPath }).toEqual({ backend, outputPath: expect.any(String) });
      const full = await readFile(meta.outputPath as string, 'utf8');
      expect(res.result.output).toContain(`The full output is saved at ${meta.outputPath as string}`);
      for (let i = 0; i < 30; i++) expect(full).toContain(`min/pkg-${i}/index.min.js:\n  1: var a=`);
      expect(full.match(/^ {2}2: plain needleXYZ line$/gm)).toHaveLength(30);
    }
  });
});
