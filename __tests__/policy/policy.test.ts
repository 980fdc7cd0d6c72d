import { describe, afterAll, it, expect } from '@jest/globals';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  createPolicy,
  DEFAULT_POLICY,
  parsePolicyText,
  PolicyError,
  policyProblems,
  type PolicyConfig,
  type PolicyRule,
  type ToolFacts,
} from '../../src/policy/index.js';

const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'policy-')));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
fs.mkdirSync(path.join(root, 'a'));
fs.writeFileSync(path.join(root, '.env'), 'SECRET=1');
fs.symlinkSync(path.join(root, '.env'), path.join(root, 'innocent.txt'));

const FACTS: Record<string, ToolFacts> = {
  read: { permissions: ['read'] },
  write: { permissions: ['write'] },
  bash: { permissions: ['execute'] },
  webfetch: { permissions: ['network'] },
  http_request: { permissions: ['network'] },
  github__create_issue: { permissions: ['network'] },
};
const env = { workspaceRoot: root, toolFacts: (id: string) => FACTS[id] };

async function action(rules: PolicyRule[], tool: string, args: unknown, fallback: PolicyConfig['default'] = 'allow') {
  // The rules alone: `extends: false`, so the defaults' layer does not mix in.
  return (await createPolicy({ rules, default: fallback, extends: false }).decide(tool, args, env)).action;
}

