/**
 * Skills that do not live on this host's disk: on a deepagents StoreBackend (`initCtx.backend`,
 * found in its `/.agents/skills` and `/.claude/skills`, loaded from it, their files read by the
 * backend read tool), and in the registry's store (`importSkills` puts local folders there; a
 * second registry on the same store and namespace, a replica, offers them, and their files are
 * readable and runnable by the paths the skill tool gives).
 */
import { describe, it, expect, beforeEach, afterEach } from '@jest/globals';
import path from 'node:path';
import fs from 'node:fs/promises';
import { InMemoryStore } from '@langchain/langgraph';
import { StoreBackend } from 'deepagents';
import { createRegistry, importSkills, registerBuiltinTools } from '../../src/index.js';
import { tempDir } from '../support/helpers.js';
import { makeSkill } from './make-skill.js';

let tmp: { dir: string; cleanup: () => Promise<void> };
const registries: Array<ReturnType<typeof createRegistry>> = [];

beforeEach(async () => {
  tmp = await tempDir('toolbelt-skills-remote-');
});
afterEach(async () => {
  await Promise.all(registries.splice(0).map((r) => r.dispose()));
  await tmp.cleanup();
});

function registry(options: Parameters<typeof createRegistry>[0]) {
  const r = registerBuiltinTools(createRegistry(options));
  r.on('warning', () => undefined);
  registries.push(r);
  return r;
}

describe('skills on a deepagents StoreBackend', () => {
  it("finds, lists and loads skills from the backend; their files are the backend read tool's paths", async () => {
    const backend = new StoreBackend({ store: new InMemoryStore(), namespace: ['files'] });
    await backend.write(
      '/.agents/skills/sql-review/SKILL.md',
      '---\nname: sql-review\ndescription: Reviews SQL migrations.\n---\nRead references/RULES.md first.\n',
    );
    await backend.write('/.agents/skills/sql-review/references/RULES.md', 'Never drop a column in one step.\n');
    await backend.write(
      '/.claude/skills/team/db/vacuum/SKILL.md',
      '---\nname: vacuum\ndescription: Vacuums tables.\n---\nRun VACUUM.\n',
    );
    await backend.write('/.claude/skills/broken/SKILL.md', 'no frontmatter\n');
    const warnings: string[] = [];
    const r = registry({ skills: { defaults: true, home: tmp.dir } });
    r.on('warning', (e) => warnings.push(e.message));
    const initCtx = { backend };
    const [tool] = await r.tools({ ids: ['skill'], initCtx });
    expect(tool.description).toContain('- sql-review: Reviews SQL migrations.');
    expect(tool.description).toContain('- vacuum: Vacuums tables.');
    expect(warnings).toContainEqual(
      expect.stringContaining('/.claude/skills/broken/SKILL.md does not start with a "---" line'),
    );
    const loaded = await r.execute('skill', { name: 'sql-review' }, {}, initCtx);
    expect(loaded.success).toBe(true);
    expect(loaded.result.output).toContain(
      '<skill name="sql-review" folder="/.agents/skills/sql-review">\nRead references/RULES.md first.\n</skill>',
    );
    expect(loaded.result.output).toContain('Files (1):\n  /.agents/skills/sql-review/references/RULES.md');
    const read = await r.execute('read', { filePath: '/.agents/skills/sql-review/references/RULES.md' }, {}, initCtx);
    expect(read.success).toBe(true);
    expect(read.result.output).toContain('Never drop a column in one step.');
  });
});

describe('skills in the store', () => {
  it('importSkills puts folders in the store; a replica on the same store offers them, files readable and runnable', async () => {
    const src = path.join(tmp.dir, 'src-skills');
    await makeSkill(src, 'lint-fix', 'Fixes lint errors.', 'Run scripts/fix.sh, see references/HOW.md.', {
      'scripts/fix.sh': 'echo "fixed by store skill"\n',
      'references/HOW.md': 'Fix the first error first.\n',
    });
    await makeSkill(src, 'Bad_Name', 'bad');
    const store = new InMemoryStore();
    const importer = registry({ store, namespace: ['team'] });
    const result = await importSkills(importer, [src]);
    expect(result.imported).toEqual([{ name: 'lint-fix', from: path.join(src, 'lint-fix'), files: 3 }]);
    expect(result.problems).toContainEqual(expect.objectContaining({ field: 'name', severity: 'error' }));

    const replica = registry({ store, namespace: ['team'], skills: {} });
    const ws = await fs.mkdtemp(path.join(tmp.dir, 'ws-'));
    const initCtx = { workspaceRoot: ws };
    const [tool] = await replica.tools({ ids: ['skill'], initCtx });
    expect(tool.description).toContain('- lint-fix: Fixes lint errors.');
    const loaded = await replica.execute('skill', { name: 'lint-fix' }, {}, initCtx);
    expect(loaded.success).toBe(true);
    expect(loaded.result.metadata.source).toBe('store');
    const dir = loaded.result.metadata.dir as string;
    expect(loaded.result.output).toContain('Run scripts/fix.sh, see references/HOW.md.');
    const read = await replica.execute('read', { filePath: path.join(dir, 'references/HOW.md') }, {}, initCtx);
    expect(read.result.output).toContain('Fix the first error first.');
    const ran = await replica.execute(
      'bash',
      { command: `sh ${path.join(dir, 'scripts/fix.sh')}`, description: 'fix' },
      {},
      initCtx,
    );
    expect(ran.result.output).toContain('fixed by store skill');
    // Another namespace does not see them.
    const other = registry({ store, namespace: ['other'], skills: {} });
    expect(await other.unavailable(initCtx)).toContainEqual(expect.objectContaining({ id: 'skill' }));
    await expect(importSkills(registry({}), [src])).rejects.toThrow('importSkills needs a registry with a store');
  });
});
