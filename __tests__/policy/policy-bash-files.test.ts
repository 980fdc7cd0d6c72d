/**
 * Path rules judge the files bash commands name as arguments and redirections: a deny on `.env`
 * for reads stops `cat .env`, `cp .env /tmp`, `grep -f .env`, ... and a deny on writes to
 * `secrets/**` stops `rm`, `tee`, `sed -i`, `dd of=`, ... — while a pattern word, a command that
 * reads no file, or an unrelated file passes.
 */
import { describe, afterAll, it, expect } from '@jest/globals';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createPolicy } from '../../src/policy/index.js';
import { createRegistry, registerBuiltinTools } from '../../src/index.js';
import { callTool } from '../support/tool-call.js';

const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'policy-bash-files-')));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
const env = { workspaceRoot: root, toolFacts: () => ({ permissions: ['execute' as const] }) };
const policy = createPolicy({
  default: 'allow',
  rules: [
    { permission: 'read', pattern: '.env', action: 'deny', reason: 'secrets' },
    { permission: 'write', pattern: 'secrets/**', action: 'deny' },
  ],
});
const action = async (command: string) => (await policy.decide('bash', { command }, env)).action;

const READS_OF_ENV = [
  'cat .env',
  'cat ./.env',
  'cat sub/../.env',
  `cat ${root}/.env`,
  'cat -n .env',
  'cat -- .env',
  'tac .env',
  'head .env',
  'head -n 5 .env',
  'head -c10 .env',
  'tail -n 1 .env',
  'less .env',
  'more .env',
  'nl .env',
  'wc -l .env',
  'sort .env',
  'sort -o out.txt .env',
  'uniq .env',
  'cut -d = -f 1 .env',
  'xxd .env',
  'od -c .env',
  'strings .env',
  'base64 .env',
  'md5sum .env',
  'sha256sum README.md .env',
  'diff .env README.md',
  'grep KEY .env',
  'grep -r -i KEY .env',
  'grep -e KEY .env',
  'grep -f .env README.md',
  'rg KEY .env',
  'sed -n 1p .env',
  "awk '{print}' .env",
  'awk -f .env README.md',
  'cp .env /tmp/stolen',
  'cp -r .env /tmp/',
  'mv .env public.txt',
  'dd if=.env of=/tmp/x',
  'source .env',
  '. .env',
  'cat < .env',
  '< .env cat',
  'ls && cat .env',
  'true; head .env',
  'echo hi | cat - .env',
  'echo "$(cat .env)"',
  'echo `cat .env`',
  "bash -c 'cat .env'",
  "sh -c 'tail .env'",
  'env FOO=1 cat .env',
  'FOO=1 cat .env',
  "c'a't .env",
  'x=$(head -1 .env)',
  '(cat .env)',
  '{ cat .env; }',
  'if true; then cat .env; fi',
  'for i in 1; do cat .env; done',
];

const WRITES_TO_SECRETS = [
  'rm secrets/a',
  'rm -rf secrets/a',
  'rm -f -- secrets/a',
  'tee secrets/a',
  'tee -a secrets/a < README.md',
  'cp README.md secrets/a',
  'install README.md secrets/a',
  'mv secrets/a elsewhere',
  'mv README.md secrets/a',
  'ln -s /etc/passwd secrets/a',
  'touch secrets/a',
  'truncate -s 0 secrets/a',
  'shred secrets/a',
  "sed -i 's/a/b/' secrets/a",
  'sed -i.bak -e s/a/b/ secrets/a',
  'chmod 600 secrets/a',
  'chown me secrets/a',
  'mkdir secrets/new',
  'dd if=README.md of=secrets/a',
  'sort -o secrets/a README.md',
  'uniq README.md secrets/a',
  'echo x > secrets/a',
  'echo x >> secrets/a',
];

const UNRELATED = [
  'cat README.md',
  'grep .env README.md',
  'grep -e .env README.md',
  "sed -e 's/.env/x/' README.md",
  "awk '/.env/' README.md",
  'echo .env',
  'ls -la .env',
  'cp README.md copy.md',
  'rm build/out.js',
  'chmod 600 README.md',
  'head -n 5 README.md',
  'cat secrets/a',
];

