/**
 * A deny on reading a tree holds inside searches of its parents: grep (JS and ripgrep), glob and
 * list over the workspace root leave out the paths the policy refuses — at depth, through a
 * symlinked directory inside the workspace, with `**` patterns and case-insensitive searches — say
 * how many they left out without naming them, and still show everything else. Real tools, real
 * temp workspace, real rg; the model's view through the real provider classes.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { createAgent } from 'langchain';
import { HumanMessage } from '@langchain/core/messages';
import { createRegistry, registerBuiltinTools, createPolicy, type PolicyRule } from '../../src/index.js';
import { findExecutable } from '../../src/platform/files.js';
import { startMockProvider, toolResults } from '../providers/mock-server.js';
import { APIS, chatModel } from '../providers/clients.js';
import { tempDir } from '../support/helpers.js';

let ws: { dir: string; cleanup: () => Promise<void> };
let hasRg = false;

/** Every file holds MARK; the denied ones also a word naming what they are. */
const OPEN = { 'open/a.txt': 'MARK open-a', 'SECRETS/upper.txt': 'MARK upper-ok', 'deep/x/y/fine.txt': 'MARK fine' };
const DENIED = {
  'secrets/key.txt': 'MARK secret-key',
  'secrets/sub/deeper.txt': 'MARK secret-deeper',
  'deep/x/y/cert.pem': 'MARK pem-body',
  'deep/x/y/vault/v.txt': 'MARK vault-body',
};
/** Words that only the denied files' names or contents hold. */
const LEAKS = ['secret-key', 'secret-deeper', 'pem-body', 'vault-body', 'key.txt', 'deeper.txt', 'cert.pem', 'v.txt'];

const RULES: PolicyRule[] = [
  { pattern: 'secrets/**', action: 'deny', reason: 'secrets stay unread' },
  { pattern: '**/vault/**', action: 'deny', reason: 'vaults stay unread' },
  { permission: 'read', pattern: '*.pem', action: 'deny', reason: 'keys stay unread' },
];

beforeAll(async () => {
  ws = await tempDir('policy-search-');
  for (const [f, text] of Object.entries({ ...OPEN, ...DENIED })) {
    fs.mkdirSync(path.dirname(path.join(ws.dir, f)), { recursive: true });
    fs.writeFileSync(path.join(ws.dir, f), `${text}\n`);
  }
  // A symlinked directory and a symlinked file inside the workspace, pointing into denied places.
  fs.symlinkSync(path.join(ws.dir, 'secrets'), path.join(ws.dir, 'lnk'));
  fs.symlinkSync(path.join(ws.dir, 'deep/x/y/cert.pem'), path.join(ws.dir, 'pem-link.txt'));
  hasRg = (await findExecutable('rg')) !== undefined;
});
afterAll(() => ws.cleanup());

function registryWith(rules: PolicyRule[] | undefined) {
  return registerBuiltinTools(createRegistry(rules ? { policy: createPolicy({ rules }) } : {}));
}

async function run(
  registry: ReturnType<typeof registryWith>,
  tool: string,
  args: Record<string, unknown>,
  initCtx: Record<string, unknown> = {},
) {
  const r = await registry.execute(tool, args, { sessionID: 's' }, { workspaceRoot: ws.dir, ...initCtx });
  expect([tool, args, r.error]).toEqual([tool, args, undefined]);
  return r.result;
}

function expectNoLeak(output: string): void {
  for (const word of LEAKS) expect([word, output.includes(word)]).toEqual([word, false]);
}

const NOTICE = (tool: string) =>
  new RegExp(
    `\\((\\d+) paths? (?:was|were) left out because the policy does not let ${tool} read (?:it|them); (?:it is|they are) not named here`,
  );

