/**
 * `toDeepAgentsBackend` against what deepagents expects of a sandbox backend: the behaviours its
 * standard suite (deepagentsjs `libs/standard-tests`) checks on every provider — lifecycle, execute,
 * upload/download, write, read, edit, ls, grep, glob, initial files, workflows — written here as our
 * own tests, through the protocol only. Three ways of running it:
 * - virtual mode (the default) with paths relative to the workspace root, as deepagents runs its
 *   LocalShellBackend;
 * - `virtualMode: false` with absolute host paths, without the OS sandbox, and with it required
 *   (real bubblewrap): a file written through the backend is the file `execute` sees at that path.
 * Our one chosen difference: glob of an absolute directory answers absolute paths (deepagents' glob
 * tool promises the model absolute paths); of a relative one, paths relative to the directory searched.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { isSandboxBackend } from 'deepagents';
import { toDeepAgentsBackend, type WorkspaceBackend } from '../../src/index.js';
import { tempDir } from '../support/helpers.js';

const bwrapWorks = spawnSync('bwrap', ['--ro-bind', '/', '/', '--unshare-all', '--', '/bin/true']).status === 0;
if (!bwrapWorks && process.env.CI) throw new Error('CI must run the sandboxed conformance cases: install bubblewrap.');
if (!bwrapWorks) console.warn('deepagents-standard.test.ts: the OS-sandbox mode is skipped: bwrap cannot run here.');

interface Mode {
  name: string;
  virtualMode: boolean;
  /** Whether the tests name files by absolute host path (else relative to the root). */
  absolute: boolean;
  sandbox?: 'required';
}

const MODES: Mode[] = [
  { name: 'virtual mode, relative paths', virtualMode: true, absolute: false },
  { name: 'virtualMode: false, absolute paths, no OS sandbox', virtualMode: false, absolute: true },
  ...(bwrapWorks
    ? [
        {
          name: 'virtualMode: false, absolute paths, OS sandbox required',
          virtualMode: false,
          absolute: true,
          sandbox: 'required' as const,
        },
      ]
    : []),
];

const bytes = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array | null) => new TextDecoder().decode(b ?? new Uint8Array());
const numbered = (n: number, from = 1) => Array.from({ length: n }, (_, i) => `Row_${i + from}_content`).join('\n');