describe('rule types', () => {
  it('tool: by id or glob', async () => {
    expect(await action([{ tool: 'write', action: 'deny' }], 'write', { filePath: 'x' })).toBe('deny');
    expect(await action([{ tool: 'write', action: 'deny' }], 'read', { filePath: 'x' })).toBe('allow');
    expect(await action([{ tool: 'github__*', action: 'ask' }], 'github__create_issue', {})).toBe('ask');
  });

  it('permission: any permission the tool requires', async () => {
    expect(await action([{ permission: 'network', action: 'deny' }], 'webfetch', { url: 'https://a.example' })).toBe(
      'deny',
    );
    expect(await action([{ permission: 'network', action: 'deny' }], 'read', { filePath: 'x' })).toBe('allow');
  });

  it('danger: deny/ask reach up, allow reaches down', async () => {
    const rules: PolicyRule[] = [{ tool: 'bash', danger: 'moderate', action: 'ask' }];
    expect(await action(rules, 'bash', { command: 'rm -rf build' })).toBe('ask'); // dangerous >= moderate
    expect(await action(rules, 'bash', { command: 'ls' })).toBe('allow');
    const allowSafe: PolicyRule[] = [{ tool: 'bash', danger: 'safe', action: 'allow' }];
    expect(await action(allowSafe, 'bash', { command: 'ls -la' }, 'ask')).toBe('allow');
    expect(await action(allowSafe, 'bash', { command: 'rm -rf build' }, 'ask')).toBe('ask');
  });

  it('pattern on file tools matches the resolved workspace path', async () => {
    const rules: PolicyRule[] = [{ permission: 'read', pattern: '.env*', action: 'deny' }];
    expect(await action(rules, 'read', { filePath: './a/../.env' })).toBe('deny');
    expect(await action(rules, 'read', { filePath: path.join(root, '.env') })).toBe('deny');
    expect(await action(rules, 'read', { filePath: 'a/.env.local' })).toBe('deny');
    // A symlink to .env is .env.
    expect(await action(rules, 'read', { filePath: 'innocent.txt' })).toBe('deny');
    expect(await action(rules, 'read', { filePath: 'src/env.ts' })).toBe('allow');
    // Anchored patterns (with a slash) are relative to the workspace root.
    expect(await action([{ tool: 'read', pattern: 'a/*.ts', action: 'deny' }], 'read', { filePath: 'a/x.ts' })).toBe(
      'deny',
    );
    expect(await action([{ tool: 'read', pattern: 'a/*.ts', action: 'deny' }], 'read', { filePath: 'b/a/x.ts' })).toBe(
      'allow',
    );
  });

  it('an allow pattern must match every spelling of the path (a link out of src/ is not src/**)', async () => {
    fs.mkdirSync(path.join(root, 'src'), { recursive: true });
    fs.symlinkSync('/etc/hostname', path.join(root, 'src', 'host'));
    const rules: PolicyRule[] = [{ tool: 'read', pattern: 'src/**', action: 'allow' }];
    expect(await action(rules, 'read', { filePath: 'src/a.ts' }, 'deny')).toBe('allow');
    expect(await action(rules, 'read', { filePath: 'src/host' }, 'deny')).toBe('deny');
  });

  it('outsideWorkspace matches paths that resolve outside every root', async () => {
    const rules: PolicyRule[] = [{ permission: 'write', outsideWorkspace: true, action: 'deny' }];
    expect(await action(rules, 'write', { filePath: '/etc/passwd' })).toBe('deny');
    expect(await action(rules, 'write', { filePath: '../outside.txt' })).toBe('deny');
    expect(await action(rules, 'write', { filePath: 'a/inside.txt' })).toBe('allow');
    // Redirections in bash are writes too.
    expect(await action(rules, 'bash', { command: 'echo x > /etc/cron.d/job' })).toBe('deny');
    expect(await action(rules, 'bash', { command: 'echo x > a/out.txt' })).toBe('allow');
  });

  it('pattern on bash matches each simple command', async () => {
    const rules: PolicyRule[] = [{ tool: 'bash', pattern: 'git push *', action: 'deny' }];
    expect(await action(rules, 'bash', { command: 'git status && git push origin main' })).toBe('deny');
    expect(await action(rules, 'bash', { command: 'git push' })).toBe('deny');
    expect(await action(rules, 'bash', { command: 'git status' })).toBe('allow');
  });

  it('pattern on webfetch matches the host, or the URL when it has a scheme', async () => {
    expect(
      await action([{ tool: 'webfetch', pattern: '*.internal.example', action: 'deny' }], 'webfetch', {
        url: 'https://db.internal.example/x',
      }),
    ).toBe('deny');
    expect(
      await action(
        [{ tool: 'webfetch', pattern: 'https://docs.example/*', action: 'allow' }],
        'webfetch',
        { url: 'https://docs.example/a' },
        'deny',
      ),
    ).toBe('allow');
    expect(
      await action(
        [{ tool: 'webfetch', pattern: 'https://docs.example/*', action: 'allow' }],
        'webfetch',
        { url: 'http://docs.example/a' },
        'deny',
      ),
    ).toBe('deny');
  });

  it('http_request is judged by URL and host like webfetch, and a URL password never reaches the label', async () => {
    const deny: PolicyRule[] = [{ permission: 'network', pattern: '*.internal.example', action: 'deny' }];
    for (const method of ['GET', 'POST', 'DELETE'])
      expect(await action(deny, 'http_request', { method, url: 'https://db.internal.example/x' })).toBe('deny');
    expect(await action(deny, 'http_request', { method: 'GET', url: 'https://api.example/x' })).toBe('allow');
    const allowOnly: PolicyRule[] = [{ tool: 'http_request', pattern: 'https://api.example/*', action: 'allow' }];
    expect(await action(allowOnly, 'http_request', { method: 'GET', url: 'https://api.example/v1' }, 'deny')).toBe(
      'allow',
    );
    expect(await action(allowOnly, 'http_request', { method: 'GET', url: 'https://evil.example/v1' }, 'deny')).toBe(
      'deny',
    );
    const decision = await createPolicy({ rules: deny }).decide(
      'http_request',
      { method: 'GET', url: 'https://user:hunter2@db.internal.example/x' },
      env,
    );
    expect(decision.action).toBe('deny');
    expect(JSON.stringify(decision)).not.toContain('hunter2');
  });

  it('pattern on MCP tools matches the server', async () => {
    expect(await action([{ pattern: 'github', action: 'ask' }], 'github__create_issue', { title: 'x' })).toBe('ask');
    expect(await action([{ pattern: 'gitlab', action: 'ask' }], 'github__create_issue', { title: 'x' })).toBe('allow');
  });
});

