/**
 * The CLI and Agent Skills, as a user runs it (dist/cli.js in a child process, HOME a temp dir):
 * `skills list [--json]`, `skills check [DIR]` (exit 1 on a problem), `skills import DIR --store`
 * (PostgreSQL, when installed), `policy explain --skill`, `agent` offering `skill` only when skills
 * exist (`--no-skills` leaves it out, against the OpenAI mock), and `mcp` serving each skill as a
 * prompt to the MCP SDK's stdio client.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ensureDist, CLI, runCli } from '../support/dist.js';
import { tempDir } from '../support/helpers.js';
import { makeSkill } from '../skills/make-skill.js';
import { startMockProvider } from '../providers/mock-server.js';
import { sentTools } from '../providers/subsets.js';
import { startPostgres, type PgServer } from '../support/postgres-server.js';

let ws: Awaited<ReturnType<typeof tempDir>>;
let home: Awaited<ReturnType<typeof tempDir>>;
let state: Awaited<ReturnType<typeof tempDir>>;

function env(extra: Record<string, string> = {}): Record<string, string> {
  return {
    ...(process.env as Record<string, string>),
    HOME: home.dir,
    TMPDIR: os.tmpdir(),
    TOOLBELT_STATE_DIR: state.dir,
    ...extra,
  };
}

function toolbelt(args: string[], extra: Record<string, string> = {}, cwd = ws.dir) {
  return runCli(args, cwd, env(extra));
}

beforeAll(async () => {
  await ensureDist();
  ws = await tempDir('toolbelt-cli-skills-');
  home = await tempDir('toolbelt-cli-skills-home-');
  state = await tempDir('toolbelt-cli-skills-state-');
  await makeSkill(path.join(ws.dir, '.agents/skills'), 'good', 'A good workspace skill.');
  const shout = await makeSkill(path.join(home.dir, '.claude/skills'), 'shouter', 'Shouts.');
  await fs.writeFile(
    path.join(shout, 'SKILL.md'),
    '---\nname: shouter\ndescription: Shouts.\nallowed-tools: Bash(echo:*)\n---\nRun echo.\n',
  );
  await fs.mkdir(path.join(ws.dir, '.claude/skills/broken'), { recursive: true });
  await fs.writeFile(path.join(ws.dir, '.claude/skills/broken/SKILL.md'), '---\nname: broken\n---\nno description\n');
  await fs.writeFile(
    path.join(ws.dir, 'toolbelt.policy.json'),
    JSON.stringify({ rules: [{ tool: 'bash', pattern: 'echo *', action: 'ask', reason: 'echo is watched' }] }),
  );
}, 180_000);
afterAll(async () => {
  await ws.cleanup();
  await home.cleanup();
  await state.cleanup();
});

describe('toolbelt skills', () => {
  it('list: every skill with its source, and the problems', async () => {
    const res = await toolbelt(['skills', 'list']);
    expect(res.code).toBe(0);
    expect(res.stdout).toContain(
      `good  (workspace: ${path.join(ws.dir, '.agents/skills/good')})\n  A good workspace skill.`,
    );
    expect(res.stdout).toContain(`shouter  (user: ${path.join(home.dir, '.claude/skills/shouter')})`);
    expect(res.stdout).toContain(
      `error: ${path.join(ws.dir, '.claude/skills/broken/SKILL.md')}: the frontmatter has no "description"`,
    );
    const json = JSON.parse((await toolbelt(['skills', 'list', '--json'])).stdout) as {
      skills: Array<{ name: string; source: string; allowedTools?: string[] }>;
      problems: Array<{ field?: string }>;
    };
    expect(json.skills.map((s) => [s.name, s.source])).toEqual([
      ['good', 'workspace'],
      ['shouter', 'user'],
    ]);
    expect(json.skills[1].allowedTools).toEqual(['Bash(echo:*)']);
    expect(json.problems).toContainEqual(expect.objectContaining({ field: 'description', severity: 'error' }));
  });

  it('check: exit 1 with every problem; exit 0 for a folder without any', async () => {
    const all = await toolbelt(['skills', 'check']);
    expect(all.code).toBe(1);
    expect(all.stdout).toContain('the frontmatter has no "description"');
    expect(all.stdout).toContain('2 skills valid in the standard places; 1 problem skips a skill.');
    const one = await toolbelt(['skills', 'check', path.join(ws.dir, '.agents/skills')]);
    expect(one.code).toBe(0);
    expect(one.stdout).toContain(`1 skill valid in ${path.join(ws.dir, '.agents/skills')}; 0 problems skip a skill.`);
  });

  it('policy explain --skill names the skill that lifts the ask', async () => {
    const without = await toolbelt(['policy', 'explain', 'bash', '{"command":"echo hi"}']);
    expect(without.stdout).toMatch(/^ASK /);
    const res = await toolbelt(['policy', 'explain', 'bash', '{"command":"echo hi"}', '--skill', 'shouter']);
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(
      /^ALLOW .*skill "shouter", loaded in this session, pre-approves it \(allowed-tools Bash\(echo:\*\)/,
    );
    const missing = await toolbelt(['policy', 'explain', 'bash', '{"command":"echo hi"}', '--skill', 'nope']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('No skill is named "nope" here. Skills: good, shouter');
  });

  it('agent: offers skill when skills exist, and not with --no-skills', async () => {
    const mock = await startMockProvider([{ text: 'ok' }, { text: 'ok' }]);
    try {
      const keys = { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: `${mock.url}/v1` };
      expect((await toolbelt(['agent', 'hi', '--model', 'openai:gpt-4o-mini'], keys)).code).toBe(0);
      expect((await toolbelt(['agent', 'hi', '--model', 'openai:gpt-4o-mini', '--no-skills'], keys)).code).toBe(0);
      const offered = (n: number) => sentTools('openai-chat', mock.requests[n].body).map((t) => t.name);
      expect(offered(0)).toContain('skill');
      expect(sentTools('openai-chat', mock.requests[0].body).find((t) => t.name === 'skill')?.description).toContain(
        '- good: A good workspace skill.',
      );
      expect(offered(1)).not.toContain('skill');
    } finally {
      await mock.close();
    }
  });

  it('mcp: each skill is a prompt for an MCP client over stdio', async () => {
    const client = new Client({ name: 'test', version: '1' });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [CLI, 'mcp'],
        cwd: ws.dir,
        env: env(),
        stderr: 'ignore',
      }),
    );
    try {
      expect((await client.listPrompts()).prompts.map((p) => p.name)).toEqual(['good', 'shouter']);
      const got = await client.getPrompt({ name: 'shouter' });
      expect((got.messages[0].content as { text: string }).text).toContain('Run echo.');
    } finally {
      await client.close();
    }
  });

  const pgSkip = existsSync('/usr/lib/postgresql/15/bin/initdb') ? undefined : 'PostgreSQL 15 is not installed';
  (pgSkip ? it.skip : it)(
    'import: puts skill folders into the --store; another run on that store lists them',
    async () => {
      const started = await startPostgres();
      if ('skip' in started) throw new Error(started.skip);
      const pg: PgServer = started;
      const other = await tempDir('toolbelt-cli-skills-src-');
      try {
        await makeSkill(path.join(other.dir, 'kit'), 'from-store', 'Lives in the store.', 'Stored body.', {
          'references/A.md': 'a\n',
        });
        const imported = await toolbelt(['skills', 'import', path.join(other.dir, 'kit'), '--store', pg.url]);
        expect(imported.code).toBe(0);
        expect(imported.stdout).toContain('imported from-store (2 files)');
        expect(imported.stdout).toContain('Imported 1 skill into the');
        expect(imported.stdout).not.toContain(pg.password);
        const listed = await toolbelt(['skills', 'list', '--store', pg.url], {}, other.dir);
        expect(listed.stdout).toContain('from-store  (store: store:from-store)');
        const noStore = await toolbelt(['skills', 'import', other.dir]);
        expect(noStore.code).toBe(2);
        expect(noStore.stderr).toContain('"toolbelt skills import" puts skills into a store: pass --store URL');
      } finally {
        await other.cleanup();
        await pg.stop();
      }
    },
    120_000,
  );
});
