/**
 * The policy with the sandbox: `sandbox.autoAllow` lets a bash call the default policy would ask
 * about only for what the sandbox contains run without asking (real bubblewrap), a deny rule and
 * an ask rule naming a command still win, nothing is lifted without a working sandbox or with
 * autoAllow off, and `toolbelt policy explain` says when a decision relied on the sandbox.
 */
import { describe, it, expect, beforeAll, afterAll, afterEach } from '@jest/globals';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createPolicy, createRegistry, registerBuiltinTools, type ToolRegistryType } from '../../src/index.js';
import { DEFAULT_POLICY } from '../../src/policy/defaults.js';
import type { SandboxOptions } from '../../src/sandbox/types.js';
import type { PolicyConfig } from '../../src/policy/types.js';
import { tempDir } from '../support/helpers.js';
import { ensureDist, CLI } from '../support/dist.js';

const works = spawnSync('bwrap', ['--ro-bind', '/', '/', '--unshare-all', '--', '/bin/true']).status === 0;
if (!works && process.env.CI) throw new Error('CI must run the sandbox policy suite: install bubblewrap.');
if (!works) console.warn('sandbox-policy.test.ts skipped: bwrap cannot run here. Install bubblewrap to run it.');
const suite = works ? describe : describe.skip;

suite('sandbox.autoAllow', () => {
  let base: Awaited<ReturnType<typeof tempDir>>;
  let ws: string;
  let home: string;
  let noBwrapPath: string;
  const originalPath = process.env.PATH;
  const registries: ToolRegistryType[] = [];

  beforeAll(async () => {
    await ensureDist();
    base = await tempDir('sandbox-policy-');
    ws = path.join(base.dir, 'ws');
    home = path.join(base.dir, 'home');
    await mkdir(path.join(ws, 'build'), { recursive: true });
    await mkdir(path.join(home, '.ssh'), { recursive: true });
    await writeFile(path.join(home, '.ssh/id_rsa'), 'DECOY-POLICY-KEY');
    noBwrapPath = path.join(base.dir, 'path');
    await mkdir(noBwrapPath);
    const seen = new Set<string>();
    for (const dir of (originalPath ?? '').split(':')) {
      let names: string[];
      try {
        names = readdirSync(dir);
      } catch {
        continue;
      }
      for (const n of names)
        if (n !== 'bwrap' && !seen.has(n) && seen.add(n)) await symlink(path.join(dir, n), path.join(noBwrapPath, n));
    }
  }, 180_000);

  afterEach(async () => {
    process.env.PATH = originalPath;
    await Promise.all(registries.splice(0).map((r) => r.dispose()));
  });

  afterAll(() => base.cleanup());

  function registry(sandbox: SandboxOptions, config: PolicyConfig = DEFAULT_POLICY) {
    const r = registerBuiltinTools(
      createRegistry({ policy: createPolicy(config), sandbox: { filesystem: { home }, ...sandbox } }),
    );
    registries.push(r);
    return r;
  }
  const bash = (r: ToolRegistryType, command: string) =>
    r.execute('bash', { command, description: 'policy test' }, { sessionID: 's' }, { workspaceRoot: ws });

  it('lets a dangerous command and a secret read run without asking, contained', async () => {
    const r = registry({ mode: 'required', autoAllow: true });
    const rm = await bash(r, 'rm -rf build && echo removed');
    expect([rm.success, rm.result.output]).toEqual([true, 'removed\n']);
    expect(existsSync(path.join(ws, 'build'))).toBe(false);
    const secret = await bash(r, 'cat ~/.ssh/id_rsa');
    expect(secret.success).toBe(true);
    expect(secret.result.output).toContain('is hidden by the sandbox');
    expect(secret.result.output).not.toContain('DECOY-POLICY-KEY');
    const decision = await r.policy!.decide(
      'bash',
      { command: 'rm -rf build' },
      r.policyEnvironment({ workspaceRoot: ws }),
    );
    expect(decision.action).toBe('allow');
    expect(decision.sandbox).toEqual({
      autoAllowed: true,
      reason: 'it is dangerous, and the sandbox contains what it can do',
    });
    expect(decision.reason).toMatch(
      /^allow bash command "rm -rf build" without asking: the OS sandbox contains it \(sandbox\.autoAllow\)/,
    );
  });

  it("a deny rule still wins, and an ask rule naming a command is still the user's", async () => {
    const r = registry(
      { mode: 'required', autoAllow: true },
      {
        ...DEFAULT_POLICY,
        rules: [
          ...DEFAULT_POLICY.rules,
          { tool: 'bash', pattern: 'curl *', action: 'deny', reason: 'no downloads' },
          { tool: 'bash', pattern: 'git push *', action: 'ask' },
        ],
      },
    );
    const denied = await bash(r, 'curl -s http://example.com');
    expect(denied.success).toBe(false);
    expect(denied.result.output).toContain('is denied by rule');
    const asked = await bash(r, 'git push --force origin main');
    expect(asked.success).toBe(false);
    expect(asked.result.output).toContain('needs approval');
  });

  it('off by default, and never without a working sandbox', async () => {
    const off = registry({ mode: 'required' });
    const notLifted = await bash(off, 'rm -rf build');
    expect(notLifted.success).toBe(false);
    expect(notLifted.result.output).toContain('needs approval');

    process.env.PATH = noBwrapPath;
    const noEngine = registry({ mode: 'auto', autoAllow: true });
    const uncontained = await bash(noEngine, 'rm -rf build');
    expect(uncontained.success).toBe(false);
    expect(uncontained.result.output).toContain('needs approval');
  });

  it('toolbelt policy explain says the decision relied on the sandbox', async () => {
    await writeFile(
      path.join(ws, 'toolbelt.policy.json'),
      JSON.stringify({ ...DEFAULT_POLICY, sandbox: { autoAllow: true, filesystem: { home } } }),
    );
    const out = await new Promise<{ stdout: string; code: number | null }>((resolve, reject) => {
      const child = spawn(
        process.execPath,
        [CLI, 'policy', 'explain', 'bash', JSON.stringify({ command: 'rm -rf build' })],
        {
          cwd: ws,
          env: { PATH: originalPath ?? '/usr/bin:/bin', HOME: home },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let stdout = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
      child.on('error', reject);
      child.on('close', (code) => resolve({ stdout, code }));
    });
    expect(out.code).toBe(0);
    expect(out.stdout).toContain(
      'ALLOW  allow bash command "rm -rf build" without asking: the OS sandbox contains it (sandbox.autoAllow): it is dangerous, and the sandbox contains what it can do.',
    );
    expect(out.stdout).toContain('Without the sandbox: ask bash command "rm -rf build"');
  });
});
