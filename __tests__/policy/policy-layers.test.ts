/**
 * Issue 21, item 1: a policy layers over the defaults. One allow rule in a file pre-approves what
 * it names; the defaults' denies and asks keep applying to everything else; only `extends: false`
 * drops them. Through a real policy file, a real registry and real files in a temp workspace.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { createRegistry, registerBuiltinTools, createPolicy } from '../../src/index.js';
import { DEFAULT_POLICY, type CheckEnvironment } from '../../src/policy/index.js';
import { loadPolicyFile, PRECEDENCE } from '../../src/policy/policy.js';
import { parsePolicyText } from '../../src/policy/rules.js';
import { tempDir } from '../support/helpers.js';

let ws: { dir: string; cleanup: () => Promise<void> };
let env: CheckEnvironment;

beforeAll(async () => {
  ws = await tempDir('policy-layers-');
  // The built-ins' facts (read needs `read`, ...), as a registry gives them to its policy.
  env = registerBuiltinTools(createRegistry()).policyEnvironment({ workspaceRoot: ws.dir });
  fs.writeFileSync(path.join(ws.dir, '.env'), 'TOKEN=decoy\n');
  fs.writeFileSync(path.join(ws.dir, '.env.example'), 'TOKEN=\n');
  fs.mkdirSync(path.join(ws.dir, 'decoy'));
  fs.writeFileSync(path.join(ws.dir, 'decoy', 'keep.txt'), 'keep\n');
});
afterAll(() => ws.cleanup());

/** The trap of the issue: a file holding one allow rule. */
async function oneAllowFile(extra: Record<string, unknown> = {}) {
  const file = path.join(ws.dir, `policy-${Math.random().toString(36).slice(2)}.json`);
  fs.writeFileSync(
    file,
    JSON.stringify({ rules: [{ tool: 'bash', pattern: 'git status*', action: 'allow' }], ...extra }, null, 2),
  );
  try {
    return await loadPolicyFile(file);
  } finally {
    fs.rmSync(file);
  }
}

