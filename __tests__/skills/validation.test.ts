/**
 * SKILL.md checked by the Agent Skills spec, on real skill folders: each bad input (frontmatter that
 * is not YAML, a missing `---`, a name with path characters, a 10 MB file, ...) is skipped with a
 * sentence naming the file, the field and the fix, and the good skill beside it still loads; a BOM
 * and CRLF line endings are read, with a warning.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import fs from 'node:fs/promises';
import path from 'node:path';
import { createRegistry, registerBuiltinTools } from '../../src/index.js';
import { skillCatalogOf, type SkillView } from '../../src/skills/catalog.js';
import { parseSkillText } from '../../src/skills/parse.js';
import { MAX_SKILL_FILE_BYTES } from '../../src/skills/types.js';
import { tempDir } from '../support/helpers.js';

let root: { dir: string; cleanup: () => Promise<void> };
let place: string;
let view: SkillView;
let registry: ReturnType<typeof createRegistry>;

/** Each bad folder and the SKILL.md text it holds. */
const BAD: Record<string, string> = {
  'not-yaml': '---\nname: not-yaml\ndescription: [unclosed\n---\nbody\n',
  'no-close': '---\nname: no-close\ndescription: never closed\n\n# Body\n',
  'no-open': '# Just markdown\n\nname: no-open\n',
  'path-chars': '---\nname: ../path-chars\ndescription: tries to climb\n---\nbody\n',
  'Upper-Case': '---\nname: Upper-Case\ndescription: uppercase\n---\nbody\n',
  'double--hyphen': '---\nname: double--hyphen\ndescription: two hyphens\n---\nbody\n',
  mismatch: '---\nname: other-name\ndescription: wrong folder\n---\nbody\n',
  'no-description': '---\nname: no-description\n---\nbody\n',
  'long-description': `---\nname: long-description\ndescription: ${'x'.repeat(1025)}\n---\nbody\n`,
  'long-compat': `---\nname: long-compat\ndescription: ok\ncompatibility: ${'y'.repeat(501)}\n---\nbody\n`,
  'bad-metadata': '---\nname: bad-metadata\ndescription: ok\nmetadata: [a, b]\n---\nbody\n',
  'a-list': '---\n- name\n- description\n---\nbody\n',
};

beforeAll(async () => {
  root = await tempDir('toolbelt-skills-validation-');
  place = path.join(root.dir, '.agents/skills');
  for (const [folder, text] of Object.entries(BAD)) {
    await fs.mkdir(path.join(place, folder), { recursive: true });
    await fs.writeFile(path.join(place, folder, 'SKILL.md'), text);
  }
  await fs.mkdir(path.join(place, 'huge'), { recursive: true });
  const huge = Buffer.alloc(MAX_SKILL_FILE_BYTES + 1, 'a');
  Buffer.from('---\nname: huge\ndescription: too big\n---\n').copy(huge);
  await fs.writeFile(path.join(place, 'huge/SKILL.md'), huge);
  await fs.mkdir(path.join(place, 'windows'), { recursive: true });
  await fs.writeFile(
    path.join(place, 'windows/SKILL.md'),
    '\uFEFF---\r\nname: windows\r\ndescription: saved on Windows\r\nauthor: someone\r\n---\r\n# Steps\r\n\r\n---\r\n\r\nAfter a rule.\r\n',
  );
  await fs.mkdir(path.join(place, 'good'), { recursive: true });
  await fs.writeFile(
    path.join(place, 'good/SKILL.md'),
    '---\nname: good\ndescription: "Works: yes"\n---\nGood body.\n',
  );
  registry = registerBuiltinTools(createRegistry({ skills: { defaults: true, home: root.dir } }));
  registry.on('warning', () => undefined);
  view = await skillCatalogOf(registry.tenant).view({ workspaceRoot: root.dir });
});
afterAll(async () => {
  await registry.dispose();
  await root.cleanup();
});

function problemOf(folder: string) {
  const file = path.join(place, folder, 'SKILL.md');
  const found = view.problems.filter((p) => p.file === file && p.severity === 'error');
  expect(found.length).toBeGreaterThan(0);
  for (const p of found) expect(p.message).toMatch(/the skill is skipped/i);
  return found[0];
}

