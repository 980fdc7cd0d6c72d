/**
 * `sandbox.autoAllow` lifts a secret-file ask only for a path the sandbox really hides for that call
 * (issue 31 item 5: a secret under node_modules, which the scan skips, printed its token), never a
 * write inside the workspace that an ask rule names; and `filesystem.denyRead` globs are hidden by
 * the scan itself, not only parsed (real bubblewrap).
 * Skips (saying why) only where bwrap cannot run; CI installs it, and there a missing bwrap fails.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createPolicy, createRegistry, registerBuiltinTools, type ToolRegistryType } from '../../src/index.js';
import { DEFAULT_POLICY } from '../../src/policy/defaults.js';
import type { PolicyConfig } from '../../src/policy/types.js';
import { findHiddenPaths } from '../../src/sandbox/secrets.js';
import { tempDir } from '../support/helpers.js';

const works =
  spawnSync('bwrap', ['--ro-bind', '/', '/', '--dev', '/dev', '--unshare-all', '--', '/bin/true']).status === 0;
if (!works && process.env.CI) throw new Error('CI must run the sandbox hidden-asks suite: install bubblewrap.');
if (!works) console.warn('sandbox-hidden-asks.test.ts skipped: bwrap cannot run here. Install bubblewrap to run it.');
const suite = works ? describe : describe.skip;

const TOKENS = {
  root: 'DECOY-ROOT-ENV-11',
  nodeModules: 'DECOY-NODE-MODULES-ENV-22',
  git: 'DECOY-GIT-PEM-33',
  deepHome: 'DECOY-DEEP-HOME-44',
  token: 'DECOY-DENYREAD-TOKEN-55',
  private: 'DECOY-DENYREAD-DIR-66',
};

suite('what the sandbox really hides decides what autoAllow lifts', () => {
  let base: Awaited<ReturnType<typeof tempDir>>;
  let ws: string;
  let home: string;
  const registries: ToolRegistryType[] = [];

  beforeAll(async () => {
    base = await tempDir('sandbox-hidden-asks-');
    ws = path.join(base.dir, 'ws');
    home = path.join(base.dir, 'home');
    for (const d of ['node_modules/pkg', '.git', 'src', 'sub', 'private'])
      await mkdir(path.join(ws, d), { recursive: true });
    await mkdir(path.join(home, 'a/b/c'), { recursive: true });
    await writeFile(path.join(ws, '.env'), TOKENS.root);
    await writeFile(path.join(ws, 'node_modules/pkg/.env'), TOKENS.nodeModules);
    await writeFile(path.join(ws, '.git/deploy.pem'), TOKENS.git);
    await writeFile(path.join(home, 'a/b/c/.env'), TOKENS.deepHome);
    await writeFile(path.join(ws, 'sub/api.token'), TOKENS.token);
    await writeFile(path.join(ws, 'private/notes.txt'), TOKENS.private);
  });
  afterAll(async () => {
    await Promise.all(registries.map((r) => r.dispose()));
    await base.cleanup();
  });

  function registry(config: PolicyConfig = DEFAULT_POLICY, denyRead: string[] = []) {
    const r = registerBuiltinTools(
      createRegistry({
        policy: createPolicy(config),
        sandbox: { mode: 'required', autoAllow: true, filesystem: { home, denyRead } },
      }),
      ['bash'],
    );
    registries.push(r);
    return r;
  }
  const bash = (r: ToolRegistryType, command: string) =>
    r.execute('bash', { command, description: 'hidden asks' }, { sessionID: 's' }, { workspaceRoot: ws });

  it('a secret the scan did not hide (node_modules, .git, deep in the home) keeps its ask; one it hid is lifted', async () => {
    const r = registry();
    const asks: string[] = [];
    for (const command of [
      'cat node_modules/pkg/.env',
      'cat ./node_modules/pkg/../pkg/.env',
      'cat .git/deploy.pem',
      `cat ${home}/a/b/c/.env`,
    ]) {
      const decision = await r.policy!.decide('bash', { command }, r.policyEnvironment({ workspaceRoot: ws }));
      const res = await bash(r, command);
      asks.push(`${command}: ${decision.action} ${res.success}`);
      expect(res.result.output).not.toMatch(/DECOY-/);
    }
    expect(asks).toEqual([
      'cat node_modules/pkg/.env: ask false',
      'cat ./node_modules/pkg/../pkg/.env: ask false',
      'cat .git/deploy.pem: ask false',
      `cat ${home}/a/b/c/.env: ask false`,
    ]);
    const hidden = await bash(r, 'cat .env');
    expect(hidden.success).toBe(true);
    expect(hidden.result.output).toContain('is hidden by the sandbox');
    expect(hidden.result.output).not.toContain(TOKENS.root);
    const decision = await r.policy!.decide(
      'bash',
      { command: 'cat .env' },
      r.policyEnvironment({ workspaceRoot: ws }),
    );
    expect(decision.sandbox).toEqual({ autoAllowed: true, reason: 'it reads a secret file, which the sandbox hides' });
  });

  it('a write inside the workspace that an ask rule names is not lifted (only writes the sandbox blocks may be)', async () => {
    const r = registry({
      ...DEFAULT_POLICY,
      rules: [...DEFAULT_POLICY.rules, { permission: 'write', pattern: 'src/**', action: 'ask' }],
    });
    const command = 'echo planted > src/generated.ts';
    const decision = await r.policy!.decide('bash', { command }, r.policyEnvironment({ workspaceRoot: ws }));
    expect([decision.action, decision.sandbox]).toEqual(['ask', undefined]);
    const res = await bash(r, command);
    expect(res.success).toBe(false);
    expect(res.result.output).toContain('needs approval');
    expect(existsSync(path.join(ws, 'src/generated.ts'))).toBe(false);
  });

  it('filesystem.denyRead globs are found by the scan and hidden inside', async () => {
    const scan = await findHiddenPaths({ roots: [ws], home, denyRead: ['*.token', 'private/**'] });
    expect(scan.files).toContain(path.join(ws, 'sub/api.token'));
    expect(scan.dirs).toContain(path.join(ws, 'private'));
    const r = registry(DEFAULT_POLICY, ['*.token', 'private/**']);
    const res = await r.execute(
      'bash',
      { command: 'cat sub/api.token; cat private/notes.txt; ls private; true', description: 'denyRead' },
      { sessionID: 's' },
      { workspaceRoot: ws },
    );
    expect(res.result.metadata.sandboxed).toBe(true);
    expect(res.result.output).not.toMatch(/DECOY-/);
    expect(res.result.output).toContain('Permission denied');
  });
});
