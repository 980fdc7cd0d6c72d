// Agent Skills at scale: 200 skills in 40 nested folders of a workspace's .agents/skills.
// Prints: cold discovery (a new registry's first look) against reading the same 200 SKILL.md files
// with fs.readFile (the least any discovery must do); warm discovery (cached until a SKILL.md or a
// folder changes; the change check runs at most every SKILLS_RECHECK_MS), alone and with its check,
// against the cold one; the listing's size against maxSkillListingChars; that all 200 load by name;
// and registry.tools() with skills against the same built-ins without them.
// Targets (issue 34): cold <= 50 ms, warm <= 1 ms, listing <= budget, tools() ratio <= 1.05.
// Run: npm run build && node bench/skills.bench.mjs
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createRegistry, registerBuiltinTools, skillCatalogOf } from '../dist/index.js';
import { SKILLS_RECHECK_MS } from '../dist/constants.js';
import { median, timeMs } from './lib.mjs';

const ROOT = await fs.mkdtemp(path.join(os.tmpdir(), 'toolbelt-skills-bench-'));
const PLACE = path.join(ROOT, '.agents/skills');
const files = [];
for (let g = 0; g < 40; g++) {
  for (let i = 0; i < 5; i++) {
    const dir = path.join(PLACE, `team-${g % 8}`, `area-${g}`, `skill-${g}-${i}`);
    await fs.mkdir(path.join(dir, 'references'), { recursive: true });
    const file = path.join(dir, 'SKILL.md');
    await fs.writeFile(
      file,
      `---\nname: skill-${g}-${i}\ndescription: Handles task ${i} of area ${g}; use it when the user asks about area ${g}.\n---\n# Steps\n\n${'Do the thing carefully.\n'.repeat(40)}`,
    );
    await fs.writeFile(path.join(dir, 'references/REFERENCE.md'), 'reference\n');
    files.push(file);
  }
}
const initCtx = { workspaceRoot: ROOT };
const skills = { defaults: true, home: ROOT };
const RUNS = 15;

try {
  // Cold: a new registry each run (nothing cached), against reading the 200 files.
  const cold = [];
  const base = [];
  for (let r = 0; r < RUNS; r++) {
    const registry = createRegistry({ skills });
    cold.push(await timeMs(() => skillCatalogOf(registry.tenant).view(initCtx)));
    base.push(await timeMs(() => Promise.all(files.map((f) => fs.readFile(f, 'utf8')))));
    await registry.dispose();
  }
  console.log(
    `cold discovery of 200 skills: ${median(cold).toFixed(1)} ms (target <= 50 ms), readFile of the 200 SKILL.md: ${median(base).toFixed(1)} ms, ratio = ${(median(cold) / median(base)).toFixed(2)}`,
  );

  // Warm: the same catalog again (every searched folder and SKILL.md stat'ed, nothing read).
  const registry = registerBuiltinTools(createRegistry({ skills }));
  registry.on('warning', () => undefined);
  const catalog = skillCatalogOf(registry.tenant);
  const view = await catalog.view(initCtx);
  const warm = [];
  for (let r = 0; r < RUNS * 10; r++) warm.push(await timeMs(() => catalog.view(initCtx)));
  console.log(
    `warm discovery: ${median(warm).toFixed(3)} ms (target <= 1 ms), ratio to cold = ${(median(warm) / median(cold)).toFixed(3)}`,
  );
  // Warm with the check itself: past SKILLS_RECHECK_MS every searched folder and SKILL.md is stat'ed.
  const checked = [];
  for (let r = 0; r < 7; r++) {
    await new Promise((resolve) => setTimeout(resolve, SKILLS_RECHECK_MS + 10));
    checked.push(await timeMs(() => catalog.view(initCtx)));
  }
  console.log(
    `warm discovery with its change check (every ${SKILLS_RECHECK_MS} ms at most): ${median(checked).toFixed(3)} ms, ratio to cold = ${(median(checked) / median(cold)).toFixed(3)}`,
  );

  // The listing the model reads, and every skill loadable by name.
  const [tool] = await registry.tools({ ids: ['skill'], initCtx });
  const listing = tool.description.slice(tool.description.indexOf('Skills:\n') + 'Skills:\n'.length);
  const listed = listing.split('\n').filter((l) => l.startsWith('- ')).length;
  console.log(
    `listing: ${listing.length} characters for ${view.skills.length} skills (${listed} listed, the rest counted with how to find them), budget 4000: ${listing.length <= 4000 ? 'OK' : 'MISSED'}`,
  );
  let loaded = 0;
  for (const s of view.skills) if ((await registry.execute('skill', { name: s.name }, {}, initCtx)).success) loaded++;
  console.log(`loadable by name: ${loaded} of ${view.skills.length}`);

  // tools() with skills against the same built-ins without them, a fresh init context each call.
  const plain = registerBuiltinTools(createRegistry());
  const withSkills = [];
  const without = [];
  for (let r = 0; r < RUNS * 2; r++) {
    withSkills.push(await timeMs(() => registry.tools({ initCtx: { ...initCtx } })));
    without.push(await timeMs(() => plain.tools({ initCtx: { ...initCtx } })));
  }
  const ratio = median(withSkills) / median(without);
  console.log(
    `tools(): with skills ${median(withSkills).toFixed(2)} ms, without ${median(without).toFixed(2)} ms, ratio = ${ratio.toFixed(2)} (target <= 1.05) ${ratio <= 1.05 ? 'OK' : 'MISSED'}`,
  );
  await plain.dispose();
  await registry.dispose();
} finally {
  await fs.rm(ROOT, { recursive: true, force: true });
}