describe('bash file arguments and redirections are judged by path rules', () => {
  it(`denies ${READS_OF_ENV.length} commands that read .env`, async () => {
    const passed: string[] = [];
    for (const c of READS_OF_ENV) if ((await action(c)) !== 'deny') passed.push(c);
    expect(passed).toEqual([]);
  });

  it(`denies ${WRITES_TO_SECRETS.length} commands that write under secrets/`, async () => {
    const passed: string[] = [];
    for (const c of WRITES_TO_SECRETS) if ((await action(c)) !== 'deny') passed.push(c);
    expect(passed).toEqual([]);
  });

  it('lets commands through whose files the rules do not name', async () => {
    const stopped: string[] = [];
    for (const c of UNRELATED) if ((await action(c)) !== 'allow') stopped.push(`${c}: ${await action(c)}`);
    expect(stopped).toEqual([]);
  });

  it('asks when a file argument is only known at run time and a rule could match it', async () => {
    for (const c of ['cat $F', 'cat "$HOME/x"', 'cat .en*', 'head $(ls -a | grep env)', 'cd sub && cat x'])
      expect([c, await action(c)]).toEqual([c, 'ask']);
    const noPathRules = createPolicy({
      default: 'allow',
      extends: false,
      rules: [{ tool: 'bash', pattern: 'rm *', action: 'deny' }],
    });
    expect((await noPathRules.decide('bash', { command: 'cat $F' }, env)).action).toBe('allow');
  });

  it('only restricts: under a deny-by-default policy an allowed command needs no allow for its files', async () => {
    const strict = createPolicy({
      default: 'deny',
      rules: [
        { tool: 'bash', pattern: 'cat *', action: 'allow' },
        { permission: 'read', pattern: '.env', action: 'deny' },
      ],
    });
    expect((await strict.decide('bash', { command: 'cat README.md' }, env)).action).toBe('allow');
    const d = await strict.decide('bash', { command: 'cat README.md .env' }, env);
    expect(d.action).toBe('deny');
    expect(d.reason).toMatch(/bash reads \.env/);
  });

  it('a redirection is a full file check: under a deny-by-default policy it needs its own allow, like the write tool', async () => {
    const strict = createPolicy({ default: 'deny', rules: [{ tool: 'bash', pattern: 'cat *', action: 'allow' }] });
    const d = await strict.decide('bash', { command: 'cat README.md > out.txt' }, env);
    expect(d.action).toBe('deny');
    expect(d.reason).toMatch(/bash writes to out\.txt/);
    const allowed = createPolicy({
      default: 'deny',
      rules: [
        { tool: 'bash', pattern: 'cat *', action: 'allow' },
        { permission: 'write', pattern: 'out.txt', action: 'allow' },
      ],
    });
    expect((await allowed.decide('bash', { command: 'cat README.md > out.txt' }, env)).action).toBe('allow');
  });

  it('the default policy asks before bash reads a secret file, as the read tool does', async () => {
    const defaults = createPolicy();
    expect((await defaults.decide('bash', { command: 'cat .env.local' }, env)).action).toBe('ask');
    expect((await defaults.decide('bash', { command: 'cp id_rsa k.txt' }, env)).action).toBe('ask');
    // Copying it out of the workspace is a write outside it: denied, whatever the read.
    expect((await defaults.decide('bash', { command: 'cp id_rsa /tmp/k' }, env)).action).toBe('deny');
    expect((await defaults.decide('bash', { command: 'cat README.md' }, env)).action).toBe('allow');
  });

  it('judges both ends of a move (from and to) by path rules', async () => {
    const d = (from: string, to: string) =>
      policy.decide(
        'move',
        { from, to },
        { workspaceRoot: root, toolFacts: () => ({ permissions: ['write' as const] }) },
      );
    expect((await d('secrets/a', 'public.txt')).action).toBe('deny');
    expect((await d('notes.txt', 'secrets/a')).action).toBe('deny');
    expect((await d('notes.txt', 'notes2.txt')).action).toBe('allow');
  });

  it('through the LangChain adapter the model reads the denial and the command never runs', async () => {
    fs.writeFileSync(path.join(root, '.env'), 'KEY=secret\n');
    const registry = registerBuiltinTools(createRegistry({ policy }), ['bash']);
    const tools = await registry.tools({ initCtx: { workspaceRoot: root } });
    const res = await callTool(tools, 'bash', { command: 'cp .env leaked.txt', description: 'copy' });
    expect(res.status).toBe('error');
    expect(res.content).toMatch(/^The bash call was not run: bash reads \.env is denied by rule #1 .*\(secrets\)/);
    expect(fs.existsSync(path.join(root, 'leaked.txt'))).toBe(false);
  });
});
