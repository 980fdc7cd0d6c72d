/** A real skill folder for the skills suites: SKILL.md with the given frontmatter and body, and any other files. */
import fs from 'node:fs/promises';
import path from 'node:path';

/** Writes the skill folder `dir/name` (its last segment is the skill's name); returns its path. */
export async function makeSkill(
  dir: string,
  name: string,
  description = `Does ${path.basename(name)} things.`,
  body = `# ${path.basename(name)}\n\nFollow these steps.`,
  files: Record<string, string> = {},
): Promise<string> {
  const folder = path.join(dir, name);
  await fs.mkdir(folder, { recursive: true });
  await fs.writeFile(
    path.join(folder, 'SKILL.md'),
    `---\nname: ${path.basename(name)}\ndescription: ${JSON.stringify(description)}\n---\n${body}\n`,
  );
  for (const [rel, text] of Object.entries(files)) {
    await fs.mkdir(path.dirname(path.join(folder, rel)), { recursive: true });
    await fs.writeFile(path.join(folder, rel), text);
  }
  return folder;
}