describe('validation', () => {
  it('loads the good skill and the Windows one (BOM and CRLF read, with warnings), and nothing else', () => {
    expect(view.skills.map((s) => s.name).sort()).toEqual(['good', 'windows']);
    const windows = view.byName.get('windows')!;
    expect(windows.description).toBe('saved on Windows');
    expect(windows.extra).toEqual({ author: 'someone' });
    const warnings = windows.warnings.map((w) => w.message).join('\n');
    expect(warnings).toContain('starts with a byte-order mark (U+FEFF), which was ignored');
    expect(warnings).toContain('has Windows (CRLF) line endings, read as LF');
    expect(warnings).toContain(
      '"author" is a field the Agent Skills spec does not define, kept as written; move it under "metadata"',
    );
  });

  it('says what is wrong with each bad skill, naming the file, the field and the fix', () => {
    expect(problemOf('not-yaml').message).toMatch(
      /the frontmatter is not valid YAML \(line \d+ of the file\): .*Fix the YAML between the "---" lines/,
    );
    expect(problemOf('no-close').message).toContain(
      'the frontmatter has no closing "---" line. Add a line "---" after the last YAML field',
    );
    expect(problemOf('no-open').message).toContain('does not start with a "---" line, so it has no frontmatter');
    const climb = problemOf('path-chars');
    expect(climb.field).toBe('name');
    expect(climb.message).toContain('name "../path-chars" holds path characters');
    expect(problemOf('Upper-Case').message).toContain('name "Upper-Case" has uppercase letters');
    expect(problemOf('double--hyphen').message).toContain('is not lowercase letters, digits and single hyphens');
    expect(problemOf('mismatch').message).toContain(
      'name "other-name" differs from its folder\'s name "mismatch". Rename the folder',
    );
    expect(problemOf('no-description')).toMatchObject({ field: 'description' });
    expect(problemOf('long-description').message).toContain(
      '"description" has 1025 characters, more than the 1024 the spec allows',
    );
    expect(problemOf('long-compat').message).toContain('"compatibility" has 501 characters, more than the 500');
    expect(problemOf('bad-metadata').message).toContain('"metadata" is a list; write it as a mapping');
    expect(problemOf('a-list').message).toContain('the frontmatter is a YAML list, not a mapping');
    expect(problemOf('huge').message).toContain(
      `is ${MAX_SKILL_FILE_BYTES + 1} bytes, more than the ${MAX_SKILL_FILE_BYTES} bytes (10 MB) a SKILL.md may have`,
    );
  });

  it('loads the body whole: a "---" rule inside it is Markdown, not the end of the file', async () => {
    const r = await registry.execute('skill', { name: 'windows' }, {}, { workspaceRoot: root.dir });
    expect(r.success).toBe(true);
    expect(r.result.output).toContain('# Steps\n\n---\n\nAfter a rule.');
    expect(r.result.output).not.toContain('description:');
  });

  it('parses allowed-tools written as text or as a list, and metadata as strings', () => {
    const text = parseSkillText(
      '---\nname: t\ndescription: d\nallowed-tools: Bash(git status) Read\nmetadata:\n  version: 1.0\n---\n',
      'SKILL.md',
      't',
    );
    expect(text.meta).toMatchObject({ allowedTools: ['Bash(git status)', 'Read'], metadata: { version: '1' } });
    const list = parseSkillText(
      '---\nname: t\ndescription: d\nallowed-tools:\n  - Bash(git:*)\n  - Read\n---\n',
      'SKILL.md',
      't',
    );
    expect(list.meta?.allowedTools).toEqual(['Bash(git:*)', 'Read']);
    const bad = parseSkillText('---\nname: t\ndescription: d\nallowed-tools: {a: 1}\n---\n', 'SKILL.md', 't');
    expect(bad.meta).toBeUndefined();
    expect(bad.problems[0]).toMatchObject({ field: 'allowed-tools' });
  });
});