describe.each(['js', 'rg'] as const)('grep (%s) over a parent of denied trees', (backend) => {
  const initCtx = { grepBackend: backend };

  it('leaves out the denied files at any depth, says how many, and shows the rest', async () => {
    if (backend === 'rg' && !hasRg) return console.warn('rg not on PATH: the ripgrep case is skipped');
    const registry = registryWith(RULES);
    for (const args of [
      { pattern: 'MARK' },
      { pattern: 'mark', caseInsensitive: true },
      { pattern: 'MARK', path: '.', include: '**/*' },
      { pattern: 'MARK', path: 'deep' },
      { pattern: 'pem|vault|secret', include: '*.{pem,txt}' },
    ]) {
      const result = await run(registry, 'grep', args, initCtx);
      expectNoLeak(result.output);
      expect([args, NOTICE('grep').test(result.output)]).toEqual([args, true]);
      expect(result.metadata.skippedByPolicy).toBeGreaterThan(0);
    }
    const all = await run(registry, 'grep', { pattern: 'MARK' }, initCtx);
    for (const f of Object.keys(OPEN)) expect(all.output).toContain(f);
    expect(all.metadata.matches).toBe(Object.keys(OPEN).length);
    await registry.dispose();
  });

  it('without a deny or ask rule every file is found and nothing is said (the filter costs nothing)', async () => {
    if (backend === 'rg' && !hasRg) return;
    // (The default policy's layer asks before reading `*.pem`: `extends: false` drops it.)
    const noDefaults = registerBuiltinTools(
      createRegistry({ policy: createPolicy({ extends: false, rules: [{ tool: 'bash', action: 'deny' }] }) }),
    );
    for (const registry of [registryWith(undefined), noDefaults]) {
      const result = await run(registry, 'grep', { pattern: 'MARK' }, initCtx);
      expect(result.output).toContain('secret-key');
      expect(result.output).toContain('vault-body');
      expect(result.output).not.toMatch(NOTICE('grep'));
      expect(result.metadata.skippedByPolicy).toBeUndefined();
      await registry.dispose();
    }
  });
});

describe('glob over a parent of denied trees', () => {
  it('leaves out denied paths for every pattern spelling, through links and brace alternatives', async () => {
    const registry = registryWith(RULES);
    const patterns = [
      '**/*',
      '**',
      '**/*.txt',
      '**/*.pem',
      '**/vault/*',
      'secrets/*',
      'secrets/**/*',
      '[sS]ecrets/**',
      '{secrets,open}/**',
      '{lnk,open}/**',
      'lnk/*',
      'lnk/sub/deeper.txt',
      'pem-link.txt',
      'deep/x/y/cert.pem',
      '{deep/x/y/cert.pem,open/a.txt}',
      '**/{cert.pem,v.txt}',
    ];
    for (const pattern of patterns) {
      const result = await run(registry, 'glob', { pattern });
      // "No files found matching <pattern>" quotes the model's own pattern back: not a leak.
      expectNoLeak(result.output.replace(JSON.stringify(pattern), ''));
      expect([pattern, NOTICE('glob').test(result.output)]).toEqual([pattern, true]);
    }
    const all = await run(registry, 'glob', { pattern: '**/*' });
    for (const f of Object.keys(OPEN)) expect(all.output).toContain(f);
    expect(all.metadata.count).toBe(Object.keys(OPEN).length);
    await registry.dispose();
  });

  it('a case-insensitive-looking variant that names another directory on this file system is not refused', async () => {
    const registry = registryWith(RULES);
    const result = await run(registry, 'glob', { pattern: 'SECRETS/*' });
    expect(result.output).toBe('SECRETS/upper.txt');
    await registry.dispose();
  });
});