describe('a policy file layers over the default policy', () => {
  it('one allow rule for `git status*` pre-approves git status, and nothing else loses its protection', async () => {
    const policy = await oneAllowFile();
    expect((await policy.decide('bash', { command: 'git status' }, env)).action).toBe('allow');
    // Never run: judged only. `rm -rf ~` writes outside the workspace (a default deny).
    const trap = await policy.decide('bash', { command: 'git status && rm -rf ~' }, env);
    expect(trap.action).toBe('deny');
    expect(trap.reason).toMatch(/default rule #17 .*it writes outside the workspace/);
    const inside = await policy.decide('bash', { command: 'git status && rm -rf decoy' }, env);
    expect(inside.action).toBe('ask');
    expect(inside.reason).toMatch(/^ask bash command "rm -rf decoy": default rule #18 /);
    const secret = await policy.decide('read', { filePath: '.env' }, env);
    expect(secret.action).toBe('ask');
    expect(secret.layer).toBe('defaults');
    expect((await policy.decide('bash', { command: 'git status; cat .env' }, env)).action).toBe('ask');
  });

  it('through a registry the trap refuses the read of .env and the rm, and runs the pre-approved command', async () => {
    const registry = registerBuiltinTools(createRegistry({ policy: await oneAllowFile() }));
    const initCtx = { workspaceRoot: ws.dir };
    const read = await registry.execute('read', { filePath: '.env' }, { sessionID: 's' }, initCtx);
    expect(read.error).toMatch(/^The read call was not run: read of \.env needs approval by default rule #1 /);
    const rm = await registry.execute(
      'bash',
      { command: 'git status; rm -rf decoy', description: 'x' },
      { sessionID: 's' },
      initCtx,
    );
    expect(rm.error).toMatch(/bash command "rm -rf decoy" needs approval by default rule #18/);
    expect(fs.existsSync(path.join(ws.dir, 'decoy', 'keep.txt'))).toBe(true);
  });

  it('a policy allow pre-approves past a default ask, but never past a default deny', async () => {
    const policy = createPolicy({
      rules: [
        { permission: 'read', pattern: '.env.example', action: 'allow' },
        { permission: 'write', pattern: '/tmp/**', action: 'allow' },
      ],
    });
    const example = await policy.decide('read', { filePath: '.env.example' }, env);
    expect([example.action, example.layer, example.ruleIndex]).toEqual(['allow', 'policy', 0]);
    // The same file named by a bash command: the allow about the file pre-approves it too.
    expect((await policy.decide('bash', { command: 'cat .env.example' }, env)).action).toBe('allow');
    expect((await policy.decide('read', { filePath: '.env' }, env)).action).toBe('ask');
    const outside = await policy.decide('write', { filePath: '/tmp/policy-layers-never.txt', content: 'x' }, env);
    expect([outside.action, outside.layer]).toEqual(['deny', 'defaults']);
  });

  it('an allow about a command never pre-approves the files the command names', async () => {
    const policy = createPolicy({ rules: [{ tool: 'bash', action: 'allow' }] });
    expect((await policy.decide('bash', { command: 'ls' }, env)).action).toBe('allow');
    expect((await policy.decide('bash', { command: 'cat .env' }, env)).action).toBe('ask');
  });

  it('a policy ask or deny beats a policy allow and every default', async () => {
    const policy = createPolicy({
      rules: [
        { permission: 'read', pattern: '*.md', action: 'allow' },
        { permission: 'read', pattern: 'notes.md', action: 'deny' },
        { tool: 'bash', pattern: 'ls *', action: 'ask' },
      ],
    });
    expect((await policy.decide('read', { filePath: 'notes.md' }, env)).action).toBe('deny');
    expect((await policy.decide('read', { filePath: 'a.md' }, env)).action).toBe('allow');
    expect((await policy.decide('bash', { command: 'ls' }, env)).action).toBe('ask');
  });

  it('`extends: false` is the explicit step that drops the defaults (in a file and in code)', async () => {
    const replaced = await oneAllowFile({ extends: false });
    expect(replaced.extendsDefaults).toBe(false);
    expect(replaced.defaults).toEqual([]);
    expect((await replaced.decide('read', { filePath: '.env' }, env)).action).toBe('allow');
    expect((await replaced.decide('bash', { command: 'git status && rm -rf ~' }, env)).action).toBe('allow');
    const inCode = createPolicy({ extends: false, default: 'deny', rules: [] });
    expect((await inCode.decide('read', { filePath: 'a.txt' }, env)).action).toBe('deny');
  });

  it('the default action and loop guard come from the defaults unless the file sets them', async () => {
    const layered = await oneAllowFile();
    expect(layered.fallback).toBe('allow');
    expect(layered.loopGuard).toEqual(DEFAULT_POLICY.loopGuard);
    const strict = await oneAllowFile({ default: 'deny', loopGuard: false });
    expect(strict.fallback).toBe('deny');
    expect(strict.loopGuard).toBe(false);
    expect((await strict.decide('bash', { command: 'ls' }, env)).action).toBe('deny');
  });

  it('createPolicy() is the defaults once, not two copies; merged() lists both layers and the precedence', () => {
    const plain = createPolicy();
    expect(plain.rules).toEqual([]);
    expect(plain.defaults).toEqual(DEFAULT_POLICY.rules);
    const merged = createPolicy({ rules: [{ tool: 'bash', pattern: 'git status*', action: 'allow' }] }).merged();
    expect(merged.layers.map((l) => [l.layer, l.rules.length])).toEqual([
      ['policy', 1],
      ['defaults', DEFAULT_POLICY.rules.length],
    ]);
    expect(merged.precedence).toBe(PRECEDENCE);
    expect(merged.extends).toBe(true);
  });

  it('"extends" must be a boolean; the problem names its line', () => {
    expect(() => parsePolicyText('{\n  "rules": [],\n  "extends": "no"\n}')).toThrow(
      /line 3, extends: "no" must be true \(layer over the default policy, the default\) or false/,
    );
  });
});
