/**
 * Skills found where users keep them: real skill folders in the workspace's `.agents/skills` and
 * `.claude/skills`, the user's `~/.agents/skills` and `~/.claude/skills` (the home is a temp dir:
 * `skills.home` here, HOME in the CLI's suite), and explicit dirs; nested folders; precedence with
 * the loser named; links out of a place refused; the cache kept until a SKILL.md or a folder
 * changes; 1,000+ skills bounded.
 */
import { describe, it, expect, beforeEach, afterEach } from '@jest/globals';
import fs from 'node:fs/promises';
import path from 'node:path';
import { createRegistry, registerBuiltinTools } from '../../src/index.js';
import { skillCatalogOf } from '../../src/skills/catalog.js';
import { MAX_SKILLS, MAX_SKILL_DEPTH } from '../../src/skills/types.js';
import { tempDir } from '../support/helpers.js';
import { makeSkill } from './make-skill.js';

let ws: { dir: string; cleanup: () => Promise<void> };
let home: { dir: string; cleanup: () => Promise<void> };
let outside: { dir: string; cleanup: () => Promise<void> };

beforeEach(async () => {
  ws = await tempDir('toolbelt-skills-ws-');
  home = await tempDir('toolbelt-skills-home-');
  outside = await tempDir('toolbelt-skills-outside-');
});
afterEach(async () => {
  await ws.cleanup();
  await home.cleanup();
  await outside.cleanup();
});

function registryWith(
  skills: Parameters<typeof createRegistry>[0] extends infer O ? (O extends { skills?: infer S } ? S : never) : never,
) {
  const warnings: string[] = [];
  const registry = registerBuiltinTools(createRegistry({ skills }));
  registry.on('warning', (e) => warnings.push(e.message));
  return { registry, warnings };
}

