/**
 * The skill tool on real skill folders: it loads a skill (body without frontmatter, folder, other
 * files whose paths read and bash accept, a user's skill outside the workspace included), searches,
 * lists the skills within maxSkillListingChars without ever dropping one silently, and is not
 * offered when no skill is found.
 */
import { describe, it, expect, beforeEach, afterEach } from '@jest/globals';
import path from 'node:path';
import { createRegistry, registerBuiltinTools } from '../../../src/index.js';
import { DEFAULT_MAX_SKILL_LISTING_CHARS } from '../../../src/skills/types.js';
import { skillListing } from '../../../src/skills/listing.js';
import { skillCatalogOf } from '../../../src/skills/catalog.js';
import { tempDir } from '../../support/helpers.js';
import { makeSkill } from '../../skills/make-skill.js';

let ws: { dir: string; cleanup: () => Promise<void> };
let home: { dir: string; cleanup: () => Promise<void> };
let registry: ReturnType<typeof createRegistry>;

beforeEach(async () => {
  ws = await tempDir('toolbelt-skill-tool-ws-');
  home = await tempDir('toolbelt-skill-tool-home-');
});
afterEach(async () => {
  await registry?.dispose();
  await ws.cleanup();
  await home.cleanup();
});

function make(options: { maxSkillListingChars?: number } = {}) {
  registry = registerBuiltinTools(createRegistry({ skills: { defaults: true, home: home.dir, ...options } }));
  registry.on('warning', () => undefined);
  return registry;
}

