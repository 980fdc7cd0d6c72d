/**
 * Finding skill folders in one place: a skills directory on this host or on a deepagents backend.
 * A skill is any folder holding SKILL.md (the place itself too), up to MAX_SKILL_DEPTH folders below it; a skill
 * folder's own subfolders are its resources and are not searched. On the host a folder or SKILL.md
 * that is a symbolic link leading out of the place is refused, as the file tools refuse such links.
 * Only each SKILL.md's frontmatter is read (its first MAX_SKILL_FRONTMATTER_BYTES); bodies are read on load.
 * Must not decide precedence or cache (catalog.ts), nor parse (parse.ts).
 */
import { closeSync, fstatSync, openSync, readdirSync, readSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import posix from 'node:path/posix';
import type { GuardedBackend } from '../backend/guard.js';
import { parseSkillText } from './parse.js';
import {
  MAX_SKILL_DEPTH,
  MAX_SKILL_FILE_BYTES,
  MAX_SKILL_FRONTMATTER_BYTES,
  SKILL_FILE,
  type Skill,
  type SkillProblem,
  type SkillSourceKind,
} from './types.js';

/** Folders never searched for skills (they hold installs, not skills). */
const SKIPPED_DIRS = new Set(['node_modules', '.git']);

/** What searching one place found. */
export interface PlaceResult {
  skills: Skill[];
  /** Skills skipped (errors) and warnings about the place itself. */
  problems: SkillProblem[];
  /** Host only: each directory opened and each SKILL.md read, with its mtime, to tell later whether anything changed. */
  seen: Array<[string, number]>;
}

/** Shared across the places of one discovery pass: how many directories may still be opened. */
export interface WalkBudget {
  dirsLeft: number;
  /** Set once the budget ran out, naming where. */
  exhausted?: string;
}

/** One skills directory to search, and how its skills are labelled. */
export interface Place {
  kind: SkillSourceKind;
  dir: string;
  /** An explicit dir that is missing is a problem; a standard place that is missing is simply empty. */
  required?: boolean;
}

/** Folders read in one go before the walk lets other work run (its reads are synchronous: small, and many). */
const FOLDERS_PER_TURN = 100;

/**
 * The skills under `place` on this host. The walk uses synchronous reads (a stat and a listing per
 * folder, the head of each SKILL.md): for hundreds of small reads they cost a fraction of the
 * thread-pool round trips; it yields every FOLDERS_PER_TURN folders so other work is not held up.
 */
export async function discoverLocal(place: Place, budget: WalkBudget): Promise<PlaceResult> {
  const out: PlaceResult = { skills: [], problems: [], seen: [] };
  const root = path.resolve(place.dir);
  let realRoot: string;
  try {
    realRoot = realpathSync(root);
    if (!statSync(realRoot).isDirectory()) throw Object.assign(new Error('not a directory'), { code: 'ENOTDIR' });
  } catch (err) {
    out.seen.push([root, -1]); // created later: the catalog notices
    if (place.required)
      out.problems.push({
        file: root,
        severity: 'error',
        message: `The skills directory ${root} cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}). Create it or remove it from skills.dirs.`,
      });
    return out;
  }
  const visited = new Set<string>([realRoot]);
  let level: Folder[] = [{ dir: root, real: realRoot, depth: 0 }];
  let sinceYield = 0;
  while (level.length) {
    const next: Folder[] = [];
    for (const folder of level) {
      if (budget.dirsLeft <= 0) {
        budget.exhausted ??= folder.dir;
        return out;
      }
      budget.dirsLeft--;
      if (++sinceYield >= FOLDERS_PER_TURN) {
        sinceYield = 0;
        await new Promise((r) => setImmediate(r));
      }
      for (const child of visitLocal(place.kind, folder, root, realRoot, out)) {
        if (visited.has(child.real)) continue;
        visited.add(child.real);
        next.push(child);
      }
    }
    level = next;
  }
  return out;
}

interface Folder {
  dir: string;
  real: string;
  depth: number;
}

/** One folder of a host place: reads the skill it is into `out`, or returns the folders below it to search. */
function visitLocal(
  kind: SkillSourceKind,
  { dir, real, depth }: Folder,
  root: string,
  realRoot: string,
  out: PlaceResult,
): Folder[] {
  // A folder's mtime changes when an entry is added or removed in it: kept for every folder that is
  // not a skill, taken before the listing so that a change after it is seen later.
  const mtime = statSync(real, { throwIfNoEntry: false })?.mtimeMs ?? -1;
  let entries;
  try {
    entries = readdirSync(real, { withFileTypes: true });
  } catch {
    return []; // vanished or unreadable while we walked: nothing to list there
  }
  const skillFile = entries.find((e) => e.name === SKILL_FILE);
  if (skillFile) {
    readLocalSkill(kind, dir, real, skillFile.isSymbolicLink(), realRoot, root, out);
    return [];
  }
  out.seen.push([real, mtime]);
  if (depth >= MAX_SKILL_DEPTH) return [];
  const children: Folder[] = [];
  // Real folders first: a link to a folder already found is then the duplicate, not the folder.
  const order = (e: (typeof entries)[number]) => (e.isSymbolicLink() ? 1 : 0);
  for (const e of entries.sort((a, b) => order(a) - order(b) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    if (e.name.startsWith('.') || SKIPPED_DIRS.has(e.name)) continue;
    const child = path.join(dir, e.name);
    let childReal = path.join(real, e.name);
    if (e.isSymbolicLink()) {
      let target: string;
      try {
        target = realpathSync(childReal);
      } catch {
        continue; // a dangling link
      }
      if (!within(target, realRoot)) {
        out.problems.push(linkOutside(child, root));
        continue;
      }
      if (!statSync(target, { throwIfNoEntry: false })?.isDirectory()) continue;
      childReal = target;
    } else if (!e.isDirectory()) continue;
    children.push({ dir: child, real: childReal, depth: depth + 1 });
  }
  return children;
}

function readLocalSkill(
  kind: SkillSourceKind,
  dir: string,
  real: string,
  isLink: boolean,
  realRoot: string,
  root: string,
  out: PlaceResult,
): void {
  const file = path.join(dir, SKILL_FILE);
  let fd: number | undefined;
  try {
    // `real` is already a real path: only a SKILL.md that is itself a link needs resolving.
    const target = isLink ? realpathSync(path.join(real, SKILL_FILE)) : path.join(real, SKILL_FILE);
    if (!within(target, realRoot)) {
      out.problems.push(linkOutside(file, root));
      return;
    }
    fd = openSync(target, 'r');
    const st = fstatSync(fd);
    out.seen.push([target, st.mtimeMs]);
    if (!st.isFile()) return;
    if (st.size > MAX_SKILL_FILE_BYTES) {
      out.problems.push(tooLarge(file, st.size));
      return;
    }
    const want = Math.min(st.size, MAX_SKILL_FRONTMATTER_BYTES);
    const buf = Buffer.alloc(want);
    const bytesRead = readSync(fd, buf, 0, want, 0);
    const text = buf.subarray(0, bytesRead).toString('utf8');
    accept(kind, dir, file, parseSkillText(text, file, path.basename(dir), st.size > want), out);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return; // a dangling link, or removed while we walked
    out.problems.push({
      file,
      severity: 'error',
      message: `${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); the skill is skipped. Check its permissions.`,
    });
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** The skills under `place` (a `/`-rooted path) on a deepagents backend. */
export async function discoverOnBackend(
  place: Place,
  backend: GuardedBackend,
  budget: WalkBudget,
  signal: AbortSignal,
): Promise<PlaceResult> {
  const out: PlaceResult = { skills: [], problems: [], seen: [] };
  const root = posix.resolve('/', place.dir);
  let level: Array<{ dir: string; depth: number }> = [{ dir: root, depth: 0 }];
  while (level.length) {
    const next: typeof level = [];
    for (const { dir, depth } of level) {
      if (budget.dirsLeft <= 0) {
        budget.exhausted ??= dir;
        return out;
      }
      budget.dirsLeft--;
      let infos;
      try {
        infos = await backend.ls(dir, signal);
      } catch (err) {
        if (depth === 0 && !place.required) return out; // a standard place the backend does not have
        out.problems.push({ file: dir, severity: 'error', message: `${(err as Error).message}` });
        continue;
      }
      const names = infos.map((i) => ({
        name: posix.basename(i.path.replace(/\/$/, '')),
        dir: i.is_dir === true || i.path.endsWith('/'),
      }));
      if (names.some((n) => n.name === SKILL_FILE && !n.dir)) {
        await readBackendSkill(place.kind, dir, backend, signal, out);
        continue;
      }
      if (depth >= MAX_SKILL_DEPTH) continue;
      for (const n of names.sort((a, b) => (a.name < b.name ? -1 : 1))) {
        if (!n.dir || n.name.startsWith('.') || SKIPPED_DIRS.has(n.name)) continue;
        next.push({ dir: posix.join(dir, n.name), depth: depth + 1 });
      }
    }
    level = next;
  }
  return out;
}

async function readBackendSkill(
  kind: SkillSourceKind,
  dir: string,
  backend: GuardedBackend,
  signal: AbortSignal,
  out: PlaceResult,
): Promise<void> {
  const file = posix.join(dir, SKILL_FILE);
  const text = await readBackendText(backend, file, signal).catch((err: Error) => err);
  if (text instanceof Error) {
    out.problems.push({ file, severity: 'error', message: text.message });
    return;
  }
  accept(kind, dir, file, parseSkillText(text, file, posix.basename(dir)), out);
}

/** A backend file's text, refused past MAX_SKILL_FILE_BYTES (backends answer whole files). */
export async function readBackendText(backend: GuardedBackend, file: string, signal: AbortSignal): Promise<string> {
  const r = await backend.readRaw(file, signal);
  if (r.error !== undefined || !r.file)
    throw new Error(`${file} cannot be read from the backend ${backend.name}: ${r.error ?? 'no data'}.`);
  const text = r.file.text ?? Buffer.from(r.file.bytes!).toString('utf8');
  const size = Buffer.byteLength(text);
  if (size > MAX_SKILL_FILE_BYTES) throw new Error(tooLarge(file, size).message);
  return text;
}

/** Keeps the parsed skill (or its errors) in `out`. */
export function accept(
  kind: SkillSourceKind,
  dir: string,
  file: string,
  parsed: ReturnType<typeof parseSkillText>,
  out: { skills: Skill[]; problems: SkillProblem[] },
): void {
  const errors = parsed.problems.filter((p) => p.severity === 'error');
  const warnings = parsed.problems.filter((p) => p.severity === 'warning');
  if (!parsed.meta || errors.length) {
    out.problems.push(...errors.map((p) => ({ ...p, message: `${p.message} The skill is skipped; the others load.` })));
    out.problems.push(...warnings);
    return;
  }
  out.skills.push({ ...parsed.meta, source: kind, dir, file, warnings });
}

/** The sentence for a SKILL.md above MAX_SKILL_FILE_BYTES. */
export function tooLarge(file: string, size: number): SkillProblem {
  return {
    file,
    severity: 'error',
    message: `${file} is ${size} bytes, more than the ${MAX_SKILL_FILE_BYTES} bytes (10 MB) a SKILL.md may have; the skill is skipped. Keep SKILL.md short and move detail into files under references/.`,
  };
}

function linkOutside(p: string, root: string): SkillProblem {
  // The link target is not named: it would reveal a path outside the place (as the file tools do).
  return {
    file: p,
    severity: 'error',
    message: `${p} is outside the skills directory ${root} (it resolves through a symbolic link to a place outside); skills are read only inside it, so it is skipped. Copy the skill in, or add its real folder to skills.dirs.`,
  };
}

/** Whether `candidate` is `root` or under it. */
export function within(candidate: string, root: string): boolean {
  return candidate === root || candidate.startsWith(root.endsWith(path.sep) ? root : root + path.sep);
}
