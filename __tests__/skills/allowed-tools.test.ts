/**
 * A skill's `allowed-tools` and the policy: with `skills: { honorAllowedTools: true }`, a skill the
 * session loaded lifts the policy's asks for the tools (and patterns) it lists, in that session
 * only; it never lifts a deny, nor an ask about anything it does not list; without the option it
 * lifts nothing. The decision names the skill.
 */
import { describe, it, expect, beforeEach, afterEach } from '@jest/globals';
import path from 'node:path';
import { createPolicy, createRegistry, registerBuiltinTools } from '../../src/index.js';
import { tempDir } from '../support/helpers.js';
import { makeSkill } from './make-skill.js';
import fs from 'node:fs/promises';

let ws: { dir: string; cleanup: () => Promise<void> };
let registry: ReturnType<typeof createRegistry>;

const policy = () =>
  createPolicy({
    rules: [
      { tool: 'bash', pattern: 'echo *', action: 'ask', reason: 'echo is watched' },
      { tool: 'bash', pattern: 'printf *', action: 'ask', reason: 'printf is watched' },
      { tool: 'bash', pattern: 'echo secret*', action: 'deny', reason: 'secrets stay' },
    ],
  });

beforeEach(async () => {
  ws = await tempDir('toolbelt-skills-allowed-');
  const folder = await makeSkill(path.join(ws.dir, '.agents/skills'), 'shouter', 'Shouts things.');
  await fs.writeFile(
    path.join(folder, 'SKILL.md'),
    '---\nname: shouter\ndescription: Shouts things.\nallowed-tools: Bash(echo:*) Read\n---\nRun echo.\n',
  );
});
afterEach(async () => {
  await registry.dispose();
  await ws.cleanup();
});

async function bash(command: string, sessionID: string) {
  return registry.execute('bash', { command, description: 'run' }, { sessionID }, { workspaceRoot: ws.dir });
}

describe('allowed-tools', () => {
  it('lifts asks for the tools a loaded skill lists, in that session only, and never a deny', async () => {
    registry = registerBuiltinTools(
      createRegistry({ policy: policy(), skills: { defaults: true, home: ws.dir, honorAllowedTools: true } }),
    );
    const initCtx = { workspaceRoot: ws.dir };
    expect((await bash('echo before', 's1')).error).toContain('echo is watched');
    expect((await registry.execute('skill', { name: 'shouter' }, { sessionID: 's1' }, initCtx)).success).toBe(true);
    const lifted = await bash('echo hello', 's1');
    expect(lifted.success).toBe(true);
    expect(lifted.result.output).toContain('hello');
    // Another session did not load the skill.
    expect((await bash('echo hello', 's2')).error).toContain('echo is watched');
    // Not listed by the skill: still asked.
    expect((await bash('printf hi', 's1')).error).toContain('printf is watched');
    // A deny is never lifted.
    expect((await bash('echo secret', 's1')).error).toContain('secrets stay');
    // The decision names the skill.
    const decision = await registry.policy!.decide(
      'bash',
      { command: 'echo x' },
      registry.policyEnvironment(initCtx),
      's1',
    );
    expect(decision.action).toBe('allow');
    expect(decision.skill).toEqual({ names: ['shouter'], entries: ['Bash(echo:*)'] });
    expect(decision.reason).toContain(
      'skill "shouter", loaded in this session, pre-approves it (allowed-tools Bash(echo:*)',
    );
  });

  it('lifts nothing unless the registry says honorAllowedTools', async () => {
    registry = registerBuiltinTools(createRegistry({ policy: policy(), skills: { defaults: true, home: ws.dir } }));
    const initCtx = { workspaceRoot: ws.dir };
    expect((await registry.execute('skill', { name: 'shouter' }, { sessionID: 's1' }, initCtx)).success).toBe(true);
    expect((await bash('echo hello', 's1')).error).toContain('echo is watched');
  });
});