describe('skill', () => {
  it('loads a skill: its body without frontmatter, its folder, and its files by paths read and bash accept', async () => {
    await makeSkill(
      path.join(home.dir, '.agents/skills'),
      'release-notes',
      'Writes release notes from git history.',
      'Read references/STYLE.md, then run scripts/collect.sh.',
      {
        'references/STYLE.md': 'Use past tense.\n',
        'scripts/collect.sh': 'echo "collected from $(basename "$PWD")"\n',
      },
    );
    make();
    const initCtx = { workspaceRoot: ws.dir };
    const r = await registry.execute('skill', { name: 'release-notes' }, { sessionID: 's1' }, initCtx);
    expect(r.success).toBe(true);
    const folder = path.join(home.dir, '.agents/skills/release-notes');
    expect(r.result.output).toContain(
      `<skill name="release-notes" folder="${folder}">\nRead references/STYLE.md, then run scripts/collect.sh.\n</skill>`,
    );
    expect(r.result.output).not.toContain('description: Writes');
    expect(r.result.output).toContain(
      `Files (2):\n  ${path.join(folder, 'references/STYLE.md')}\n  ${path.join(folder, 'scripts/collect.sh')}`,
    );
    expect(r.result.metadata).toMatchObject({
      skill: 'release-notes',
      source: 'user',
      dir: folder,
      files: 2,
      moreFiles: 0,
    });
    // The user's skill is outside the workspace, yet read takes its path (read-only) ...
    const read = await registry.execute(
      'read',
      { filePath: path.join(folder, 'references/STYLE.md') },
      { sessionID: 's1' },
      initCtx,
    );
    expect(read.success).toBe(true);
    expect(read.result.output).toContain('Use past tense.');
    const write = await registry.execute(
      'write',
      { filePath: path.join(folder, 'references/STYLE.md'), content: 'x' },
      { sessionID: 's1' },
      initCtx,
    );
    expect(write.success).toBe(false);
    // ... and bash runs its script by that path.
    const bash = await registry.execute(
      'bash',
      { command: `sh ${path.join(folder, 'scripts/collect.sh')}`, description: 'collect' },
      { sessionID: 's1' },
      initCtx,
    );
    expect(bash.success).toBe(true);
    expect(bash.result.output).toContain(`collected from ${path.basename(ws.dir)}`);
  });

  it('answers an unknown name with the closest one and how to search', async () => {
    await makeSkill(path.join(ws.dir, '.agents/skills'), 'pdf-forms');
    make();
    const r = await registry.execute('skill', { name: 'pdf-form' }, {}, { workspaceRoot: ws.dir });
    expect(r.success).toBe(false);
    expect(r.error).toContain(
      'No skill is named "pdf-form". Did you mean "pdf-forms"? Call skill with { "query": "<words>" } to search the 1 installed skills.',
    );
  });

  it('lists every skill within the budget, shortens descriptions, and past that says how many more and how to find them', async () => {
    const place = path.join(ws.dir, '.agents/skills');
    for (let g = 0; g < 40; g++)
      for (let i = 0; i < 5; i++)
        await makeSkill(
          path.join(place, `area-${g}`),
          `skill-${g}-${i}`,
          `Handles task ${g}-${i} of area ${g}: ${'detail '.repeat(12)}`,
        );
    make();
    const initCtx = { workspaceRoot: ws.dir };
    const [tool] = await registry.tools({ ids: ['skill'], initCtx });
    const listing = skillListing(
      (await skillCatalogOf(registry.tenant).view(initCtx)).skills,
      DEFAULT_MAX_SKILL_LISTING_CHARS,
    );
    expect(listing.length).toBeLessThanOrEqual(DEFAULT_MAX_SKILL_LISTING_CHARS);
    expect(tool.description).toContain(listing);
    const shown = listing.split('\n').filter((l) => l.startsWith('- ')).length;
    expect(listing).toContain(
      `(${200 - shown} more skills not listed here: call skill with { "query": "<words>" } to search names and descriptions; any skill loads by its name.)`,
    );
    // Every one of the 200 loads by name, listed or not.
    for (let g = 0; g < 40; g++)
      for (let i = 0; i < 5; i++) {
        const r = await registry.execute('skill', { name: `skill-${g}-${i}` }, {}, initCtx);
        expect(r.success).toBe(true);
      }
    const found = await registry.execute('skill', { query: 'area 39' }, {}, initCtx);
    expect(found.result.metadata.matches).toEqual(expect.arrayContaining(['skill-39-0', 'skill-39-4']));
    // A budget that fits them all with shortened descriptions shortens, never drops.
    const shorter = skillListing((await skillCatalogOf(registry.tenant).view(initCtx)).skills.slice(0, 20), 2000);
    expect(shorter.length).toBeLessThanOrEqual(2000);
    expect(shorter.split('\n').filter((l) => l.startsWith('- '))).toHaveLength(20);
    expect(shorter).toContain('(Descriptions shortened to fit; skill with { query } shows them whole.)');
  }, 60_000);

  it('respects maxSkillListingChars', async () => {
    for (let i = 0; i < 30; i++) await makeSkill(path.join(ws.dir, '.agents/skills'), `s-${i}`, 'x'.repeat(100));
    make({ maxSkillListingChars: 500 });
    const [tool] = await registry.tools({ ids: ['skill'], initCtx: { workspaceRoot: ws.dir } });
    const listing = tool.description.slice(tool.description.indexOf('Skills:\n') + 'Skills:\n'.length);
    expect(listing.length).toBeLessThanOrEqual(500);
    expect(listing).toMatch(/\(\d+ more skills not listed here/);
  });

  it('is not offered when no skill is found, and says why', async () => {
    make();
    const initCtx = { workspaceRoot: ws.dir };
    const tools = await registry.tools({ initCtx });
    expect(tools.map((t) => t.name)).not.toContain('skill');
    expect(await registry.unavailable(initCtx)).toContainEqual({
      id: 'skill',
      reason: expect.stringContaining('No Agent Skills were found: put a folder holding SKILL.md in .agents/skills/'),
    });
    // initCtx.skills: false turns them off where the registry has some.
    await makeSkill(path.join(ws.dir, '.agents/skills'), 'one');
    await registry.dispose();
    make();
    expect((await registry.tools({ initCtx: { workspaceRoot: ws.dir } })).map((t) => t.name)).toContain('skill');
    expect(
      (await registry.tools({ initCtx: { workspaceRoot: ws.dir, skills: false } })).map((t) => t.name),
    ).not.toContain('skill');
  });
});
