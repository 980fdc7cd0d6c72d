import { describe, it, expect, afterAll, beforeAll, jest } from '@jest/globals';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureDist, CLI } from './dist.js';

const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'policy-cli-')));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function toolbelt(args: string[], cwd = dir): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      { cwd, env: { ...process.env, AGENT_WORKSPACE_ROOT: '' } },
      (err, stdout, stderr) =>
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

beforeAll(async () => {
  await ensureDist();
  fs.writeFileSync(
    path.join(dir, 'toolbelt.policy.json'),
    JSON.stringify(
      { rules: [{ tool: 'bash', pattern: 'git push *', action: 'deny', reason: 'no publishing from agents' }] },
      null,
      2,
    ),
  );
  fs.writeFileSync(
    path.join(dir, 'other.policy.json'),
    JSON.stringify({ default: 'deny', rules: [{ tool: 'read', action: 'allow' }] }),
  );
  fs.writeFileSync(
    path.join(dir, 'broken.policy.json'),
    '{\n  "rules": [\n    { "tool": "bash", "action": "maybe" }\n  ]\n}\n',
  );
  fs.writeFileSync(path.join(dir, 'a.txt'), 'hello\n');
}, 300_000);

// Each case starts a few CLI processes; on a loaded machine one can take seconds.
jest.setTimeout(120_000);

describe('toolbelt policy', () => {
  it('explain prints the decision and the rule that made it (./toolbelt.policy.json found on its own)', async () => {
    const r = await toolbelt(['policy', 'explain', 'bash', '{"command":"git status && git push -f"}']);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      `DENY  deny bash command "git push -f": rule #1 {"tool":"bash","pattern":"git push *","action":"deny","reason":"no publishing from agents"} (no publishing from agents).\n` +
        `  (policy ${path.join(dir, 'toolbelt.policy.json')})\n` +
        `Checks:\n` +
        `  allow bash command "git status": the policy's default ("allow"), since no rule matches\n` +
        `  deny  bash command "git push -f": rule #1 {"tool":"bash","pattern":"git push *","action":"deny","reason":"no publishing from agents"}\n`,
    );
  });

  it('explain uses --policy FILE, and the default policy when there is no file', async () => {
    const other = await toolbelt([
      'policy',
      'explain',
      'write',
      '{"filePath":"a.txt","content":"x"}',
      '--policy',
      'other.policy.json',
    ]);
    expect(other.stdout.split('\n')[0]).toBe(
      `DENY  deny write of a.txt: the policy's default ("deny"), since no rule matches.`,
    );
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'policy-cli-empty-'));
    const def = await toolbelt(['policy', 'explain', 'read', '{"filePath":".env"}'], empty);
    fs.rmSync(empty, { recursive: true, force: true });
    expect(def.stdout.split('\n')[0]).toMatch(
      /^ASK {2}ask read of \.env: rule #1 \{"permission":"read","pattern":"\.env\*","action":"ask"/,
    );
    expect(def.stdout).toContain('(the default policy)');
  });

  it('check validates a file with the line and field of each problem', async () => {
    const ok = await toolbelt(['policy', 'check']);
    expect(ok).toMatchObject({
      code: 0,
      stdout: `${path.join(dir, 'toolbelt.policy.json')}: OK (1 rules, default "allow").\n`,
    });
    const bad = await toolbelt(['policy', 'check', 'broken.policy.json']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toBe(
      `toolbelt: Invalid policy ${path.join(dir, 'broken.policy.json')}:\n- line 3, rules[0].action: "maybe" is not an action; use one of allow, ask, deny\n`,
    );
  });

  it('run obeys the policy file it finds; a broken --policy is a usage error', async () => {
    const denied = await toolbelt(['run', 'bash', '{"command":"git push origin main","description":"push"}']);
    expect(denied.code).toBe(1);
    expect(denied.stderr).toContain(
      'The bash call was not run: bash command "git push origin main" is denied by rule #1',
    );
    const read = await toolbelt(['run', 'read', '{"filePath":"a.txt"}', '--policy', 'other.policy.json']);
    expect(read.code).toBe(0);
    const broken = await toolbelt(['run', 'read', '{"filePath":"a.txt"}', '--policy', 'broken.policy.json']);
    expect(broken.code).toBe(2);
    expect(broken.stderr).toContain('line 3, rules[0].action: "maybe" is not an action');
  });
});
