/**
 * A read the policy asks about is not answered by a search: under the default policy, grep (JS and
 * ripgrep), glob and list over the workspace leave out `.env`, `config/.env.local`, a key file at
 * depth, a `.ssh` tree and a link to `.env` under another name — no contents, no names — say how
 * many and that a direct read asks, and never call the approver. What lifts the ask lifts it here
 * too: the user's allow rule, `extends: false`, an "always" approval of that tool's read, the
 * search call itself being asked and approved; a registry without a policy filters nothing. A
 * direct read still asks. Real tools, real temp workspace, real rg; the model's view through the
 * real provider classes.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { createAgent } from 'langchain';
import { HumanMessage } from '@langchain/core/messages';
import {
  createRegistry,
  registerBuiltinTools,
  createPolicy,
  type PolicyConfig,
  type OnPermissionRequest,
} from '../../src/index.js';
import fc from 'fast-check';
import { findExecutable } from '../../src/platform/files.js';
import { anyPathMatcher, pathMatcher } from '../../src/policy/glob.js';
import { SECRET_FILE_PATTERNS } from '../../src/policy/defaults.js';
import { startMockProvider, toolResults } from '../providers/mock-server.js';
import { APIS, chatModel } from '../providers/clients.js';
import { tempDir } from '../support/helpers.js';

let ws: { dir: string; cleanup: () => Promise<void> };
let hasRg = false;

const OPEN = { 'src/app.ts': 'const k = API_KEY_OPEN;', 'README.md': 'set API_KEY_DOC in the env' };
/** Secret files the default policy asks before reading, each holding a word only it holds. */
const SECRETS = {
  '.env': 'API_KEY=env-value',
  'config/.env.local': 'API_KEY=local-value',
  'a/b/c/server.key': 'API_KEY=key-value',
  'home/.ssh/config': 'API_KEY=ssh-value',
};
/** A link to `.env` under a name no rule names. */
const LINK = 'settings.txt';
/** What only the secret files' names and contents hold. */
const LEAKS = ['env-value', 'local-value', 'key-value', 'ssh-value', '.env', 'server.key', '.ssh', LINK];
const ASK_NOTICE = (tool: string) =>
  new RegExp(
    `\\((\\d+) paths? (?:was|were) left out because the policy asks the user for approval before ${tool} reads (?:it|them).*; (?:it is|they are) not named here\\. Reading such a file directly by its name asks the user for approval`,
  );

beforeAll(async () => {
  ws = await tempDir('policy-search-ask-');
  for (const [f, text] of Object.entries({ ...OPEN, ...SECRETS })) {
    fs.mkdirSync(path.dirname(path.join(ws.dir, f)), { recursive: true });
    fs.writeFileSync(path.join(ws.dir, f), `${text}\n`);
  }
  fs.symlinkSync(path.join(ws.dir, '.env'), path.join(ws.dir, LINK));
  hasRg = (await findExecutable('rg')) !== undefined;
});
afterAll(() => ws.cleanup());