describe('discovery', () => {
  it('finds skills in every standard place, nested ones too, each labelled with its source', async () => {
    await makeSkill(path.join(ws.dir, '.agents/skills'), 'ws-agents');
    await makeSkill(path.join(ws.dir, '.claude/skills'), 'ws-claude');
    await makeSkill(path.join(home.dir, '.agents/skills'), 'home-agents');
    await makeSkill(path.join(home.dir, '.claude/skills'), 'home-claude');
    await makeSkill(path.join(ws.dir, '.agents/skills'), 'team/web/nested-one');
    const { registry } = registryWith({ home: home.dir, defaults: true });
    const view = await skillCatalogOf(registry.tenant).view({ workspaceRoot: ws.dir });
    expect(view.skills.map((s) => [s.name, s.source])).toEqual([
      ['ws-agents', 'workspace'],
      ['nested-one', 'workspace'],
      ['ws-claude', 'workspace'],
      ['home-agents', 'user'],
      ['home-claude', 'user'],
    ]);
    expect(view.problems).toEqual([]);
    // Without defaults (the library's default) nothing is searched.
    const off = await skillCatalogOf(createRegistry().tenant).view({ workspaceRoot: ws.dir });
    expect(off.skills).toEqual([]);
    await registry.dispose();
  });

  it('searches nested folders down to MAX_SKILL_DEPTH and no deeper', async () => {
    const place = path.join(ws.dir, '.agents/skills');
    const deepest = Array.from({ length: MAX_SKILL_DEPTH - 1 }, (_, i) => `d${i}`).join('/');
    await makeSkill(place, `${deepest}/deep-enough`);
    await makeSkill(place, `${deepest}/x/too-deep`);
    const { registry } = registryWith({ home: home.dir, defaults: true });
    const names = (await skillCatalogOf(registry.tenant).view({ workspaceRoot: ws.dir })).skills.map((s) => s.name);
    expect(names).toEqual(['deep-enough']);
    await registry.dispose();
  });

  it('an explicit dir wins over the workspace, the workspace over the user; each loser is named in a warning', async () => {
    const explicit = path.join(outside.dir, 'mine');
    await makeSkill(explicit, 'dup', 'explicit one');
    await makeSkill(path.join(ws.dir, '.agents/skills'), 'dup', 'workspace one');
    await makeSkill(path.join(ws.dir, '.agents/skills'), 'pair', 'workspace pair');
    await makeSkill(path.join(home.dir, '.agents/skills'), 'pair', 'user pair');
    const { registry, warnings } = registryWith({ home: home.dir, defaults: true, dirs: [explicit] });
    const view = await skillCatalogOf(registry.tenant).view({ workspaceRoot: ws.dir });
    expect(view.byName.get('dup')!.description).toBe('explicit one');
    expect(view.byName.get('pair')!.description).toBe('workspace pair');
    const wsDup = path.join(ws.dir, '.agents/skills/dup/SKILL.md');
    const homePair = path.join(home.dir, '.agents/skills/pair/SKILL.md');
    expect(warnings).toEqual(
      expect.arrayContaining([
        expect.stringContaining(
          `Skill "dup" at ${wsDup} is hidden by the skill of the same name at ${path.join(explicit, 'dup/SKILL.md')} (an explicit skills dir skills win over the workspace's)`,
        ),
        expect.stringContaining(`Skill "pair" at ${homePair} is hidden by`),
      ]),
    );
    await registry.dispose();
  });

  it('refuses a skill folder or SKILL.md that links out of its place, as the file tools refuse such links; links inside work', async () => {
    const place = path.join(ws.dir, '.agents/skills');
    await makeSkill(outside.dir, 'evil', 'outside');
    await makeSkill(place, 'real-one');
    await fs.symlink(path.join(outside.dir, 'evil'), path.join(place, 'evil'));
    await fs.symlink(path.join(place, 'real-one'), path.join(place, 'alias-dir'));
    await fs.mkdir(path.join(place, 'file-link'));
    await fs.symlink(path.join(outside.dir, 'evil/SKILL.md'), path.join(place, 'file-link/SKILL.md'));
    const { registry, warnings } = registryWith({ home: home.dir, defaults: true });
    const view = await skillCatalogOf(registry.tenant).view({ workspaceRoot: ws.dir });
    expect(view.skills.map((s) => s.name)).toEqual(['real-one']);
    const refusals = view.problems.filter((p) =>
      p.message.includes('resolves through a symbolic link to a place outside'),
    );
    expect(refusals.map((p) => p.file).sort()).toEqual(
      [path.join(place, 'evil'), path.join(place, 'file-link/SKILL.md')].sort(),
    );
    // The target is never named (it would reveal a path outside).
    for (const r of refusals) expect(r.message).not.toContain(outside.dir);
    expect(warnings.some((w) => w.includes(`${path.join(place, 'evil')} is outside the skills directory`))).toBe(true);
    await registry.dispose();
  });

  it('keeps its view until a SKILL.md or a searched folder changes', async () => {
    const place = path.join(ws.dir, '.agents/skills');
    await makeSkill(place, 'first', 'version one');
    const { registry } = registryWith({ home: home.dir, defaults: true });
    const catalog = skillCatalogOf(registry.tenant);
    const initCtx = { workspaceRoot: ws.dir };
    const v1 = await catalog.view(initCtx);
    expect(await catalog.view(initCtx)).toBe(v1);
    // A change is seen within SKILLS_RECHECK_MS: the test looks until it is.
    const seen = async (what: string, check: (v: Awaited<ReturnType<typeof catalog.view>>) => boolean) => {
      let last = await catalog.view(initCtx);
      const started = Date.now();
      while (!check(last)) {
        if (Date.now() - started > 10_000) throw new Error(`the catalog never saw ${what}`);
        await new Promise((r) => setTimeout(r, 20));
        last = await catalog.view(initCtx);
      }
      return last;
    };
    await fs.writeFile(path.join(place, 'first/SKILL.md'), '---\nname: first\ndescription: version two\n---\nbody\n');
    await fs.utimes(path.join(place, 'first/SKILL.md'), new Date(), new Date(Date.now() + 5000));
    const v2 = await seen('the edit', (v) => v.byName.get('first')?.description === 'version two');
    expect(v2).not.toBe(v1);
    await makeSkill(place, 'second');
    await seen('the new folder', (v) => v.byName.has('second'));
    // A standard place created after the first look is noticed too.
    await makeSkill(path.join(home.dir, '.claude/skills'), 'late');
    await seen('the new place', (v) => v.byName.has('late'));
    // Unchanged, a look reuses the view.
    const v3 = await catalog.view(initCtx);
    expect(await catalog.view(initCtx)).toBe(v3);
    await registry.dispose();
  });

  it(`stays bounded past ${MAX_SKILLS} skills: the rest are named in one warning, every kept one loads by name`, async () => {
    const place = path.join(ws.dir, '.agents/skills');
    const total = MAX_SKILLS + 5;
    for (let g = 0; g < 25; g++) {
      const group = path.join(place, `group-${String(g).padStart(2, '0')}`);
      await fs.mkdir(group, { recursive: true });
      await Promise.all(
        Array.from({ length: Math.ceil(total / 25) }, (_, i) => g * Math.ceil(total / 25) + i)
          .filter((n) => n < total)
          .map((n) => makeSkill(group, `skill-${String(n).padStart(4, '0')}`)),
      );
    }
    const { registry, warnings } = registryWith({ home: home.dir, defaults: true });
    const initCtx = { workspaceRoot: ws.dir };
    const view = await skillCatalogOf(registry.tenant).view(initCtx);
    expect(view.skills).toHaveLength(MAX_SKILLS);
    expect(warnings).toContainEqual(
      expect.stringContaining(
        `${total} skills were found, more than the ${MAX_SKILLS} one agent is offered; the last 5`,
      ),
    );
    const last = view.skills[view.skills.length - 1].name;
    for (const name of ['skill-0000', last]) {
      const r = await registry.execute('skill', { name }, {}, initCtx);
      expect(r.success).toBe(true);
      expect(r.result.output).toContain(`<skill name="${name}"`);
    }
    await registry.dispose();
  }, 60_000);
});
