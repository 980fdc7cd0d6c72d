import { describe, afterAll, it, expect, beforeAll } from '@jest/globals';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createPolicy, type Policy } from '../../src/policy/index.js';
import { ALLOWED_COMPOUNDS, BYPASS_ALLOWED, BYPASS_COMMANDS } from '../fixtures/bash-bypass.js';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'policy-bypass-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
const env = { workspaceRoot: root, toolFacts: () => ({ permissions: ['execute' as const] }) };
let policy: Policy;

beforeAll(() => {
  policy = createPolicy({
    default: 'ask',
    rules: BYPASS_ALLOWED.map((pattern) => ({ tool: 'bash', pattern, action: 'allow' as const })),
  });
});

describe('bash bypass suite: an allow rule for the first command never lets the rest through', () => {
  it(`has at least 100 commands`, () => {
    // The count the issue asks to print.
    process.stdout.write(`bash bypass suite: ${BYPASS_COMMANDS.length} commands\n`);
    expect(BYPASS_COMMANDS.length).toBeGreaterThanOrEqual(100);
  });

  it('refuses to allow every one of them', async () => {
    const passed: string[] = [];
    for (const command of BYPASS_COMMANDS) {
      const d = await policy.decide('bash', { command }, env);
      if (d.action === 'allow') passed.push(command);
    }
    expect(passed).toEqual([]);
  });

  it('still allows compounds made only of allowed commands (so the suite can fail)', async () => {
    const refused: string[] = [];
    for (const command of ALLOWED_COMPOUNDS) {
      const d = await policy.decide('bash', { command }, env);
      if (d.action !== 'allow') refused.push(`${command} -> ${d.reason}`);
    }
    expect(refused).toEqual([]);
  });

  it('names the command that was not allowed', async () => {
    const d = await policy.decide('bash', { command: 'ls && r""m -rf build' }, env);
    expect(d.action).toBe('ask');
    expect(d.reason).toBe(
      `ask bash command "rm -rf build": default rule #18 {"tool":"bash","danger":"dangerous","action":"ask","reason":"the command is dangerous"} (the command is dangerous).`,
    );
  });
});
