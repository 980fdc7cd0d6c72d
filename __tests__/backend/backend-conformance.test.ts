/**
 * One conformance suite: every file tool, over every backend, with the same calls and the same
 * expected results. The reference is the local workspace (no backend); the backends are deepagents'
 * real ones: StateBackend (our tools in a LangGraph graph with a MemorySaver checkpointer, run by
 * LangGraph's ToolNode), StoreBackend over InMemoryStore, CompositeBackend (`/memories/` to a store,
 * the rest to disk), FilesystemBackend (virtual mode). Each documented difference is a named
 * exception below (DIFFERENCES), applied to every backend alike.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { readFile, writeFile, access } from 'node:fs/promises';
import path from 'node:path';
import { InMemoryStore, MemorySaver } from '@langchain/langgraph';
import { CompositeBackend, FilesystemBackend, StoreBackend } from 'deepagents';
import { tempDir } from '../support/helpers.js';
import { direct, stateGraph, type Outcome } from '../support/backend-harness.js';

interface Harness {
  name: string;
  /** Runs one tool call in session `session` (default 's1'). */
  call(tool: string, args: Record<string, unknown>, session?: string): Promise<Outcome>;
  close(): Promise<void>;
}

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups) await c();
});

async function harnesses(): Promise<Harness[]> {
  const local = await tempDir('conf-local-');
  const fsDir = await tempDir('conf-fs-');
  const compDir = await tempDir('conf-comp-');
  cleanups.push(local.cleanup, fsDir.cleanup, compDir.cleanup);
  const saver = new MemorySaver();
  const state = await stateGraph(saver, 'thread-1');
  return [
    // Language-server diagnostics are a local-only addition (docs/lsp.md): the file tools' own answers are compared.
    direct('local', { workspaceRoot: local.dir, lsp: false }),
    direct('FilesystemBackend', { backend: new FilesystemBackend({ rootDir: fsDir.dir, virtualMode: true }) }),
    direct('StoreBackend', { backend: new StoreBackend({ store: new InMemoryStore(), namespace: ['conformance'] }) }),
    direct('CompositeBackend', {
      backend: new CompositeBackend(new FilesystemBackend({ rootDir: compDir.dir, virtualMode: true }), {
        '/memories/': new StoreBackend({ store: new InMemoryStore(), namespace: ['memories'] }),
      }),
    }),
    { name: 'StateBackend', call: state.call, close: async () => undefined },
  ];
}

/**
 * The documented differences, each named, each applied the same way to every backend's output before
 * it is compared with the local one (docs/backends.md lists them).
 */
const DIFFERENCES: Record<string, (output: string) => string> = {
  // grep over a backend says which engine ran: the backend's literal grep, or our regex over readRaw.
  grepSaysWhichEngineRan: (o) =>
    o.replace(/\n\n\((Searched by the backend|Searched with the regular expression)[^\n]*\)$/, ''),
  // list's first line is the listed directory: the host path locally, the backend's path there.
  listHeaderIsTheBackendPath: (o) => o.replace(/^\/[^\n]*\n/, '<root>/\n'),
  // file_info: a backend has no permission bits, and its times are its own.
  fileInfoHasNoModeOnBackends: (o) => o.replace(/, modified [^,]+/, '').replace(/, mode \d+/, ''),
};

function normalise(tool: string, raw: string): string {
  // Not a difference: the clock time of a read, which differs between any two runs.
  const output = raw.replace(/since it was read \(\d\d:\d\d:\d\d\)/, 'since it was read (<time>)');
  if (tool === 'grep') return DIFFERENCES.grepSaysWhichEngineRan(output);
  if (tool === 'list') return DIFFERENCES.listHeaderIsTheBackendPath(output);
  if (tool === 'file_info') return DIFFERENCES.fileInfoHasNoModeOnBackends(output);
  return output;
}