describe('precedence: deny > ask > allow, whatever the order', () => {
  const orders = (rules: PolicyRule[]) => [rules, [...rules].reverse()];

  it.each([
    [
      'deny beats allow',
      [
        { tool: 'bash', action: 'allow' },
        { tool: 'bash', action: 'deny' },
      ],
      'deny',
    ],
    [
      'deny beats ask',
      [
        { tool: 'bash', action: 'ask' },
        { tool: 'bash', action: 'deny' },
      ],
      'deny',
    ],
    [
      'ask beats allow',
      [
        { tool: 'bash', action: 'allow' },
        { tool: 'bash', action: 'ask' },
      ],
      'ask',
    ],
    [
      'a specific allow cannot widen a broad deny',
      [
        { permission: 'execute', action: 'deny' },
        { tool: 'bash', pattern: 'ls *', action: 'allow' },
      ],
      'deny',
    ],
    [
      'a specific allow cannot widen a broad ask',
      [
        { tool: 'bash', danger: 'safe', action: 'ask' },
        { tool: 'bash', pattern: 'ls', action: 'allow' },
      ],
      'ask',
    ],
  ] as Array<[string, PolicyRule[], string]>)('%s', async (_name, rules, expected) => {
    for (const r of orders(rules)) expect(await action(r, 'bash', { command: 'ls' })).toBe(expected);
  });

  it('the default applies only when no rule matches', async () => {
    expect(await action([], 'bash', { command: 'ls' }, 'deny')).toBe('deny');
    expect(await action([{ tool: 'bash', action: 'allow' }], 'bash', { command: 'ls' }, 'deny')).toBe('allow');
  });

  it('a command that cannot be read is asked even when the default allows, and never matches an allow pattern', async () => {
    expect(await action([], 'bash', { command: '$CMD -rf /' })).toBe('ask');
    expect(await action([{ tool: 'bash', pattern: '*', action: 'allow' }], 'bash', { command: '$CMD x' }, 'deny')).toBe(
      'deny',
    );
    // A deny pattern that might have matched makes it ask even under a blanket allow.
    const rules: PolicyRule[] = [
      { tool: 'bash', action: 'allow' },
      { tool: 'bash', pattern: 'rm *', action: 'deny' },
    ];
    expect(await action(rules, 'bash', { command: '$(echo rm) -rf /' })).toBe('ask');
  });

  it('explains which rule decided', async () => {
    const policy = createPolicy({
      rules: [{ tool: 'bash', pattern: 'git push *', action: 'deny', reason: 'no publishing' }],
    });
    const d = await policy.decide('bash', { command: 'ls; git push -f' }, env);
    expect(d.reason).toBe(
      'deny bash command "git push -f": rule #1 {"tool":"bash","pattern":"git push *","action":"deny","reason":"no publishing"} (no publishing).',
    );
    expect(d.checks.map((c) => c.action)).toEqual(['allow', 'deny']);
  });
});