for (const mode of MODES) {
  describe(`toDeepAgentsBackend as deepagents expects a sandbox (${mode.name})`, () => {
    let ws: Awaited<ReturnType<typeof tempDir>>;
    let b: WorkspaceBackend;
    /** How the caller names `name`: relative to the root, or by absolute host path. */
    const at = (name: string) => (mode.absolute ? path.join(ws.dir, name) : name);
    const make = (extra: Parameters<typeof toDeepAgentsBackend>[0] = {}) =>
      toDeepAgentsBackend({
        workspaceRoot: ws.dir,
        virtualMode: mode.virtualMode,
        ...(mode.sandbox ? { sandbox: { mode: mode.sandbox } } : {}),
        ...extra,
      });
    /** What glob answers for `rel` found under `dir`: absolute for an absolute dir, else relative to it. */
    const globbed = (dir: string, rel: string) => (mode.absolute ? `${dir}/${rel}` : rel);
    const cat = async (p: string) => (await b.execute(`cat '${p}'`)).output;

    beforeAll(async () => {
      ws = await tempDir('deepagents-standard-');
      b = await make();
    });
    afterAll(async () => {
      await b.close();
      await ws.cleanup();
    });

    describe('lifecycle', () => {
      it('has a non-empty id, passes isSandboxBackend, runs until close()', async () => {
        expect(typeof b.id).toBe('string');
        expect(b.id.length).toBeGreaterThan(0);
        expect(isSandboxBackend(b)).toBe(true);
        expect(b.isRunning).toBe(true);
        const other = await make();
        expect(other.isRunning).toBe(true);
        await other.close();
        expect(other.isRunning).toBe(false);
      });
    });

    describe('execute', () => {
      it('answers output, exit code and truncated for echo, exit, stderr, variables and a missing command', async () => {
        expect(await b.execute('echo "hello"')).toEqual({ output: 'hello\n', exitCode: 0, truncated: false });
        expect((await b.execute('exit 42')).exitCode).toBe(42);
        const lines = await b.execute('echo one && echo two && echo three');
        expect(lines.output).toMatch(/one\ntwo\nthree/);
        expect((await b.execute('echo "to stderr" >&2')).output).toContain('to stderr');
        expect((await b.execute('export MY_VAR="v42" && echo $MY_VAR')).output.trim()).toBe('v42');
        expect((await b.execute('no_such_command_4711')).exitCode).not.toBe(0);
      });
    });

    describe('uploadFiles / downloadFiles', () => {
      it('an upload answers the path as given, and execute reads the file there', async () => {
        const p = at('up/one.txt');
        expect(await b.uploadFiles([[p, bytes('uploaded!')]])).toEqual([{ path: p, error: null }]);
        expect((await cat(p)).trim()).toBe('uploaded!');
      });

      it('several uploads at once, and a byte-exact download', async () => {
        const raw = new Uint8Array([0, 255, 1, 10, 200]);
        const names = ['up/m1.txt', 'up/m2.txt', 'up/raw.bin'].map(at);
        const up = await b.uploadFiles([
          [names[0], bytes('first')],
          [names[1], bytes('second')],
          [names[2], raw],
        ]);
        expect(up.map((r) => r.error)).toEqual([null, null, null]);
        expect(await cat(names[0])).toBe('first');
        const down = await b.downloadFiles(names);
        expect(down.map((d) => d.path)).toEqual(names);
        expect(text(down[1].content)).toBe('second');
        expect(Array.from(down[2].content!)).toEqual(Array.from(raw));
      });

      it('a missing file downloads as file_not_found with no content', async () => {
        const p = at('up/never-there.txt');
        expect(await b.downloadFiles([p])).toEqual([{ path: p, content: null, error: 'file_not_found' }]);
      });
    });

    describe('write', () => {
      it('creates a file (and its parents) that execute sees at the same path, answering that path', async () => {
        const p = at('wr/new.txt');
        expect(await b.write(p, 'Hello\nLine 2')).toEqual({ path: p, filesUpdate: null });
        expect(await cat(p)).toBe('Hello\nLine 2');
        const deep = at('wr/a/b/c/deep.txt');
        expect((await b.write(deep, 'deep')).error).toBeUndefined();
        expect(await cat(deep)).toBe('deep');
      });

      it('overwrites a file it wrote, keeps special characters, unicode, spaces in names and empty content exactly', async () => {
        const p = at('wr/over.txt');
        await b.write(p, 'first');
        expect((await b.write(p, 'second')).error).toBeUndefined();
        expect(await cat(p)).toBe('second');
        const special = 'cost: $HOME, `date`, $(id)\nTab\there\nBackslash: \\';
        await b.write(at('wr/special.txt'), special);
        expect(await cat(at('wr/special.txt'))).toBe(special);
        const unicode = 'Grüße 👋 世界 مرحبا Привет\nend 🎉';
        await b.write(at('wr/unicode.txt'), unicode);
        expect(await cat(at('wr/unicode.txt'))).toBe(unicode);
        const spaced = at('wr/dir with spaces/file name.txt');
        expect((await b.write(spaced, 'spaced')).error).toBeUndefined();
        expect(await cat(spaced)).toBe('spaced');
        expect((await b.write(at('wr/empty.txt'), '')).error).toBeUndefined();
        expect((await b.execute(`test -f '${at('wr/empty.txt')}' && echo present`)).output).toBe('present\n');
      });

      it('normalises doubled slashes, and writes 1000 lines or newlines only as given', async () => {
        expect((await b.write(`${at('wr/slashes')}//sub///f.txt`, 'x')).error).toBeUndefined();
        expect(await cat(at('wr/slashes/sub/f.txt'))).toBe('x');
        await b.write(at('wr/long.txt'), Array.from({ length: 1000 }, (_, i) => `line ${i}`).join('\n'));
        expect((await b.execute(`wc -l < '${at('wr/long.txt')}'`)).output.trim()).toBe('999');
        await b.write(at('wr/nl.txt'), '\n\n\n\n\n');
        expect((await b.execute(`wc -l < '${at('wr/nl.txt')}'`)).output.trim()).toBe('5');
      });
    });

    describe('read', () => {
      beforeAll(async () => {
        await b.write(at('rd/ten.txt'), numbered(10));
        await b.write(at('rd/thousand.txt'), numbered(1000, 0));
      });

      it('reads a file, says "not found" for a missing one, and answers an empty file without error', async () => {
        const r = await b.read(at('rd/ten.txt'));
        expect(r.error).toBeUndefined();
        expect(r.content).toContain('Row_1_content');
        expect(r.content).toContain('Row_10_content');
        expect((await b.read(at('rd/missing.txt'))).error?.toLowerCase()).toContain('not found');
        await b.write(at('rd/empty.txt'), '');
        expect((await b.read(at('rd/empty.txt'))).error).toBeUndefined();
      });

      it('offset skips lines (0-based), limit bounds them, both together give a window', async () => {
        const off = (await b.read(at('rd/ten.txt'), 5)).content as string;
        expect(off.split('\n')[0]).toBe('Row_6_content');
        expect(off).not.toContain('Row_5_content');
        expect(((await b.read(at('rd/ten.txt'), 0, 3)).content as string).split('\n')).toEqual([
          'Row_1_content',
          'Row_2_content',
          'Row_3_content',
        ]);
        const win = (await b.read(at('rd/ten.txt'), 4, 2)).content;
        expect(win).toBe('Row_5_content\nRow_6_content');
      });

      it('limit 0 and an offset at or past the end give no line of the file', async () => {
        const none = [
          await b.read(at('rd/ten.txt'), 0, 0),
          await b.read(at('rd/ten.txt'), 10, 5),
          await b.read(at('rd/ten.txt'), 100, 5),
        ];
        for (const r of none) expect(String(r.content ?? '')).not.toContain('Row_');
      });

      it('reads a long file in chunks, unicode, and very long lines', async () => {
        const mid = (await b.read(at('rd/thousand.txt'), 500, 100)).content as string;
        expect(mid.split('\n')).toHaveLength(100);
        expect(mid.startsWith('Row_500_content')).toBe(true);
        expect(mid.endsWith('Row_599_content')).toBe(true);
        expect((await b.read(at('rd/thousand.txt'), 900, 100)).content).toContain('Row_999_content');
        await b.write(at('rd/uni.txt'), 'Hallo 👋 世界\nПривет мир');
        expect((await b.read(at('rd/uni.txt'))).content).toBe('Hallo 👋 世界\nПривет мир');
        await b.write(at('rd/wide.txt'), `short\n${'x'.repeat(3000)}\nafter`);
        const wide = await b.read(at('rd/wide.txt'));
        expect(wide.error).toBeUndefined();
        expect(wide.content).toContain('short');
      });
    });

    describe('edit', () => {
      const fresh = async (name: string, content: string) => {
        await b.write(at(`ed/${name}`), content);
        return at(`ed/${name}`);
      };
      const content = async (p: string) => (await b.read(p)).content;

      it('replaces one occurrence; with several, refuses saying "multiple" and leaves the file; replaceAll counts them', async () => {
        const one = await fresh('one.txt', 'Hello world\nGoodbye world');
        expect(await b.edit(one, 'Goodbye', 'Farewell')).toEqual({ path: one, filesUpdate: null, occurrences: 1 });
        expect(await content(one)).toBe('Hello world\nFarewell world');
        const many = await fresh('many.txt', 'apple\nbanana\napple\napple');
        const refused = await b.edit(many, 'apple', 'pear');
        expect(refused.error?.toLowerCase()).toContain('multiple');
        expect(await cat(many)).toBe('apple\nbanana\napple\napple');
        expect((await b.edit(many, 'apple', 'pear', true)).occurrences).toBe(3);
        expect(await cat(many)).toBe('pear\nbanana\npear\npear');
      });

      it('says "not found" for text that is not there and for a missing file', async () => {
        const p = await fresh('nf.txt', 'Hello world');
        expect((await b.edit(p, 'absent', 'x')).error?.toLowerCase()).toContain('not found');
        expect((await b.edit(at('ed/no-such-file.txt'), 'a', 'b')).error?.toLowerCase()).toContain('not found');
      });

      it('takes regex characters, $ signs, multi-line text, deletion, identical text, whitespace and long strings literally', async () => {
        const p = await fresh('lit.txt', 'Price: $100.00\nPattern: [a-z]*\nkeep\ndrop me\nLine1    Line2\n');
        for (const [o, n] of [
          ['$100.00', '$200.00'],
          ['[a-z]*', '[0-9]+'],
          ['keep\ndrop me\n', 'kept\n'],
          ['    ', ' '],
          ['kept', 'kept'],
        ])
          expect((await b.edit(p, o, n)).error).toBeUndefined();
        expect(await cat(p)).toBe('Price: $200.00\nPattern: [0-9]+\nkept\nLine1 Line2\n');
        const long = await fresh('long.txt', `Start\n${'x'.repeat(1000)}\nEnd`);
        expect((await b.edit(long, 'x'.repeat(1000), 'y'.repeat(1000))).occurrences).toBe(1);
        expect(await cat(long)).toBe(`Start\n${'y'.repeat(1000)}\nEnd`);
        const uni = await fresh('uni.txt', 'Hi 👋 there');
        expect((await b.edit(uni, '👋', '🌍')).occurrences).toBe(1);
        expect(await cat(uni)).toBe('Hi 🌍 there');
      });
    });

    describe('ls', () => {
      it("lists files and subdirectories in the caller's form, directories flagged (and ending in /)", async () => {
        const dir = at('ls/basic');
        await b.write(`${dir}/file1.txt`, '1');
        await b.write(`${dir}/.hidden`, 'h');
        await b.write(`${dir}/file(1) x.txt`, 's');
        await b.execute(`mkdir -p '${dir}/sub dir'`);
        const r = await b.ls(dir);
        expect(r.error).toBeUndefined();
        expect(r.files!.map((f) => [f.path, f.is_dir])).toEqual([
          [`${dir}/.hidden`, false],
          [`${dir}/file(1) x.txt`, false],
          [`${dir}/file1.txt`, false],
          [`${dir}/sub dir/`, true],
        ]);
        expect((await b.ls(`${dir}/`)).files).toHaveLength(4);
      });

      it('answers an empty list for an empty directory and for a missing one', async () => {
        await b.execute(`mkdir -p '${at('ls/empty')}'`);
        expect(await b.ls(at('ls/empty'))).toEqual({ files: [] });
        expect(await b.ls(at('ls/not-there-12345'))).toEqual({ files: [] });
      });

      it('lists 50 files made by execute, unicode names included', async () => {
        const dir = at('ls/large');
        await b.execute(`mkdir -p '${dir}' && cd '${dir}' && for i in $(seq 0 49); do echo c > f_$i.txt; done`);
        expect((await b.ls(dir)).files).toHaveLength(50);
        await b.write(`${at('ls/uni')}/测试.txt`, 'x');
        await b.write(`${at('ls/uni')}/файл.txt`, 'x');
        expect((await b.ls(at('ls/uni'))).files!.map((f) => f.path).sort()).toEqual(
          [`${at('ls/uni')}/файл.txt`, `${at('ls/uni')}/测试.txt`].sort(),
        );
      });
    });

    describe('grep (literal)', () => {
      const dir = () => at('gr');
      beforeAll(async () => {
        await b.write(`${dir()}/a.txt`, 'Hello world\nhello\nHELLO\nPrice: $100\nPattern: [a-z]*');
        await b.write(`${dir()}/b.py`, 'Hello there\napple\nx\napple\ny\napple');
        await b.write(`${dir()}/sub/deeper/c.txt`, 'Hello nested 世界');
        await b.write(`${dir()}/lines.txt`, Array.from({ length: 100 }, (_, i) => `Line ${i + 1}`).join('\n'));
        await b.execute(`mkdir -p '${dir()}/empty'`);
      });

      it("finds a literal, case-sensitive, in nested directories, with paths in the caller's form and 1-based lines", async () => {
        const r = await b.grep('Hello', dir());
        expect(r.error).toBeUndefined();
        expect(r.matches).toEqual([
          { path: `${dir()}/a.txt`, line: 1, text: 'Hello world' },
          { path: `${dir()}/b.py`, line: 1, text: 'Hello there' },
          { path: `${dir()}/sub/deeper/c.txt`, line: 1, text: 'Hello nested 世界' },
        ]);
        expect((await b.grep('apple', dir())).matches!.map((m) => m.line)).toEqual([2, 4, 6]);
        expect((await b.grep('Line 50', dir())).matches).toEqual([
          { path: `${dir()}/lines.txt`, line: 50, text: 'Line 50' },
        ]);
      });

      it('takes regex characters literally, filters by glob, and answers [] when nothing matches', async () => {
        expect((await b.grep('$100', dir())).matches!.map((m) => m.text)).toEqual(['Price: $100']);
        expect((await b.grep('[a-z]*', dir())).matches!.map((m) => m.text)).toEqual(['Pattern: [a-z]*']);
        expect((await b.grep('世界', dir())).matches).toHaveLength(1);
        expect((await b.grep('Hello', dir(), '*.py')).matches!.map((m) => m.path)).toEqual([`${dir()}/b.py`]);
        expect(await b.grep('nothing_like_this', dir())).toEqual({ matches: [] });
        expect(await b.grep('anything', `${dir()}/empty`)).toEqual({ matches: [] });
      });
    });

    describe('glob', () => {
      const dir = () => at('gl');
      beforeAll(async () => {
        for (const f of [
          'file1.txt',
          'file2.txt',
          'file10.txt',
          'fileA.txt',
          'file3.py',
          '.hidden1',
          'a/b/c/deep.txt',
          'a/other.md',
        ])
          await b.write(`${dir()}/${f}`, 'x');
        await b.execute(`mkdir -p '${dir()}/emptydir'`);
      });
      const paths = async (pattern: string) => {
        const r = await b.glob(pattern, dir());
        expect(r.error).toBeUndefined();
        return r.files!.map((f) => f.path);
      };

      it('matches wildcards, character classes and ?, relative to the directory searched (absolute for an absolute one)', async () => {
        const g = (rel: string) => globbed(dir(), rel);
        expect(await paths('*.txt')).toEqual(['file1.txt', 'file10.txt', 'file2.txt', 'fileA.txt'].map(g));
        expect(await paths('file[1-2].txt')).toEqual(['file1.txt', 'file2.txt'].map(g));
        expect(await paths('file?.txt')).toEqual(['file1.txt', 'file2.txt', 'fileA.txt'].map(g));
        expect(await paths('.*')).toEqual(['.hidden1'].map(g));
        expect(await paths('**/deep.txt')).toEqual(['a/b/c/deep.txt'].map(g));
        expect(await paths('*.rs')).toEqual([]);
      });

      it('includes matching directories, flagged is_dir', async () => {
        const r = await b.glob('*', dir());
        const dirs = r.files!.filter((f) => f.is_dir).map((f) => f.path);
        expect(dirs).toEqual(['a', 'emptydir'].map((d) => globbed(dir(), d)));
        expect(r.files!.filter((f) => !f.is_dir)).toHaveLength(6);
      });
    });

    describe('the default directory of ls, glob and grep', () => {
      it("/ (their tools' default) is the workspace root in both modes, answered in its form", async () => {
        await b.write(at('top-level.md'), 'marker_top\n');
        const rooted = mode.virtualMode ? '/top-level.md' : path.join(ws.dir, 'top-level.md');
        expect((await b.ls('/')).files!.map((f) => f.path)).toContain(rooted);
        expect((await b.glob('*.md')).files!.map((f) => f.path)).toEqual([rooted]);
        expect((await b.grep('marker_top')).matches).toEqual([{ path: rooted, line: 1, text: 'marker_top' }]);
        if (!mode.virtualMode) expect((await b.read('/top-level.md')).error).toMatch(/outside the workspace/);
      });
    });

    describe('initial files', () => {
      it('creates them before the first call: execute, read, download and ls find them, and a script runs', async () => {
        const files = {
          [at('init/hello.txt')]: 'Hello from an initial file!',
          [at('init/src/components/Button/index.tsx')]: 'export const Button = () => null;',
          [at('init/run.sh')]: '#!/bin/sh\necho "ran from initialFiles"',
        };
        const fresh = await make({ initialFiles: files });
        try {
          expect((await fresh.execute(`cat '${at('init/hello.txt')}'`)).output).toBe('Hello from an initial file!');
          expect((await fresh.read(at('init/src/components/Button/index.tsx'))).content).toContain('Button');
          expect(text((await fresh.downloadFiles([at('init/hello.txt')]))[0].content)).toBe(
            'Hello from an initial file!',
          );
          expect((await fresh.ls(at('init'))).files!.map((f) => f.path)).toContain(at('init/hello.txt'));
          expect(await fresh.execute(`sh '${at('init/run.sh')}'`)).toEqual({
            output: 'ran from initialFiles\n',
            exitCode: 0,
            truncated: false,
          });
        } finally {
          await fresh.close();
        }
        const none = await make({ initialFiles: {} });
        expect((await none.execute('echo works')).output).toBe('works\n');
        await none.close();
      });
    });

    describe('workflows', () => {
      it('write, read, edit, read; then ls, glob and grep over a small tree', async () => {
        const p = at('wf/doc.txt');
        expect((await b.write(p, 'Original content')).error).toBeUndefined();
        expect((await b.read(p)).content).toBe('Original content');
        expect((await b.edit(p, 'Original', 'Modified')).error).toBeUndefined();
        expect((await b.read(p)).content).toBe('Modified content');
        const base = at('wf/tree');
        for (const f of ['root.txt', 's1/f1.txt', 's1/f2.py', 's2/f3.txt']) await b.write(`${base}/${f}`, `file ${f}`);
        expect((await b.ls(base)).files!.map((f) => f.path)).toEqual([
          `${base}/root.txt`,
          `${base}/s1/`,
          `${base}/s2/`,
        ]);
        expect((await b.glob('**/*.txt', base)).files!.map((f) => f.path)).toEqual(
          ['root.txt', 's1/f1.txt', 's2/f3.txt'].map((r) => globbed(base, r)),
        );
        expect((await b.grep('file', base)).matches).toHaveLength(4);
      });
    });
  });
}
