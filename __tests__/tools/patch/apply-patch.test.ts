/** apply_patch through the LangChain adapter: all or nothing, stale reads, links, policy per file, progress, undo. */
import { describe, it, expect, beforeEach, afterEach } from '@jest/globals';
import { promises as fs, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { StructuredToolInterface } from '@langchain/core/tools';
import { createAgent } from 'langchain';
import { AIMessage, HumanMessage, ToolMessage } from '@langchain/core/messages';
import { fakeModel } from '@langchain/core/testing';
import { createPolicy, createRegistry, registerBuiltinTools } from '../../../src/index.js';
import { ApplyPatchTool } from '../../../src/tools/patch/apply-patch.js';
import { PATCH_WRITE_CONCURRENCY } from '../../../src/tools/patch/commit.js';
import { ReadTool } from '../../../src/tools/files/read.js';
import { callTool } from '../../support/tool-call.js';
import { makeCtx, tempDir } from '../../support/helpers.js';

let dir: string;
let cleanup: () => Promise<void>;
let tools: StructuredToolInterface[];

beforeEach(async () => {
  ({ dir, cleanup } = await tempDir('apply-patch-'));
  tools = await registerBuiltinTools(createRegistry(), { edits: 'both' }).tools({ initCtx: { workspaceRoot: dir } });
});
afterEach(() => cleanup());

const file = (name: string) => path.join(dir, name);
const text = (name: string) => fs.readFile(file(name), 'utf8');
const exists = (name: string) =>
  fs.lstat(file(name)).then(
    () => true,
    () => false,
  );
const patch = (...body: string[]) => ['*** Begin Patch', ...body, '*** End Patch'].join('\n');
const apply = (input: string, id?: string) => callTool(tools, 'apply_patch', { input }, id);
const read = (name: string) => callTool(tools, 'read', { filePath: name });

/** Three files read in this session: a.ts, b.ts, c.ts, each with three lines. */
async function threeFiles(): Promise<void> {
  for (const n of ['a', 'b', 'c']) {
    await fs.writeFile(file(`${n}.ts`), `const ${n}1 = 1;\nconst ${n}2 = 2;\nconst ${n}3 = 3;\n`);
    await read(`${n}.ts`);
  }
}

describe('apply_patch', () => {
  it('changes several files in one call and answers one line per file with the diff in metadata', async () => {
    await threeFiles();
    const res = await apply(
      patch(
        '*** Update File: a.ts',
        '@@',
        ' const a1 = 1;',
        '-const a2 = 2;',
        '+const a2 = 20;',
        '*** Update File: b.ts',
        '*** Move to: lib/b.ts',
        '@@',
        '-const b3 = 3;',
        '+const b3 = 30;',
        '*** Delete File: c.ts',
        '*** Add File: d.ts',
        '+export const d = 4;',
      ),
    );
    expect(res.content).toBe(
      'Applied the patch to 4 files (+3 -5 lines):\nM a.ts (+1 -1)\nR b.ts -> lib/b.ts (+1 -1)\nD c.ts (+0 -3)\nA d.ts (+1 -0)',
    );
    expect(await text('a.ts')).toBe('const a1 = 1;\nconst a2 = 20;\nconst a3 = 3;\n');
    expect(await text('lib/b.ts')).toBe('const b1 = 1;\nconst b2 = 2;\nconst b3 = 30;\n');
    expect([await exists('b.ts'), await exists('c.ts')]).toEqual([false, false]);
    expect(await text('d.ts')).toBe('export const d = 4;\n');
    const meta = res.result.metadata as { diff: string; files: unknown[] };
    expect(meta.diff).toContain('+const a2 = 20;');
    expect(meta.diff).toContain('-const c1 = 1;');
    expect(meta.files).toHaveLength(4);
  });

  it('changes nothing when one hunk of a later file does not fit, and names the file, the hunk and the nearest lines', async () => {
    await threeFiles();
    const before = await Promise.all(['a.ts', 'b.ts', 'c.ts'].map(text));
    const res = await apply(
      patch(
        '*** Add File: new.ts',
        '+x',
        '*** Update File: a.ts',
        '@@',
        '-const a2 = 2;',
        '+const a2 = 20;',
        '*** Delete File: c.ts',
        '*** Update File: b.ts',
        '@@',
        ' const b1 = 1;',
        '-const b2 = 22;',
        '+const b2 = 23;',
      ),
    );
    expect(res.status).toBe('error');
    expect(res.content).toContain('The patch was not applied, so nothing was changed:');
    expect(res.content).toContain('b.ts, hunk 1 (patch line 10: "@@", " const b1 = 1;", "-const b2 = 22;")');
    expect(res.content).toContain('The nearest lines are 1-2:\n1: const b1 = 1;\n2: const b2 = 2;');
    expect(await Promise.all(['a.ts', 'b.ts', 'c.ts'].map(text))).toEqual(before);
    expect(await exists('new.ts')).toBe(false);
  });

  it('lists every hunk that does not fit, in every file, in one answer', async () => {
    await threeFiles();
    const res = await apply(
      patch(
        '*** Update File: a.ts',
        '@@',
        '-nope a',
        '+x',
        '@@',
        '-nope b',
        '+y',
        '*** Update File: c.ts',
        '@@',
        '-nope c',
        '+z',
      ),
    );
    expect(res.content).toMatch(/\(3 problems\)/);
    expect(res.content).toMatch(/a\.ts, hunk 1 .*\n- a\.ts, hunk 2 .*/s);
    expect(res.content).toContain('- c.ts, hunk 1');
  });

  it('says which line broke which rule when the patch is malformed', async () => {
    await threeFiles();
    const res = await apply(patch('*** Update File: a.ts', '@@', ' const a1 = 1;', 'const a2 = 2;', '+x'));
    expect(res.status).toBe('error');
    expect(res.content).toBe(
      "The patch is not valid, so nothing was changed: line 5: expected a line starting with ' ' (context), '-' (removed), '+' (added) or '@@' (a new hunk), found \"const a2 = 2;\".",
    );
  });

  it('refuses to update a file that was not read, or that changed since it was read', async () => {
    await fs.writeFile(file('u.txt'), 'one\n');
    const unread = await apply(patch('*** Update File: u.txt', '@@', '-one', '+two'));
    expect(unread.content).toContain('File u.txt has not been read in this session. Read it first');
    await read('u.txt');
    await fs.writeFile(file('u.txt'), 'one\nmore\n');
    const stale = await apply(patch('*** Update File: u.txt', '@@', '-one', '+two'));
    expect(stale.content).toContain('File u.txt has changed on disk since it was read');
    expect(await text('u.txt')).toBe('one\nmore\n');
  });

  it('replaces an existing file through Add File or Move to only when it was read', async () => {
    await fs.writeFile(file('x.txt'), 'old x\n');
    await fs.writeFile(file('src.txt'), 'source\n');
    await read('src.txt');
    const add = await apply(patch('*** Add File: x.txt', '+new x'));
    expect(add.content).toContain('x.txt already exists, and Add File would replace it without it having been read');
    const move = await apply(patch('*** Update File: src.txt', '*** Move to: x.txt', '@@', '-source', '+moved'));
    expect(move.content).toContain('x.txt already exists, and moving src.txt there would replace it');
    await read('x.txt');
    expect(
      (await apply(patch('*** Update File: src.txt', '*** Move to: x.txt', '@@', '-source', '+moved'))).status,
    ).toBe('success');
    expect(await text('x.txt')).toBe('moved\n');
  });

  it('keeps paths in the workspace: an absolute path outside and a link leading out are refused, nothing written', async () => {
    const outside = await tempDir('apply-patch-outside-');
    try {
      await fs.writeFile(path.join(outside.dir, 'secret.txt'), 'secret\n');
      await fs.symlink(outside.dir, file('out'));
      await fs.writeFile(file('in.txt'), 'in\n');
      await read('in.txt');
      for (const target of [path.join(outside.dir, 'secret.txt'), 'out/secret.txt', '../escape.txt']) {
        const res = await apply(
          patch('*** Update File: in.txt', '@@', '-in', '+changed', `*** Add File: ${target}`, '+x'),
        );
        expect([target, res.status, res.content]).toEqual([
          target,
          'error',
          expect.stringContaining('is outside the workspace'),
        ]);
      }
      expect(await text('in.txt')).toBe('in\n');
      expect(await fs.readdir(outside.dir)).toEqual(['secret.txt']);
    } finally {
      await outside.cleanup();
    }
  });

  it('keeps CRLF line ends, a BOM, bytes that are not UTF-8 and a missing final newline', async () => {
    const raw = Buffer.concat([
      Buffer.from('\uFEFFone\r\ntwo\r\n'),
      Buffer.from([0xff, 0xfe]),
      Buffer.from('\r\nlast'),
    ]);
    await fs.writeFile(file('raw.txt'), raw);
    await read('raw.txt');
    const res = await apply(patch('*** Update File: raw.txt', '@@', ' one', '-two', '+2'));
    expect(res.status).toBe('success');
    expect(await fs.readFile(file('raw.txt'))).toEqual(
      Buffer.concat([Buffer.from('\uFEFFone\r\n2\r\n'), Buffer.from([0xff, 0xfe]), Buffer.from('\r\nlast')]),
    );
  });

  it('reports progress per file through ctx.metadata', async () => {
    await threeFiles();
    const seen: string[] = [];
    const registry = registerBuiltinTools(createRegistry(), { edits: 'patch' });
    await registry.execute('read', { filePath: 'a.ts' }, { sessionID: 's' }, { workspaceRoot: dir });
    const res = await registry.execute(
      'apply_patch',
      { input: patch('*** Update File: a.ts', '@@', '-const a1 = 1;', '+const a1 = 10;', '*** Add File: z.ts', '+z') },
      { sessionID: 's' },
      { workspaceRoot: dir },
      { onToolResult: (u) => void (u.status === 'running' && seen.push(u.result.title ?? '')) },
    );
    expect(res.success).toBe(true);
    expect(seen).toEqual(['apply_patch: update a.ts (1/2)', 'apply_patch: add z.ts (2/2)']);
  });

  describe('puts back what it already wrote when writing fails part-way', () => {
    // More files than are written at once: the last starts only once a worker has written one, so
    // by the time it reports its progress at least one file is changed on disk.
    const N = PATCH_WRITE_CONCURRENCY + 1;
    const names = Array.from({ length: N }, (_, i) => `f${i}.txt`);
    const original = (name: string) => `${name} line\n`;
    const last = names[N - 1];
    const input = patch(
      '*** Add File: added/new.txt',
      '+new',
      ...names.flatMap((n, i) =>
        i % 3 === 1 ? [`*** Delete File: ${n}`] : [`*** Update File: ${n}`, '@@', `-${n} line`, `+${n} changed`],
      ),
    );

    /** Runs the patch with `onLast` called as the last file reports its progress; resolves to the error. */
    async function failing(onLast: (ctx: ReturnType<typeof makeCtx>) => void): Promise<Error> {
      for (const n of names) await fs.writeFile(file(n), original(n));
      // Initialised without a registry: the tool and read share the standalone tenant's read tracker.
      const init = { workspaceRoot: dir };
      const tool = await ApplyPatchTool.init(init);
      const reader = await ReadTool.init(init);
      for (const n of names) await reader.execute({ filePath: n }, makeCtx({ sessionID: 'part-way' }));
      const ctx: ReturnType<typeof makeCtx> = makeCtx({
        sessionID: 'part-way',
        metadata: (u) => {
          if ((u.metadata as { index?: number } | undefined)?.index === N + 1) onLast(ctx);
        },
      });
      return tool.execute({ input }, ctx).then(
        () => new Error('the patch was applied'),
        (err: Error) => err,
      );
    }

    async function unchanged(except?: string): Promise<void> {
      for (const n of names) if (n !== except) expect([n, await text(n)]).toEqual([n, original(n)]);
      expect(await exists('added')).toBe(false);
    }

    it('when the call is aborted', async () => {
      const err = await failing((ctx) => ctx.abortNow());
      expect(err.message).toMatch(
        /^apply_patch failed at \S+ \(the call was aborted\); the [1-9]\d* changes? already written were put back, so nothing was changed\.$/,
      );
      await unchanged();
    });

    it('when a file is changed underneath before its turn, which is kept as the other writer left it', async () => {
      const err = await failing(() => writeFileSync(file(last), 'someone else\n'));
      expect(err.message).toMatch(
        new RegExp(
          `^apply_patch failed at ${last} \\(${last} was changed on disk by someone else while the patch was being applied\\.\\); the [1-9]\\d* changes? already written were put back, so nothing was changed\\.$`,
        ),
      );
      await unchanged(last);
      expect(await text(last)).toBe('someone else\n');
    });
  });

  it('is taken back whole by undo_turn in a createAgent loop', async () => {
    for (const n of ['a', 'b', 'c']) await fs.writeFile(file(`${n}.ts`), `const ${n}1 = 1;\n`);
    const input = patch(
      '*** Update File: a.ts',
      '@@',
      '-const a1 = 1;',
      '+const a1 = 10;',
      '*** Update File: b.ts',
      '*** Move to: moved/b.ts',
      '@@',
      '-const b1 = 1;',
      '+const b1 = 10;',
      '*** Delete File: c.ts',
      '*** Add File: d.ts',
      '+d',
    );
    const model = fakeModel()
      .respondWithTools(['a.ts', 'b.ts', 'c.ts'].map((f, i) => ({ name: 'read', args: { filePath: f }, id: `r${i}` })))
      .respondWithTools([{ name: 'apply_patch', args: { input }, id: 'p1' }])
      .respondWithTools([{ name: 'undo_turn', args: {}, id: 'u1' }])
      .respond(new AIMessage('done'));
    const out = await createAgent({ model, tools }).invoke({ messages: [new HumanMessage('go')] });
    const reply = (id: string) =>
      String(out.messages.find((m): m is ToolMessage => ToolMessage.isInstance(m) && m.tool_call_id === id)!.content);
    expect(reply('p1')).toMatch(/^Applied the patch to 4 files/);
    expect(reply('u1')).toBe(
      'Undid 1 change of the previous turn, newest first:\n- apply_patch of a.ts, b.ts, c.ts and 1 more (call p1): ' +
        'restored a.ts (14 bytes); restored b.ts (14 bytes); removed moved/b.ts (the change had created it); restored c.ts (14 bytes); removed d.ts (the change had created it).',
    );
    for (const n of ['a', 'b', 'c']) expect(await text(`${n}.ts`)).toBe(`const ${n}1 = 1;\n`);
    expect([await exists('moved/b.ts'), await exists('d.ts')]).toEqual([false, false]);
  });
});

describe('apply_patch under a policy', () => {
  it('judges each file: a deny on one refuses the whole patch and nothing is written', async () => {
    await fs.writeFile(file('ok.txt'), 'ok\n');
    await fs.writeFile(file('.env'), 'KEY=1\n');
    const policy = createPolicy({
      rules: [{ tool: 'delete', pattern: '.env', action: 'deny', reason: 'keep secrets' }],
    });
    const registry = registerBuiltinTools(createRegistry({ policy }), { edits: 'patch' });
    const init = { workspaceRoot: dir };
    await registry.execute('read', { filePath: 'ok.txt' }, { sessionID: 'p' }, init);
    const res = await registry.execute(
      'apply_patch',
      { input: patch('*** Update File: ok.txt', '@@', '-ok', '+changed', '*** Delete File: .env') },
      { sessionID: 'p' },
      init,
    );
    expect(res.success).toBe(false);
    expect(res.error).toContain('keep secrets');
    expect(res.error).toContain('apply_patch delete of .env');
    expect([await text('ok.txt'), await text('.env')]).toEqual(['ok\n', 'KEY=1\n']);
    const allowed = await registry.execute(
      'apply_patch',
      { input: patch('*** Update File: ok.txt', '@@', '-ok', '+changed') },
      { sessionID: 'p' },
      init,
    );
    expect(allowed.success).toBe(true);
  });
});