/** The scenario: [tool, args, session?]; every backend runs it, in order. */
const SCENARIO: Array<[string, Record<string, unknown>, string?]> = [
  ['write', { filePath: 'notes/a.txt', content: 'alpha\nbeta\ngamma\n' }],
  ['write', { filePath: 'src/main.ts', content: 'export const x = 1;\n  console.log(x);\n' }],
  ['write', { filePath: 'memories/m.md', content: 'remember\n' }],
  ['read', { filePath: 'notes/a.txt' }],
  ['read', { filePath: 'notes/a.txt', offset: -1 }],
  ['read', { filePath: 'notes/a.txt', offset: 9 }],
  ['read', { filePath: 'notes/alpha.txt' }],
  ['read', { filePath: 'notes' }],
  ['edit', { filePath: 'notes/a.txt', oldString: 'beta', newString: 'BETA' }],
  ['edit', { filePath: 'src/main.ts', oldString: 'console.log(x);', newString: 'console.info(x);' }],
  ['edit', { filePath: 'src/main.ts', oldString: 'nowhere to be found', newString: 'x' }],
  ['edit', { filePath: 'notes/new.md', oldString: '', newString: '# new\n' }],
  // Stale-write checks: s2 has not read the file; then s2 reads and changes it, and s1's view is stale.
  ['write', { filePath: 'notes/a.txt', content: 'from s2\n' }, 's2'],
  ['read', { filePath: 'notes/a.txt' }, 's2'],
  ['edit', { filePath: 'notes/a.txt', oldString: 'gamma', newString: 'GAMMA' }, 's2'],
  ['edit', { filePath: 'notes/a.txt', oldString: 'alpha', newString: 'ALPHA' }, 's1'],
  ['read', { filePath: 'notes/a.txt' }, 's1'],
  ['list', {}],
  ['glob', { pattern: '**/*.ts' }],
  ['glob', { pattern: '*.md', path: 'notes' }],
  ['grep', { pattern: 'BETA' }],
  ['grep', { pattern: 'B[A-Z]+A|console\\.\\w+' }],
  ['grep', { pattern: 'beta', caseInsensitive: true, include: '*.txt' }],
  ['grep', { pattern: 'GAMMA', path: 'notes', context: 1 }],
  ['file_info', { path: 'notes/a.txt' }],
  ['file_info', { path: 'notes/none.txt' }],
  ['move', { from: 'notes/a.txt', to: 'notes/b.txt' }],
  ['read', { filePath: 'notes/a.txt' }],
  ['move', { from: 'notes/b.txt', to: 'notes/new.md' }],
  ['delete', { path: 'notes/b.txt' }],
  ['delete', { path: 'src' }],
  ['delete', { path: 'src', recursive: true }],
  ['glob', { pattern: '**/*' }],
  ['read', { filePath: 'memories/m.md' }],
  ['grep', { pattern: 'remember', path: 'memories' }],
];

