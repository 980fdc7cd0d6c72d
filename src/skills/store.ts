/**
 * Skills kept in the registry's store, so replicas sharing a store share them: `importSkills` puts
 * local skill folders there (one record per skill: its SKILL.md and its other files), the catalog
 * lists them, and loading one writes its files into the tenant's private directory, where the read
 * tool and bash reach them like any other file.
 * Must not decide precedence (catalog.ts) nor parse frontmatter itself (parse.ts).
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import type { StoreScope } from '../store/scope.js';
import type { Tenant } from '../workspace/tenant.js';
import { accept, discoverLocal, within, type PlaceResult } from './discover.js';
import { parseSkillText } from './parse.js';
import {
  MAX_SKILL_DIRS_VISITED,
  MAX_STORED_SKILL_BYTES,
  MAX_STORED_SKILL_FILES,
  SKILL_FILE,
  type Skill,
  type SkillProblem,
} from './types.js';
import { describeThrown } from '../text/describe.js';

/** The kind of store record skills are kept as (see src/store/namespace.ts). */
const KIND = 'skills';

/** One stored skill: every file of its folder, by path relative to it. */
interface StoredSkill {
  name: string;
  /** Where it was imported from (for messages). */
  from: string;
  files: Record<string, { text?: string; base64?: string }>;
}

function parseStored(value: Record<string, unknown>): StoredSkill | undefined {
  const files = value.files as Record<string, unknown> | undefined;
  if (typeof value.name !== 'string' || typeof value.from !== 'string' || !files || typeof files !== 'object')
    return undefined;
  const md = files[SKILL_FILE] as { text?: unknown } | undefined;
  if (!md || typeof md.text !== 'string') return undefined;
  return value as unknown as StoredSkill;
}

/** What `importSkills` did: the skills stored, and why others were not. */
export interface ImportResult {
  imported: Array<{ name: string; from: string; files: number }>;
  problems: SkillProblem[];
}

/** Puts every valid skill under `dirs` into the store `scope` (see `importSkills` in catalog.ts). */
export async function importSkillFolders(scope: StoreScope, dirs: readonly string[]): Promise<ImportResult> {
  const result: ImportResult = { imported: [], problems: [] };
  const budget = { dirsLeft: MAX_SKILL_DIRS_VISITED };
  for (const dir of dirs) {
    const found = await discoverLocal({ kind: 'dir', dir, required: true }, budget);
    result.problems.push(...found.problems);
    for (const skill of found.skills) {
      const files = await readFolder(skill.dir).catch((err: Error) => err);
      if (files instanceof Error) {
        result.problems.push({ file: skill.dir, severity: 'error', message: files.message });
        continue;
      }
      const record: StoredSkill = { name: skill.name, from: skill.dir, files };
      await scope.put(KIND, skill.name, record as unknown as Record<string, unknown>);
      result.imported.push({ name: skill.name, from: skill.dir, files: Object.keys(files).length });
    }
  }
  return result;
}

/** Every file of a skill folder (links out of it refused), bounded by MAX_STORED_SKILL_FILES and MAX_STORED_SKILL_BYTES. */
async function readFolder(dir: string): Promise<StoredSkill['files']> {
  const real = await fs.realpath(dir);
  const files: StoredSkill['files'] = {};
  let bytes = 0;
  const walk = async (abs: string, rel: string): Promise<void> => {
    for (const e of await fs.readdir(abs, { withFileTypes: true })) {
      const childRel = rel ? `${rel}/${e.name}` : e.name;
      const target = await fs.realpath(path.join(abs, e.name)).catch(() => undefined);
      if (!target || !within(target, real)) continue; // a link out of the folder is not taken along
      const st = await fs.stat(target);
      if (st.isDirectory()) {
        if (e.name !== '.git' && e.name !== 'node_modules') await walk(target, childRel);
        continue;
      }
      if (!st.isFile()) continue;
      if (Object.keys(files).length >= MAX_STORED_SKILL_FILES || (bytes += st.size) > MAX_STORED_SKILL_BYTES)
        throw new Error(
          `The skill folder ${dir} holds more than ${MAX_STORED_SKILL_FILES} files or ${MAX_STORED_SKILL_BYTES} bytes, more than one stored skill may; it was not imported. Keep large data out of the skill folder.`,
        );
      const buf = await fs.readFile(target);
      const text = buf.toString('utf8');
      files[childRel] =
        Buffer.from(text, 'utf8').equals(buf) && !buf.includes(0) ? { text } : { base64: buf.toString('base64') };
    }
  };
  await walk(real, '');
  return files;
}

/** The skills in the store, checked as SKILL.md files are (a stored skill that breaks a rule is skipped with its sentence). */
export async function storedSkills(scope: StoreScope): Promise<PlaceResult> {
  const out: PlaceResult = { skills: [], problems: [], seen: [] };
  for (const item of await scope.all(KIND)) {
    let stored: StoredSkill;
    try {
      stored = scope.parsed(KIND, item, parseStored);
    } catch (err) {
      out.problems.push({ file: `store:${item.key}`, severity: 'error', message: describeThrown(err) });
      continue;
    }
    const file = `store:${item.key}/${SKILL_FILE}`;
    accept('store', `store:${item.key}`, file, parseSkillText(stored.files[SKILL_FILE].text!, file, item.key), out);
  }
  return out;
}

/**
 * Writes a stored skill's files into the tenant's private directory (`<dir>/skills/<name>/`), where
 * read and bash reach them; returns that folder, its SKILL.md text and its files' paths.
 */
export async function materialize(
  scope: StoreScope,
  tenant: Tenant,
  skill: Skill,
): Promise<{ dir: string; text: string; files: string[] }> {
  const name = skill.dir.slice('store:'.length);
  const stored = await scope.get(KIND, name, parseStored);
  if (!stored)
    throw new Error(`The skill "${name}" is no longer in the store. Import it again (toolbelt skills import DIR).`);
  const dir = path.join(tenant.outputs.ensureSync(), 'skills', name);
  await fs.rm(dir, { recursive: true, force: true });
  const files: string[] = [];
  for (const [rel, content] of Object.entries(stored.files)) {
    const abs = path.resolve(dir, rel);
    if (!within(abs, dir)) continue; // a record edited by hand cannot write outside the folder
    await fs.mkdir(path.dirname(abs), { recursive: true, mode: 0o700 });
    await fs.writeFile(abs, content.text ?? Buffer.from(content.base64 ?? '', 'base64'), {
      mode: rel.startsWith('scripts/') ? 0o700 : 0o600,
    });
    if (rel !== SKILL_FILE) files.push(abs);
  }
  return { dir, text: stored.files[SKILL_FILE].text!, files: files.sort() };
}