function registryWith(config: PolicyConfig | 'none' | 'default', onPermissionRequest?: OnPermissionRequest) {
  const policy =
    config === 'none'
      ? undefined
      : config === 'default'
        ? createPolicy()
        : createPolicy(config, { onPermissionRequest });
  if (policy && onPermissionRequest) policy.onPermissionRequest = onPermissionRequest;
  return registerBuiltinTools(createRegistry(policy ? { policy } : {}));
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

function expectNoLeak(output: string, leaks = LEAKS): void {
  for (const word of leaks) expect([word, output.includes(word)]).toEqual([word, false]);
}

const BACKENDS = ['js', 'rg'] as const;

describe.each(BACKENDS)('grep (%s) under the default policy', (backend) => {
  const initCtx = { grepBackend: backend };
  const skip = () => backend === 'rg' && !hasRg;

  it('leaves out the secret files (at depth, in .ssh, through a link) without asking, and says a direct read asks', async () => {
    if (skip()) return console.warn('rg not on PATH: the ripgrep case is skipped');
    const asked: string[] = [];
    for (const registry of [
      registryWith('default'),
      registryWith({ rules: [] }, (r) => (asked.push(r.decision.reason), 'reject')),
    ]) {
      for (const args of [
        { pattern: 'API_KEY' },
        { pattern: 'api_key', caseInsensitive: true },
        { pattern: 'value', include: '**/*' },
        { pattern: 'API_KEY', path: 'a' },
      ]) {
        const result = await run(registry, 'grep', args, initCtx);
        expectNoLeak(result.output);
        expect([args, ASK_NOTICE('grep').test(result.output)]).toEqual([args, true]);
      }
      const all = await run(registry, 'grep', { pattern: 'API_KEY' }, initCtx);
      for (const f of Object.keys(OPEN)) expect(all.output).toContain(f);
      // .env, config/.env.local, a/b/c/server.key and home/.ssh (one tree); grep does not follow the link.
      expect(all.metadata.skippedByPolicy).toBe(4);
      expect(all.output).toMatch(/^\(4 paths were left out/m);
      await registry.dispose();
    }
    expect(asked).toEqual([]);
  });

  it("the user's allow rule for .env shows it, and only it (the user's allow wins over the defaults' ask)", async () => {
    if (skip()) return;
    const registry = registryWith({ rules: [{ permission: 'read', pattern: '.env', action: 'allow' }] });
    const result = await run(registry, 'grep', { pattern: 'API_KEY' }, initCtx);
    expect(result.output).toContain('env-value');
    expect(result.output).toMatch(/^\.env:$/m);
    expect(result.output).not.toContain('local-value');
    expect(result.output).not.toContain('key-value');
    expect(result.metadata.skippedByPolicy).toBe(3);
    await registry.dispose();
  });

  it('a policy with extends: false and a registry without a policy show everything and say nothing', async () => {
    if (skip()) return;
    for (const registry of [registryWith({ extends: false, rules: [] }), registryWith('none')]) {
      const result = await run(registry, 'grep', { pattern: 'API_KEY' }, initCtx);
      for (const word of ['env-value', 'local-value', 'key-value', 'ssh-value']) expect(result.output).toContain(word);
      expect(result.metadata.skippedByPolicy).toBeUndefined();
      expect(result.output).not.toContain('left out');
      await registry.dispose();
    }
  });
});

describe('glob and list under the default policy', () => {
  it('glob names no secret file for any pattern spelling, and says how many it left out', async () => {
    const registry = registryWith('default');
    for (const pattern of [
      '**/*',
      '**',
      '**/.env*',
      '.env',
      'config/*',
      '**/*.key',
      `${LINK}`,
      'home/**',
      '**/.ssh/*',
    ]) {
      const result = await run(registry, 'glob', { pattern });
      expectNoLeak(result.output.replace(JSON.stringify(pattern), ''));
      expect([pattern, ASK_NOTICE('glob').test(result.output)]).toEqual([pattern, true]);
    }
    const all = await run(registry, 'glob', { pattern: '**/*' });
    expect(
      all.output
        .split('\n')
        .filter((l) => l && !l.startsWith('('))
        .sort(),
    ).toEqual(['README.md', 'src/app.ts']);
    // .env, config/.env.local, a/b/c/server.key and home/.ssh (`**/*` lists no link to a file; `settings.txt` above is judged by its target)
    expect(all.metadata.skippedByPolicy).toBe(4);
    await registry.dispose();
  });

  it('list names no secret file or .ssh tree, and says how many it left out', async () => {
    const registry = registryWith('default');
    const result = await run(registry, 'list', { path: '.' });
    // list names a link by its own name without following it (as for a link to a denied file).
    expectNoLeak(
      result.output,
      LEAKS.filter((w) => w !== LINK),
    );
    expect(result.output).toContain(`${LINK}@`);
    expect(result.output).toMatch(ASK_NOTICE('list'));
    expect(result.metadata.skippedByPolicy).toBe(4);
    for (const name of ['src/', 'app.ts', 'config/', 'home/', 'c/'])
      expect([name, result.output.includes(name)]).toEqual([name, true]);
    await registry.dispose();
  });

  it('an allow rule for .env lets glob and list name it; extends: false names everything', async () => {
    const allow = registryWith({ rules: [{ permission: 'read', pattern: '.env', action: 'allow' }] });
    expect((await run(allow, 'glob', { pattern: '.env*' })).output).toMatch(/^\.env$/m);
    expect((await run(allow, 'list', { path: '.' })).output).toMatch(/ \.env$/m);
    const bare = registryWith({ extends: false, rules: [] });
    const list = await run(bare, 'list', { path: '.' });
    for (const name of ['.env', '.env.local', 'server.key', '.ssh/', LINK]) expect(list.output).toContain(name);
    expect(list.metadata.skippedByPolicy).toBeUndefined();
    await Promise.all([allow.dispose(), bare.dispose()]);
  });
});

describe('what lifts the ask, and what does not', () => {
  it('a direct read of .env still asks the approver, while searches never do', async () => {
    const asked: string[] = [];
    const registry = registryWith({ rules: [] }, (r) => (asked.push(r.decision.check.label), 'reject'));
    await run(registry, 'grep', { pattern: 'API_KEY' }, { grepBackend: 'js' });
    await run(registry, 'glob', { pattern: '**/*' });
    await run(registry, 'list', { path: '.' });
    expect(asked).toEqual([]);
    const read = await registry.execute('read', { filePath: '.env' }, { sessionID: 's' }, { workspaceRoot: ws.dir });
    expect(asked).toHaveLength(1);
    expect(JSON.stringify(read)).not.toContain('env-value');
    // Naming it directly asks too (the rule glob and list follow when they leave the name out).
    await registry.execute('list', { path: '.env' }, { sessionID: 's' }, { workspaceRoot: ws.dir });
    await registry.execute(
      'glob',
      { pattern: '*', path: 'config/.env.local' },
      { sessionID: 's' },
      { workspaceRoot: ws.dir },
    );
    expect(asked).toHaveLength(3);
    const bare = registryWith('default');
    const refused = await bare.execute('read', { filePath: '.env' }, { sessionID: 's' }, { workspaceRoot: ws.dir });
    expect(JSON.stringify(refused)).toContain('no approver is configured');
    await Promise.all([registry.dispose(), bare.dispose()]);
  });

  it('an "always" approval of grep reading .env shows .env to later searches by grep in that session only', async () => {
    const registry = registryWith({ rules: [] }, () => 'always');
    // The direct grep of .env asks, and the approver answers "always" (for grep, .env, session s).
    expect((await run(registry, 'grep', { pattern: 'API_KEY', path: '.env' }, { grepBackend: 'js' })).output).toContain(
      'env-value',
    );
    const later = await run(registry, 'grep', { pattern: 'API_KEY' }, { grepBackend: 'js' });
    expect(later.output).toContain('env-value');
    expect(later.output).not.toContain('local-value');
    expect(later.metadata.skippedByPolicy).toBe(3);
    // Another session, and another tool in the same session, were not approved.
    const other = await registry.execute(
      'grep',
      { pattern: 'API_KEY' },
      { sessionID: 'other' },
      { workspaceRoot: ws.dir, grepBackend: 'js' },
    );
    expect(other.result.output).not.toContain('env-value');
    expect((await run(registry, 'glob', { pattern: '.env*' })).output).not.toMatch(/^\.env$/m);
    await registry.dispose();
  });

  it('a search the approver was asked about (grep over a .ssh tree) shows what that ask covered, and no other secret', async () => {
    const asked: string[] = [];
    const registry = registryWith({ rules: [] }, (r) => (asked.push(r.decision.check.label), 'once'));
    fs.writeFileSync(path.join(ws.dir, 'home/.ssh/id_rsa'), 'API_KEY=rsa-value\n');
    try {
      const result = await run(registry, 'grep', { pattern: 'API_KEY', path: 'home/.ssh' }, { grepBackend: 'js' });
      expect(asked).toHaveLength(1);
      expect(result.output).toContain('ssh-value');
      // id_rsa is also asked about by its own rule (`id_rsa*`), which the approver was not asked.
      expect(result.output).not.toContain('rsa-value');
      expect(result.metadata.skippedByPolicy).toBe(1);
    } finally {
      fs.rmSync(path.join(ws.dir, 'home/.ssh/id_rsa'));
      await registry.dispose();
    }
  });
});

describe('the filter judges many patterns at once', () => {
  it('anyPathMatcher(patterns) says what some pathMatcher(pattern) says, for any path', () => {
    const patterns = [
      ...SECRET_FILE_PATTERNS,
      'secrets/**',
      'a/*.txt',
      '{x,y}/[ab]?.md',
      '**/vault/**',
      '/etc/*',
      'x/**/f.txt',
      './a*',
      'b?.md',
      '*cred*',
    ];
    const any = anyPathMatcher(patterns);
    const one = patterns.map((p) => pathMatcher(p));
    const segment = fc.constantFrom(
      '.env',
      '.env.local',
      'a',
      'x',
      'b1.md',
      'k.pem',
      '.ssh',
      'id_rsa',
      'vault',
      'etc',
      'secrets',
      'f.txt',
      '.aws',
      'credentials',
    );
    const paths = fc
      .tuple(fc.boolean(), fc.array(segment, { minLength: 1, maxLength: 5 }))
      .map(([abs, segs]) => (abs ? '/' : '') + segs.join('/'));
    fc.assert(
      fc.property(paths, (value) => any(value) === one.some((m) => m(value))),
      { numRuns: 10_000 },
    );
    for (const v of ['config/.env.local', '/home/u/.ssh/id', 'a/f.txt', 'src/app.ts', '/etc/passwd'])
      expect([v, any(v)]).toEqual([v, one.some((m) => m(v))]);
  });
});

describe('what the model reads', () => {
  for (const api of APIS) {
    it(`${api}: grep API_KEY over the workspace returns the open files and the ask notice, never a secret`, async () => {
      const mock = await startMockProvider([
        { calls: [{ name: 'grep', args: { pattern: 'API_KEY' } }] },
        { text: 'done' },
      ]);
      const registry = registryWith('default');
      try {
        const tools = await registry.tools({ ids: ['grep'], initCtx: { workspaceRoot: ws.dir, grepBackend: 'js' } });
        const agent = createAgent({ model: chatModel(api, mock.url), tools });
        await agent.invoke({ messages: [new HumanMessage('Find the API keys')] });
        expect(mock.requests.map((r) => r.refused)).toEqual([undefined, undefined]);
        const result = toolResults(mock.requests[1]).at(-1)!.content;
        expect(result).toContain('src/app.ts');
        expect(result).toMatch(ASK_NOTICE('grep'));
        expectNoLeak(result);
      } finally {
        await registry.dispose();
        await mock.close();
      }
    }, 60_000);
  }
});