describe('approvals through onPermissionRequest', () => {
  const rules: PolicyRule[] = [
    { tool: 'bash', danger: 'dangerous', action: 'ask' },
    { tool: 'bash', pattern: 'shutdown *', action: 'deny' },
  ];
  const req = (command: string, callID = 'c1', sessionID = 's1') => ({
    toolId: 'bash',
    args: { command },
    callID,
    sessionID,
    env,
  });

  it('without a handler, ask is a denial the model can read', async () => {
    const r = await createPolicy({ rules }).authorize(req('rm -rf build'));
    expect(r).toMatchObject({ allowed: false });
    expect(!r.allowed && r.message).toBe(
      'The bash call was not run: bash command "rm -rf build" needs approval by rule #1 {"tool":"bash","danger":"dangerous","action":"ask"}, and no approver is configured to grant it. Do not retry it; do the task another way or ask the user to allow it in the policy.',
    );
  });

  it('once allows this call only', async () => {
    const asked: string[] = [];
    const policy = createPolicy({ rules }, { onPermissionRequest: (r) => (asked.push(r.callID), 'once') });
    expect((await policy.authorize(req('rm -rf build', 'c1'))).allowed).toBe(true);
    expect((await policy.authorize(req('rm -rf build', 'c2'))).allowed).toBe(true);
    expect(asked).toEqual(['c1', 'c2']);
  });

  it('always allows the same checks for the rest of the session, never across sessions, never over a deny', async () => {
    const asked: string[] = [];
    const policy = createPolicy(
      { rules },
      { onPermissionRequest: (r) => (asked.push(`${r.sessionID}:${r.callID}`), 'always') },
    );
    expect((await policy.authorize(req('rm -rf build', 'c1'))).allowed).toBe(true);
    expect((await policy.authorize(req('rm -rf build', 'c2'))).allowed).toBe(true);
    expect((await policy.authorize(req('rm -rf build', 'c3', 's2'))).allowed).toBe(true);
    expect(asked).toEqual(['s1:c1', 's2:c3']);
    // A different dangerous command is asked again.
    await policy.authorize(req('rm -rf other', 'c4'));
    expect(asked).toEqual(['s1:c1', 's2:c3', 's1:c4']);
    // "always" for a shutdown cannot be given: the deny decides before anyone is asked.
    const r = await policy.authorize(req('shutdown -h now', 'c5'));
    expect(r.allowed).toBe(false);
    expect(asked).toHaveLength(3);
  });

  it("reject refuses with the approver's message", async () => {
    const policy = createPolicy(
      { rules },
      { onPermissionRequest: () => ({ reply: 'reject', message: 'use the build script' }) },
    );
    const r = await policy.authorize(req('rm -rf build'));
    expect(!r.allowed && r.message).toBe(
      'The bash call was not run: the user rejected it with this message: use the build script. Do not retry the same call.',
    );
  });

  it('a one-call grant is bound to the call id and the arguments hash', async () => {
    const policy = createPolicy({ rules, extends: false });
    policy.grantCall('c1', 'bash', { command: 'rm -rf build' });
    expect((await policy.authorize(req('rm -rf build', 'c2'))).allowed).toBe(false); // other call
    const edited = await policy.authorize(req('rm -rf /', 'c1')); // same call, other arguments
    expect(!edited.allowed && edited.message).toMatch(/was given for different arguments/);
    policy.grantCall('c1', 'bash', { command: 'rm -rf build' });
    expect((await policy.authorize(req('rm -rf build', 'c1'))).allowed).toBe(true);
    // Spent: the same call id cannot run twice on one grant.
    expect((await policy.authorize(req('rm -rf build', 'c1'))).allowed).toBe(false);
  });

  it('an approver that throws is a refusal, not a crash', async () => {
    const policy = createPolicy(
      { rules },
      {
        onPermissionRequest: () => {
          throw new Error('UI gone');
        },
      },
    );
    const r = await policy.authorize(req('rm -rf build'));
    expect(!r.allowed && r.message).toMatch(/asking for approval failed \(UI gone\)/);
  });
});

describe('the default policy', () => {
  const policy = createPolicy(DEFAULT_POLICY);
  it.each([
    ['read', { filePath: '.env' }, 'ask'],
    ['read', { filePath: 'config/.env.production' }, 'ask'],
    ['read', { filePath: 'certs/server.pem' }, 'ask'],
    ['read', { filePath: '/home/u/.ssh/id_ed25519' }, 'ask'],
    ['read', { filePath: 'src/index.ts' }, 'allow'],
    ['write', { filePath: '/etc/passwd' }, 'deny'],
    ['write', { filePath: 'src/index.ts' }, 'allow'],
    ['bash', { command: 'rm -rf build' }, 'ask'],
    ['bash', { command: 'npm test' }, 'allow'],
    ['bash', { command: 'echo x > ../outside' }, 'deny'],
  ] as Array<[string, unknown, string]>)('%s %j -> %s', async (tool, args, expected) => {
    expect((await policy.decide(tool, args, env)).action).toBe(expected);
  });
});

