import { describe, it, expect, beforeAll, afterAll, jest } from '@jest/globals';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureDist, CLI } from '../support/dist.js';

const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'policy-cli-')));

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

afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

// Each case starts a few CLI processes; on a loaded machine one can take seconds.
jest.setTimeout(120_000);

describe('toolbelt policy', () => {
  it('explain prints the decision and the rule that made it (./toolbelt.policy.json found on its own)', async () => {
    const r = await toolbelt(['policy', 'explain', 'bash', '{"command":"git status && git push -f"}']);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      `DENY  deny bash command "git push -f": rule #1 {"tool":"bash","pattern":"git push *","action":"deny","reason":"no publishing from agents"} (no publishing from agents).\n` +
        `  (policy ${path.join(dir, 'toolbelt.policy.json')}, layered over the default policy)\n` +
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
    expect(def.stdout.split('\n')[0]).toMatch(
      /^ASK {2}ask read of \.env: default rule #1 \{"permission":"read","pattern":"\.env\*","action":"ask"/,
    );
    expect(def.stdout).toContain('(the default policy)');
    fs.rmSync(empty, { recursive: true, force: true });
  });

  it('explain names the layer of each decision: the file layers over the defaults (issue 21, item 1)', async () => {
    fs.writeFileSync(
      path.join(dir, 'trap.policy.json'),
      JSON.stringify({ rules: [{ tool: 'bash', pattern: 'git status*', action: 'allow' }] }),
    );
    const trap = await toolbelt([
      'policy',
      'explain',
      'bash',
      '{"command":"git status && rm -rf ~"}',
      '--policy',
      'trap.policy.json',
    ]);
    const file = path.join(dir, 'trap.policy.json');
    expect(trap.stdout.split('\n').slice(0, 4)).toEqual([
      expect.stringMatching(
        /^DENY {2}deny bash writes to \/.* \(a directory, with everything under it\): default rule #17 /,
      ),
      `  (policy ${file}, layered over the default policy)`,
      'Checks:',
      '  allow bash command "git status": rule #1 {"tool":"bash","pattern":"git status*","action":"allow"}',
    ]);
    const env = await toolbelt(['policy', 'explain', 'read', '{"filePath":".env"}', '--policy', 'trap.policy.json']);
    expect(env.stdout.split('\n')[0]).toMatch(/^ASK {2}ask read of \.env: default rule #1 /);
  });

  it('show prints the merged policy: both layers in precedence order, as text and as JSON', async () => {
    const text = await toolbelt(['policy', 'show']);
    const file = path.join(dir, 'toolbelt.policy.json');
    const lines = text.stdout.split('\n');
    expect(lines.slice(0, 6)).toEqual([
      `Policy: ${file}, layered over the default policy.`,
      'Default action: allow. Loop guard: {"threshold":3,"action":"deny"}.',
      'Precedence: deny (policy or defaults) > an "always" approval of this session > ask (policy) > allow (policy) > ask (defaults) > allow (defaults) > the default action.',
      `Rules of ${file} (1):`,
      '  rule #1 {"tool":"bash","pattern":"git push *","action":"deny","reason":"no publishing from agents"}',
      'Default rules (18):',
    ]);
    expect(lines[6]).toBe(
      '  default rule #1 {"permission":"read","pattern":".env*","action":"ask","reason":"it reads a file that usually holds secrets"}',
    );
    const json = JSON.parse((await toolbelt(['policy', 'show', '--json'])).stdout) as {
      extends: boolean;
      layers: Array<{ layer: string; rules: unknown[] }>;
    };
    expect(json.extends).toBe(true);
    expect(json.layers.map((l) => [l.layer, l.rules.length])).toEqual([
      ['policy', 1],
      ['defaults', 18],
    ]);
  });

  it('check validates a file with the line and field of each problem', async () => {
    const ok = await toolbelt(['policy', 'check']);
    expect(ok).toMatchObject({
      code: 0,
      stdout: `${path.join(dir, 'toolbelt.policy.json')}: OK (1 rules, default "allow", layered over the default policy).\n`,
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
