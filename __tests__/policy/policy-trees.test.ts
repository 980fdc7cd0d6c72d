/**
 * Issue 21, item 2: an operation on a directory is judged as an operation on every path under it.
 * A deny on `protected/**` stops deleting, moving, copying or removing `protected` (however it is
 * spelt), moving into it and moving a parent of it, through the real tools on a real workspace.
 */
import { describe, it, expect, beforeEach, afterEach } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { createRegistry, registerBuiltinTools, createPolicy } from '../../src/index.js';
import { POLICY_TREE_MAX_ENTRIES } from '../../src/policy/checks.js';
import { tempDir } from '../support/helpers.js';

let ws: { dir: string; cleanup: () => Promise<void> };
let registry: ReturnType<typeof createRegistry>;
const session = { sessionID: 'trees' };

/** The decoys: files the denied trees hold, which must survive every attempt. */
const KEPT = ['protected/keys.txt', 'protected/sub/deep.txt', 'outer/protected/keys.txt', 'cfg/.env'];

beforeEach(async () => {
  ws = await tempDir('policy-trees-');
  for (const f of [...KEPT, 'a.txt', 'free/b.txt']) {
    fs.mkdirSync(path.dirname(path.join(ws.dir, f)), { recursive: true });
    fs.writeFileSync(path.join(ws.dir, f), `${f}\n`);
  }
  fs.symlinkSync(path.join(ws.dir, 'protected'), path.join(ws.dir, 'lnk'));
  const policy = createPolicy({
    rules: [
      { pattern: 'protected/**', action: 'deny', reason: 'protected files' },
      { pattern: 'outer/protected/**', action: 'deny', reason: 'protected files' },
      { permission: 'write', pattern: '.env', action: 'deny', reason: 'env files stay' },
      // Everything else in the workspace may be changed without asking (delete and rm are dangerous).
      { tool: 'delete', action: 'allow' },
      { tool: 'bash', action: 'allow' },
    ],
  });
  registry = registerBuiltinTools(createRegistry({ policy }));
});
afterEach(() => ws.cleanup());

function kept(): string[] {
  return KEPT.filter((f) => fs.existsSync(path.join(ws.dir, f)));
}

async function run(tool: string, args: Record<string, unknown>) {
  return registry.execute(tool, args, session, { workspaceRoot: ws.dir });
}

describe('a directory is judged as every path under it', () => {
  it('delete of the tree, however the path is spelt, is refused and deletes nothing', async () => {
    const spellings = ['protected', './protected/', 'protected/.', 'free/../protected', 'protected//', 'lnk/'];
    for (const p of [...spellings, path.join(ws.dir, 'protected')]) {
      const r = await run('delete', { path: p, recursive: true });
      expect([p, r.error]).toEqual([
        p,
        expect.stringMatching(/\(a directory, with everything under it\) is denied by rule #1 /),
      ]);
    }
    expect(kept()).toEqual(KEPT);
  });

  it('move of the tree, into the tree, and of a parent of a denied tree is refused', async () => {
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ from: 'protected', to: 'moved' }, /move of protected \(a directory, with everything under it\) is denied/],
      [{ from: './protected/', to: 'free/moved' }, /is denied by rule #1/],
      [{ from: 'a.txt', to: 'protected/a.txt' }, /move of protected\/a\.txt is denied by rule #1/],
      [{ from: 'outer', to: 'outer2' }, /move of outer \(a directory, with everything under it\) is denied by rule #2/],
      [{ from: 'cfg', to: 'cfg2' }, /move of cfg \(a directory, with everything under it\) is denied by rule #3 /],
    ];
    for (const [args, message] of cases) {
      const r = await run('move', args);
      expect([args, r.error]).toEqual([args, expect.stringMatching(message)]);
    }
    expect(kept()).toEqual(KEPT);
    expect(fs.existsSync(path.join(ws.dir, 'a.txt'))).toBe(true);
  });

  it('bash rm -rf, mv, cp -r of the tree (and of a parent, and into it) are refused and change nothing', async () => {
    const commands = [
      'rm -rf protected',
      'rm -rf ./protected/',
      'rm -r protected/.',
      'rm -rf lnk/',
      'rm -rf outer',
      'rm -rf cfg',
      'mv protected moved',
      'mv outer elsewhere',
      'mv a.txt protected',
      'cp -r protected copy',
      'cd free && rm -rf ../protected',
    ];
    for (const command of commands) {
      const r = await run('bash', { command, description: 'x' });
      expect([command, r.error]).toEqual([command, expect.stringMatching(/^The bash call was not run: /)]);
    }
    expect(kept()).toEqual(KEPT);
    expect(fs.existsSync(path.join(ws.dir, 'copy'))).toBe(false);
  });

  it('directories the rules do not reach stay free to change (so the suite can fail)', async () => {
    expect(
      (await run('bash', { command: 'cp -r free free2 && mv free2 free3', description: 'x' })).error,
    ).toBeUndefined();
    expect((await run('move', { from: 'free3', to: 'free4' })).error).toBeUndefined();
    expect((await run('delete', { path: 'free4', recursive: true })).error).toBeUndefined();
    expect(fs.existsSync(path.join(ws.dir, 'free4'))).toBe(false);
  });

  it('tools that only read a directory are refused inside a denied tree, not above it', async () => {
    for (const [tool, args] of [
      ['list', { path: 'protected' }],
      ['grep', { pattern: 'keys', path: 'protected/sub' }],
      ['glob', { pattern: '*', path: './protected/' }],
    ] as const) {
      const r = await run(tool, args);
      expect([tool, r.error]).toEqual([tool, expect.stringMatching(/is denied by rule #1/)]);
    }
    expect((await run('list', { path: '.' })).error).toBeUndefined();
  });
});

describe('POLICY_TREE_MAX_ENTRIES', () => {
  it('a tree of exactly the limit is read whole; one entry more and a name rule is taken to match', async () => {
    const big = path.join(ws.dir, 'big');
    fs.mkdirSync(big);
    for (let i = 0; i < POLICY_TREE_MAX_ENTRIES; i++) fs.writeFileSync(path.join(big, `f${i}`), '');
    const env = registry.policyEnvironment({ workspaceRoot: ws.dir });
    const atLimit = await registry.policy!.decide('delete', { path: 'big', recursive: true }, env);
    expect(atLimit.action).toBe('allow');
    fs.writeFileSync(path.join(big, 'one-more'), '');
    const past = await registry.policy!.decide('delete', { path: 'big', recursive: true }, env);
    expect(past.reason).toMatch(/^deny delete of big \(a directory, with everything under it\): rule #3 /);
  }, 60_000);
});
