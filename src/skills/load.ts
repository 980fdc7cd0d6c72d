/**
 * Loading one skill whole, wherever it lives: its SKILL.md read again (it may have changed since it
 * was listed) and its body taken, and the paths of its other files as read and bash take them —
 * host paths, a backend's paths, or, for a stored skill, the files written into the tenant's
 * private directory.
 * Must not decide which skill a name means (catalog.ts) nor format what the model reads (prompts.ts).
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import posix from 'node:path/posix';
import type { Tool } from '../authoring/tool.js';
import type { Tenant } from '../workspace/tenant.js';
import type { StoreScope } from '../store/scope.js';
import { readBackendText, tooLarge, within } from './discover.js';
import { parseSkillText } from './parse.js';
import { materialize } from './store.js';
import { MAX_SKILL_FILE_BYTES, MAX_SKILL_FILES_LISTED, SKILL_FILE, type LoadedSkill, type Skill } from './types.js';

/** Where a skill is loaded from, as the catalog knows it. */
export interface LoadContext {
  initCtx: Tool.InitContext;
  tenant: Tenant;
  /** The store a stored skill is read from. */
  scope?: StoreScope;
  /** The skill lives on `initCtx.backend`. */
  onBackend: boolean;
  signal: AbortSignal;
}

/** `skill` loaded whole; throws a sentence when its files cannot be read. */
export async function loadSkill(skill: Skill, ctx: LoadContext): Promise<LoadedSkill> {
  if (skill.source === 'store') {
    const { dir, text, files } = await materialize(ctx.scope!, ctx.tenant, skill);
    return { skill, body: bodyOf(text, skill), dir, ...cut(files) };
  }
  if (ctx.onBackend) {
    const { backendOf } = await import('../tools/files/backend/common.js');
    const backend = backendOf(ctx.initCtx);
    const text = await readBackendText(backend, skill.file, ctx.signal);
    const { files } = await backend.glob('**/*', skill.dir, ctx.signal);
    const paths = files
      .filter((f) => !f.is_dir && !f.path.endsWith('/'))
      .map((f) => (f.path.startsWith('/') ? f.path : posix.join(skill.dir, f.path)))
      .filter((p) => p !== skill.file)
      .sort();
    return { skill, body: bodyOf(text, skill), dir: skill.dir, ...cut(paths) };
  }
  const st = await fs.stat(skill.file);
  if (st.size > MAX_SKILL_FILE_BYTES) throw new Error(tooLarge(skill.file, st.size).message);
  const text = await fs.readFile(skill.file, 'utf8');
  return { skill, body: bodyOf(text, skill), dir: skill.dir, ...cut(await folderFiles(skill.dir)) };
}

/** The body of a SKILL.md read whole (parsed again: a skill broken since it was listed says so). */
function bodyOf(text: string, skill: Skill): string {
  const parsed = parseSkillText(
    text,
    skill.file,
    skill.dir.startsWith('store:') ? skill.name : path.basename(skill.dir),
  );
  const error = parsed.problems.find((p) => p.severity === 'error');
  if (error) throw new Error(`${error.message} Fix SKILL.md, then load the skill again.`);
  return parsed.body ?? '';
}

function cut(files: string[]): { files: string[]; moreFiles: number } {
  return {
    files: files.slice(0, MAX_SKILL_FILES_LISTED),
    moreFiles: Math.max(0, files.length - MAX_SKILL_FILES_LISTED),
  };
}

/** A host skill folder's files (not SKILL.md, not hidden ones, no link out of it), sorted; at most 10x the listed cap are looked at. */
async function folderFiles(dir: string): Promise<string[]> {
  const real = await fs.realpath(dir);
  const out: string[] = [];
  const limit = MAX_SKILL_FILES_LISTED * 10;
  const walk = async (abs: string, shown: string, depth: number): Promise<void> => {
    const entries = await fs.readdir(abs, { withFileTypes: true }).catch(() => []);
    for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
      if (out.length >= limit || e.name.startsWith('.') || e.name === 'node_modules') continue;
      if (depth === 0 && e.name === SKILL_FILE) continue;
      const target = e.isSymbolicLink()
        ? await fs.realpath(path.join(abs, e.name)).catch(() => undefined)
        : path.join(abs, e.name);
      if (!target || !within(target, real)) continue;
      const isDir = e.isSymbolicLink()
        ? (await fs.stat(target).catch(() => undefined))?.isDirectory()
        : e.isDirectory();
      if (isDir) {
        if (depth < 6) await walk(target, path.join(shown, e.name), depth + 1);
      } else out.push(path.join(shown, e.name));
    }
  };
  await walk(real, dir, 0);
  return out;
}