describe('conformance: every file tool over every backend, same calls, same results', () => {
  let all: Harness[];
  const transcripts = new Map<string, Outcome[]>();

  beforeAll(async () => {
    all = await harnesses();
    for (const h of all) {
      const out: Outcome[] = [];
      for (const [tool, args, session] of SCENARIO) out.push(await h.call(tool, args, session));
      transcripts.set(h.name, out);
    }
  }, 120_000);

  afterAll(async () => {
    for (const h of all ?? []) await h.close();
  });

  it('the local reference transcript is what the local tools say (sanity of the scenario)', () => {
    const local = transcripts.get('local')!;
    expect(local[0]).toEqual({ ok: true, output: 'Created notes/a.txt (17 bytes, +3 lines).' });
    expect(local[3].output).toBe('1: alpha\n2: beta\n3: gamma\n\n(End of file - 3 lines total)');
    expect(local[10].ok).toBe(false);
    expect(local[12].output).toMatch(/File notes\/a\.txt has not been read in this session/);
    expect(local[15].output).toMatch(/File notes\/a\.txt has changed on disk since it was read/);
  });

  for (const name of ['FilesystemBackend', 'StoreBackend', 'CompositeBackend', 'StateBackend']) {
    it(`${name} answers every call as the local workspace does (named differences aside)`, () => {
      const local = transcripts.get('local')!;
      const got = transcripts.get(name)!;
      SCENARIO.forEach(([tool, args], i) => {
        const label = `${i}: ${tool} ${JSON.stringify(args)}`;
        expect({ label, ok: got[i].ok, output: normalise(tool, got[i].output) }).toEqual({
          label,
          ok: local[i].ok,
          output: normalise(tool, local[i].output),
        });
      });
    });

    it(`${name}: grep says which engine ran (literal by the backend, regex by us over readRaw)`, () => {
      const got = transcripts.get(name)!;
      expect(got[20].output).toMatch(/\(Searched by the backend \w+'s own grep, which matches the pattern literally/);
      expect(got[21].output).toMatch(/\(Searched with the regular expression by agent-toolbelt over the files/);
    });
  }
});

describe('CompositeBackend routes /memories/ to its store and the rest to disk', () => {
  it('a file written under memories/ is in the store, not on disk; others are on disk', async () => {
    const { dir, cleanup } = await tempDir('conf-route-');
    cleanups.push(cleanup);
    const store = new InMemoryStore();
    const backend = new CompositeBackend(new FilesystemBackend({ rootDir: dir, virtualMode: true }), {
      '/memories/': new StoreBackend({ store, namespace: ['mem'] }),
    });
    const h = direct('composite', { backend });
    expect(await h.call('write', { filePath: 'memories/pref.md', content: 'tabs\n' })).toEqual({
      ok: true,
      output: 'Created memories/pref.md (5 bytes, +1 lines).',
    });
    expect((await h.call('write', { filePath: 'code/a.ts', content: 'let a;\n' })).ok).toBe(true);
    const item = await store.get(['mem'], '/pref.md');
    expect((item?.value as { content: unknown }).content).toBe('tabs\n');
    await expect(access(path.join(dir, 'memories/pref.md'))).rejects.toThrow();
    expect(await readFile(path.join(dir, 'code/a.ts'), 'utf8')).toBe('let a;\n');
  });
});

describe('StateBackend: our edit survives resuming the thread from the checkpoint', () => {
  it('a new graph and a new registry on the same MemorySaver thread read the edited file', async () => {
    const saver = new MemorySaver();
    const first = await stateGraph(saver, 'resume-thread');
    expect((await first.call('write', { filePath: 'plan.md', content: 'step one\nstep two\n' })).ok).toBe(true);
    expect((await first.call('read', { filePath: 'plan.md' })).ok).toBe(true);
    const edit = await first.call('edit', { filePath: 'plan.md', oldString: 'step two', newString: 'step 2' });
    expect(edit).toEqual({ ok: true, output: 'Edited plan.md: 1 replacement at line 2 (+1 -1 lines).' });

    const tuple = await saver.getTuple({ configurable: { thread_id: 'resume-thread' } });
    const files = tuple?.checkpoint.channel_values.files as Record<string, { content: string }>;
    expect(files['/plan.md'].content).toBe('step one\nstep 2\n');

    const resumed = await stateGraph(saver, 'resume-thread');
    expect((await resumed.call('read', { filePath: 'plan.md' })).output).toBe(
      '1: step one\n2: step 2\n\n(End of file - 2 lines total)',
    );
    // Another thread of the same checkpointer does not see it.
    const other = await stateGraph(saver, 'other-thread');
    expect((await other.call('read', { filePath: 'plan.md' })).output).toMatch(/^File plan\.md does not exist/);
  });
});

describe('V1 backends are lifted', () => {
  it('a backend written to the deprecated V1 protocol (lsInfo, grepRaw, globInfo, plain returns) serves the tools', async () => {
    const files = new Map<string, string>([['/a.txt', 'one\ntwo\n']]);
    const now = new Date(0).toISOString();
    const v1 = {
      lsInfo: (p: string) =>
        [...files.keys()]
          .filter((k) => k.startsWith(p.endsWith('/') ? p : `${p}/`))
          .map((k) => ({ path: k, is_dir: false, size: files.get(k)!.length })),
      read: (p: string) => files.get(p) ?? `Error: File '${p}' not found`,
      readRaw: (p: string) => ({ content: (files.get(p) ?? '').split('\n'), created_at: now, modified_at: now }),
      grepRaw: (pattern: string) =>
        [...files].flatMap(([p, t]) =>
          t.split('\n').flatMap((l, i) => (l.includes(pattern) ? [{ path: p, line: i + 1, text: l }] : [])),
        ),
      globInfo: () => [...files.keys()].map((p) => ({ path: p })),
      write: (p: string, c: string) => (files.set(p, c), { path: p }),
      edit: (p: string, o: string, n: string) => {
        const t = files.get(p);
        if (t === undefined || !t.includes(o)) return { error: 'not found' };
        files.set(p, t.replace(o, n));
        return { path: p, occurrences: 1 };
      },
    };
    const h = direct('v1', { backend: v1 });
    expect((await h.call('read', { filePath: 'a.txt' })).output).toBe(
      '1: one\n2: two\n\n(End of file - 2 lines total)',
    );
    expect((await h.call('edit', { filePath: 'a.txt', oldString: 'two', newString: 'TWO' })).ok).toBe(true);
    expect(files.get('/a.txt')).toBe('one\nTWO\n');
    expect((await h.call('grep', { pattern: 'TWO' })).output).toMatch(
      /^Found 1 match in 1 file\.\n\na\.txt:\n {2}2: TWO/,
    );
    expect((await h.call('glob', { pattern: '*.txt' })).output).toBe('a.txt');
    // No delete in this backend: delete and move are not offered, and say why.
    expect((await h.call('delete', { path: 'a.txt' })).output).toMatch(
      /delete is not available: the backend backend has no delete method/,
    );
  });
});

describe('the local workspace is untouched by a backend run', () => {
  it('files written over a backend never reach the host workspace given beside it', async () => {
    const host = await tempDir('conf-host-');
    const store = await tempDir('conf-store-');
    cleanups.push(host.cleanup, store.cleanup);
    await writeFile(path.join(host.dir, 'decoy.txt'), 'host file\n');
    const h = direct('fs', {
      workspaceRoot: host.dir,
      backend: new FilesystemBackend({ rootDir: store.dir, virtualMode: true }),
    });
    expect((await h.call('read', { filePath: 'decoy.txt' })).output).toMatch(/^File decoy\.txt does not exist/);
    expect((await h.call('read', { filePath: path.join(host.dir, 'decoy.txt') })).ok).toBe(false);
    expect((await h.call('write', { filePath: 'decoy.txt', content: 'backend\n' })).ok).toBe(true);
    expect(await readFile(path.join(host.dir, 'decoy.txt'), 'utf8')).toBe('host file\n');
    expect(await readFile(path.join(store.dir, 'decoy.txt'), 'utf8')).toBe('backend\n');
  });
});