describe('policy files', () => {
  it('reports every problem with its line and field', () => {
    const text = `{
  "default": "maybe",
  "rules": [
    { "tool": "bash", "action": "allow" },
    { "tool": "read", "action": "permit" },
    { "permission": "admin", "action": "deny" },
    { "action": "ask" },
    { "tool": "bash", "danger": "scary", "action": "ask", "colour": "red" }
  ]
}`;
    let error: PolicyError | undefined;
    try {
      parsePolicyText(text, 'toolbelt.policy.json');
    } catch (err) {
      error = err as PolicyError;
    }
    expect(error).toBeInstanceOf(PolicyError);
    expect(error!.problems.map((p) => `${p.line} ${p.path}`)).toEqual([
      '2 default',
      '5 rules[1].action',
      '6 rules[2].permission',
      '7 rules[3]',
      '8 rules[4].colour',
      '8 rules[4].danger',
    ]);
    expect(error!.message).toContain(
      '- line 5, rules[1].action: "permit" is not an action; use one of allow, ask, deny',
    );
  });

  it('reports JSON syntax errors with their line', () => {
    expect(() => parsePolicyText('{\n  "rules": [\n    { "tool": "bash", }\n  ]\n}')).toThrow(/line 3/);
  });

  it('a file holding only "sandbox" is a policy with no rules of its own, layered over the defaults', () => {
    const config = parsePolicyText('{ "sandbox": { "mode": "required" } }');
    expect(config).toEqual({ sandbox: { mode: 'required' }, rules: [] });
    const policy = createPolicy(config);
    expect(policy.rules).toEqual([]);
    expect(policy.extendsDefaults).toBe(true);
    expect(policy.sandbox).toEqual({ mode: 'required' });
    // "rules" that is there must still be a list
    expect(() => parsePolicyText('{ "rules": {} }')).toThrow(/rules: must be an array of rules/);
  });

  it('rules given in code are validated the same way', () => {
    expect(() => createPolicy({ rules: [{ tool: 'bash', action: 'allwo' as never }] })).toThrow(
      'Invalid policy:\n- rules[0].action: "allwo" is not an action; use one of allow, ask, deny',
    );
  });
});

describe('the shipped JSON Schema agrees with the validator', () => {
  it('accepts what the validator accepts and refuses what it refuses', async () => {
    const { default: Ajv } = (await import('ajv')) as unknown as {
      default: new (o: object) => { compile(s: object): (v: unknown) => boolean };
    };
    const schema = JSON.parse(
      fs.readFileSync(path.join(__dirname_of(), '..', '..', 'docs', 'toolbelt.policy.schema.json'), 'utf8'),
    );
    const validate = new Ajv({ strict: false }).compile(schema);
    const cases: unknown[] = [
      DEFAULT_POLICY,
      { rules: [] },
      { rules: [{ tool: 'bash', pattern: 'git *', action: 'allow' }], default: 'ask', loopGuard: false },
      { rules: [{ action: 'ask' }] },
      { rules: [{ tool: 'bash', action: 'permit' }] },
      { rules: [{ tool: 'bash', action: 'deny', colour: 'red' }] },
      { rules: [], default: 'maybe' },
      { rules: [], loopGuard: { threshold: 1 } },
      { rules: [{ permission: 'admin', action: 'deny' }] },
      { rules: [], extends: false },
      {},
      { sandbox: { mode: 'required' } },
      { rules: 'none' },
      { rules: [], extends: 'no' },
      { rules: [], loopGuard: { exempt: ['bash_output', 'poll'] } },
      { rules: [], loopGuard: { exempt: 'poll' } },
    ];
    for (const value of cases) {
      const ours = policyProblems(value).length === 0;
      expect([JSON.stringify(value), validate(JSON.parse(JSON.stringify(value)))]).toEqual([
        JSON.stringify(value),
        ours,
      ]);
    }
  });
});

function __dirname_of(): string {
  return path.dirname(new URL(import.meta.url).pathname);
}