describe('list over a parent of denied trees', () => {
  it('leaves out denied trees and files, says how many, and lists the rest', async () => {
    const registry = registryWith(RULES);
    const result = await run(registry, 'list', { path: '.' });
    expectNoLeak(result.output);
    expect(result.output).not.toMatch(/^ {2}secrets\//m);
    expect(result.output).toMatch(NOTICE('list'));
    expect(result.metadata.skippedByPolicy).toBe(3); // secrets/, cert.pem, vault/
    for (const name of ['open/', 'SECRETS/', 'a.txt', 'upper.txt', 'fine.txt', 'lnk@', 'pem-link.txt@'])
      expect([name, result.output.includes(name)]).toEqual([name, true]);
    const bare = registryWith(undefined);
    expect((await run(bare, 'list', { path: '.' })).output).toContain('cert.pem');
    await Promise.all([registry.dispose(), bare.dispose()]);
  });
});

describe('a directory denied by name', () => {
  it('a deny on the directory itself (a pattern without "/") leaves it and everything in it out of list, glob and grep', async () => {
    const registry = registryWith([{ pattern: 'y', action: 'deny' }]);
    const list = await run(registry, 'list', { path: '.' });
    expect(list.output).not.toMatch(/^ +y\//m);
    expect(list.output).not.toContain('fine.txt');
    expect(list.output).toMatch(NOTICE('list'));
    const glob = await run(registry, 'glob', { pattern: '**/*.txt', path: '.' });
    expect(glob.output).not.toContain('deep/x/y/');
    for (const grepBackend of hasRg ? ['js', 'rg'] : ['js']) {
      const grep = await run(registry, 'grep', { pattern: 'MARK' }, { grepBackend });
      expect([grepBackend, grep.output.includes('fine')]).toEqual([grepBackend, false]);
      expect(grep.output).toContain('open-a');
      expect(grep.output).toMatch(NOTICE('grep'));
    }
    await registry.dispose();
  });
});

describe('a rule for one tool only filters that tool', () => {
  it('a grep-only deny leaves glob and list free to name the files, and grep to search the rest', async () => {
    const registry = registryWith([{ tool: 'grep', pattern: 'secrets/**', action: 'deny' }]);
    const grep = await run(registry, 'grep', { pattern: 'MARK' }, { grepBackend: 'js' });
    expect(grep.output).not.toContain('secret-key');
    expect(grep.output).toContain('vault-body');
    expect((await run(registry, 'glob', { pattern: 'secrets/*' })).output).toBe('secrets/key.txt');
    await registry.dispose();
  });

  it('default: deny with an allow for one tree leaves out everything else', async () => {
    const registry = registerBuiltinTools(
      createRegistry({
        policy: createPolicy({
          default: 'deny',
          rules: [
            { tool: 'glob', pattern: '.', action: 'allow' },
            { tool: 'glob', pattern: 'open/**', action: 'allow' },
          ],
        }),
      }),
    );
    const result = await run(registry, 'glob', { pattern: '**/*', path: '.' });
    expect(result.output.split('\n')[0]).toBe('open/a.txt');
    expect(result.output).toMatch(NOTICE('glob'));
    expectNoLeak(result.output);
    await registry.dispose();
  });
});

describe('what the model reads', () => {
  for (const api of APIS) {
    it(`${api}: grep over the root returns the open files and the notice, never a denied file`, async () => {
      const mock = await startMockProvider([
        { calls: [{ name: 'grep', args: { pattern: 'MARK' } }] },
        { text: 'done' },
      ]);
      const registry = registryWith(RULES);
      try {
        const tools = await registry.tools({ ids: ['grep'], initCtx: { workspaceRoot: ws.dir, grepBackend: 'js' } });
        const agent = createAgent({ model: chatModel(api, mock.url), tools });
        await agent.invoke({ messages: [new HumanMessage('Find the marks')] });
        expect(mock.requests.map((r) => r.refused)).toEqual([undefined, undefined]);
        const result = toolResults(mock.requests[1]).at(-1)!.content;
        expect(result).toContain('open/a.txt');
        expect(result).toMatch(NOTICE('grep'));
        expectNoLeak(result);
      } finally {
        await registry.dispose();
        await mock.close();
      }
    }, 60_000);
  }
});

describe('skipsIn (a listed entry judged with its directory worked out once)', () => {
  it('says what skips says for every entry of the tree, links and a directory reached through a link included', async () => {
    // A directory whose real path differs (reached through the `lnk` link) and a root-level walk.
    const env = {
      workspaceRoot: ws.dir,
      toolFacts: () => ({ permissions: ['read' as const], danger: 'safe' as const }),
    };
    for (const rules of [RULES, undefined]) {
      const policy = rules ? createPolicy({ rules }) : createPolicy();
      const one = (await policy.readFilter('glob', env))!;
      const other = (await policy.readFilter('glob', env))!;
      const verdicts: Array<[string, boolean, boolean]> = [];
      const walk = (dir: string) => {
        for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
          const abs = path.join(dir, e.name);
          const isDir = e.isDirectory();
          verdicts.push([path.relative(ws.dir, abs), one.skipsIn(dir, e.name, isDir), other.skips(abs, isDir)]);
          if (isDir) walk(abs);
        }
      };
      walk(ws.dir);
      walk(path.join(ws.dir, 'lnk'));
      expect(verdicts.filter(([, a, b]) => a !== b)).toEqual([]);
      expect(one.notice()).toBe(other.notice());
      if (rules) expect(verdicts.filter(([, a]) => a).length).toBeGreaterThan(3);
    }
  });
});
