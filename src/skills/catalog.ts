/**
 * A registry's skills: which places are searched for an init context (explicit dirs, the
 * workspace's and the user's standard places, the backend, the store), which skill wins a name
 * (the loser named in a warning), the cache (kept until a SKILL.md or a searched folder changes),
 * which skill a name loads (load.ts reads it), and which skills each session has loaded (for
 * `allowed-tools`).
 * The walks, the YAML parser, the store and backend code load on first use: the registry imports
 * this module, and a registry without skills pays nothing for them.
 * Must not format what the model reads (listing.ts, the skill tool) nor judge policy (allowed-tools.ts).
 */
import { statSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import posix from 'node:path/posix';
import type { Tool } from '../authoring/tool.js';
import { tenantOf, type Tenant } from '../workspace/tenant.js';
import { workspaceRootFor } from '../workspace/workspace.js';
import { storeScope } from '../store/scope.js';
import type { Place, PlaceResult, WalkBudget } from './discover.js';
import type { SkillGrants } from './allowed-tools.js';
import type { ImportResult } from './store.js';
import type { LoadedSkill } from './types.js';
import {
  DEFAULT_MAX_SKILL_LISTING_CHARS,
  MAX_SKILL_DIRS_VISITED,
  MAX_SKILLS,
  SKILL_SOURCE_ORDER,
  type Skill,
  type SkillProblem,
  type SkillsOptions,
} from './types.js';

declare module '../authoring/tool.js' {
  namespace Tool {
    interface InitContext {
      /**
       * Where the skill tool finds skills for this init context: replaces the registry's `skills`
       * fields it names; `false` offers no skills (docs/skills.md).
       */
      skills?: SkillsOptions | false;
    }
  }
}

/** The standard places, under the workspace and under the user's home, in precedence order. */
export const STANDARD_SKILL_DIRS: readonly string[] = ['.agents/skills', '.claude/skills'];
/**
 * How long a look at the skills trusts the last one before checking the host's skills folders and
 * SKILL.md files for changes again (ms): a change is seen at most this long after it is made, and a
 * burst of looks (tools() for many agents) costs one check.
 */
export const SKILLS_RECHECK_MS = 200;
/** How long skills read from a backend or a store are reused before they are listed again (ms). */
export const REMOTE_SKILLS_RECHECK_MS = 2000;
/** Sessions whose loaded skills a catalog remembers (for `allowed-tools`); the least recent is dropped past it. */
export const MAX_SKILL_SESSIONS = 1000;

/** The skills one init context sees: the winners, and every problem found on the way. */
export interface SkillView {
  skills: Skill[];
  byName: Map<string, Skill>;
  /** Skipped skills (errors), warnings, hidden duplicates and bounds reached. */
  problems: SkillProblem[];
}

interface Cached {
  view: SkillView;
  /** Host paths and their mtimes when read (-1: absent). */
  seen: Array<[string, number]>;
  /** When backend or store places were listed (0: none searched). */
  remoteAt: number;
  /** When the host paths were last found unchanged. */
  checkedAt: number;
}

const NEVER = new AbortController().signal;

/** The skills of one registry (one per tenant). */
export class SkillCatalog {
  private readonly cache = new Map<string, Cached>();
  private readonly backendKeys = new WeakMap<object, number>();
  private readonly told = new Set<string>();
  private readonly sessions = new Map<string, Map<string, Skill>>();

  constructor(
    /** The registry's `skills` option (undefined: none configured). */
    readonly options: SkillsOptions | undefined,
    private readonly tenant: Tenant,
    private readonly warn: (message: string) => void = (m) => process.emitWarning(m, 'SkillWarning'),
  ) {}

  /** The options in force for `initCtx` (its `skills` over the registry's); undefined when skills are off there. */
  settings(initCtx: Tool.InitContext = {}): SkillsOptions | undefined {
    const own = initCtx.skills;
    if (own === false) return undefined;
    if (!own && !this.options) return undefined;
    return { ...this.options, ...own };
  }

  /** The listing budget for `initCtx`. */
  listingBudget(initCtx: Tool.InitContext = {}): number {
    const n = this.settings(initCtx)?.maxSkillListingChars;
    return typeof n === 'number' && Number.isFinite(n) && n > 0 ? Math.floor(n) : DEFAULT_MAX_SKILL_LISTING_CHARS;
  }

  /** The skills `initCtx` sees; cached until a SKILL.md or a searched folder changes. */
  async view(initCtx: Tool.InitContext = {}, signal: AbortSignal = NEVER): Promise<SkillView> {
    const settings = this.settings(initCtx);
    if (!settings) return { skills: [], byName: new Map(), problems: [] };
    const places = this.places(settings, initCtx);
    const scope = storeScope(this.tenant, undefined);
    const key = JSON.stringify([places, initCtx.backend ? this.backendKey(initCtx.backend) : 0, scope?.base ?? null]);
    const hit = this.cache.get(key);
    if (hit && this.fresh(hit)) return hit.view;
    const { discoverLocal, discoverOnBackend } = await import('./discover.js');
    const budget: WalkBudget = { dirsLeft: MAX_SKILL_DIRS_VISITED };
    const results: PlaceResult[] = [];
    let remote = false;
    for (const place of places) {
      if (place.onBackend) {
        remote = true;
        const { backendOf } = await import('../tools/files/backend/common.js');
        results.push(await discoverOnBackend(place, backendOf(initCtx), budget, signal));
      } else results.push(await discoverLocal(place, budget));
    }
    if (scope) {
      remote = true;
      const { storedSkills } = await import('./store.js');
      results.push(
        await storedSkills(scope).catch((err: Error) => ({
          skills: [],
          seen: [],
          problems: [{ file: 'store', severity: 'error' as const, message: err.message }],
        })),
      );
    }
    const view = merge(results, budget);
    if (this.cache.size > 64) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(key, {
      view,
      seen: results.flatMap((r) => r.seen),
      remoteAt: remote ? Date.now() : 0,
      checkedAt: Date.now(),
    });
    this.tell(view.problems);
    return view;
  }

  /** Loads `name` whole; undefined when `initCtx` has no such skill. Throws a sentence when its files cannot be read. */
  async load(initCtx: Tool.InitContext, name: string, signal: AbortSignal = NEVER): Promise<LoadedSkill | undefined> {
    const skill = (await this.view(initCtx, signal)).byName.get(name);
    if (!skill) return undefined;
    const scope = skill.source === 'store' ? storeScope(this.tenant, undefined) : undefined;
    if (skill.source === 'store' && !scope) return undefined;
    const { loadSkill } = await import('./load.js');
    return loadSkill(skill, { initCtx, tenant: this.tenant, scope, onBackend: this.onBackend(skill, initCtx), signal });
  }

  /** Notes that `sessionID` loaded `skill` (its `allowed-tools` then apply there, when honoured). */
  activate(sessionID: string, skill: Skill): void {
    let active = this.sessions.get(sessionID);
    if (active) this.sessions.delete(sessionID);
    else active = new Map();
    this.sessions.set(sessionID, active);
    if (this.sessions.size > MAX_SKILL_SESSIONS) this.sessions.delete(this.sessions.keys().next().value!);
    active.set(skill.name, skill);
  }

  /** The skills `sessionID` has loaded, in the order it loaded them. */
  active(sessionID: string): Skill[] {
    return [...(this.sessions.get(sessionID)?.values() ?? [])];
  }

  /**
   * What the policy asks about calls made under `initCtx`: each session's loaded skills with their
   * `allowed-tools`; undefined unless `honorAllowedTools` is on there.
   */
  policyGrants(initCtx: Tool.InitContext = {}): SkillGrants | undefined {
    if (this.settings(initCtx)?.honorAllowedTools !== true) return undefined;
    return (sessionID) =>
      sessionID === undefined
        ? []
        : this.active(sessionID).flatMap((s) =>
            s.allowedTools?.length ? [{ skill: s.name, entries: s.allowedTools }] : [],
          );
  }

  /**
   * The host skills places outside the workspace that exist (the user's, explicit dirs): the file
   * tools may read there, so a loaded skill's files are readable by the paths the skill tool gives.
   */
  async readRoots(initCtx: Tool.InitContext = {}): Promise<string[]> {
    const settings = this.settings(initCtx);
    if (!settings) return [];
    const root = workspaceRootFor(initCtx);
    const { within } = await import('./discover.js');
    const dirs = this.places(settings, initCtx)
      .filter((p) => !p.onBackend && !within(p.dir, root))
      .map((p) => p.dir);
    const found = await Promise.all(
      dirs.map((d) =>
        fs.stat(d).then(
          (s) => (s.isDirectory() ? d : undefined),
          () => undefined,
        ),
      ),
    );
    return found.filter((d): d is string => d !== undefined);
  }

  private onBackend(skill: Skill, initCtx: Tool.InitContext): boolean {
    return this.places(this.settings(initCtx) ?? {}, initCtx).some(
      (p) => p.onBackend && (skill.dir === p.dir || skill.dir.startsWith(`${p.dir}/`)),
    );
  }

  /** The places searched for `initCtx`, strongest first. */
  private places(settings: SkillsOptions, initCtx: Tool.InitContext): Array<Place & { onBackend?: boolean }> {
    const onBackend = initCtx.backend !== undefined;
    const root = workspaceRootFor(initCtx);
    const out: Array<Place & { onBackend?: boolean }> = [];
    for (const d of settings.dirs ?? [])
      out.push(
        onBackend
          ? { kind: 'dir', dir: posix.resolve('/', d), required: true, onBackend }
          : { kind: 'dir', dir: path.resolve(root, d), required: true },
      );
    if (settings.defaults) {
      for (const d of STANDARD_SKILL_DIRS)
        out.push(
          onBackend ? { kind: 'workspace', dir: `/${d}`, onBackend } : { kind: 'workspace', dir: path.join(root, d) },
        );
      const home = settings.home ?? os.homedir();
      for (const d of STANDARD_SKILL_DIRS) out.push({ kind: 'user', dir: path.join(home, d) });
    }
    // A place reached twice (the workspace is the home) is searched once, at its strongest.
    return out.filter((p, i) => out.findIndex((q) => q.dir === p.dir && !!q.onBackend === !!p.onBackend) === i);
  }

  private backendKey(backend: object): number {
    let n = this.backendKeys.get(backend);
    if (n === undefined) this.backendKeys.set(backend, (n = nextBackendKey++));
    return n;
  }

  /**
   * Whether nothing read for `cached` changed: every host folder and SKILL.md still has its mtime
   * (checked at most once per SKILLS_RECHECK_MS), and remote places were listed recently.
   */
  private fresh(cached: Cached): boolean {
    const now = Date.now();
    if (cached.remoteAt && now - cached.remoteAt > REMOTE_SKILLS_RECHECK_MS) return false;
    if (now - cached.checkedAt < SKILLS_RECHECK_MS) return true;
    for (const [p, mtime] of cached.seen)
      if ((statSync(p, { throwIfNoEntry: false })?.mtimeMs ?? -1) !== mtime) return false;
    cached.checkedAt = now;
    return true;
  }

  /** Says each problem once (a warm view says nothing again). */
  private tell(problems: SkillProblem[]): void {
    for (const p of problems) {
      if (p.severity !== 'error' && !p.message.includes(' is hidden by ')) continue;
      if (this.told.has(p.message)) continue;
      if (this.told.size > 10_000) this.told.clear();
      this.told.add(p.message);
      this.warn(p.message);
    }
  }
}

let nextBackendKey = 1;

/** Places' results, strongest first, as one view: the first skill of a name wins, the others are named. */
function merge(results: PlaceResult[], budget: WalkBudget): SkillView {
  const byName = new Map<string, Skill>();
  const problems: SkillProblem[] = results.flatMap((r) => r.problems);
  let dropped = 0;
  const all = results.flatMap((r) => r.skills);
  all.sort((a, b) => SKILL_SOURCE_ORDER.indexOf(a.source) - SKILL_SOURCE_ORDER.indexOf(b.source));
  for (const skill of all) {
    problems.push(...skill.warnings);
    const winner = byName.get(skill.name);
    if (winner?.file === skill.file) continue; // one file reached from two places
    if (winner) {
      problems.push({
        file: skill.file,
        field: 'name',
        severity: 'warning',
        message: `Skill "${skill.name}" at ${skill.file} is hidden by the skill of the same name at ${winner.file} (${precedenceText(winner, skill)}). Rename one of them to use both.`,
      });
      continue;
    }
    if (byName.size >= MAX_SKILLS) {
      dropped++;
      continue;
    }
    byName.set(skill.name, skill);
  }
  if (dropped)
    problems.push({
      file: '',
      severity: 'error',
      message: `${byName.size + dropped} skills were found, more than the ${MAX_SKILLS} one agent is offered; the last ${dropped} (by precedence) were left out. Keep fewer skills in the searched places, or point skills.dirs at fewer folders.`,
    });
  if (budget.exhausted)
    problems.push({
      file: budget.exhausted,
      severity: 'error',
      message: `Looking for skills stopped after opening ${MAX_SKILL_DIRS_VISITED} folders (at ${budget.exhausted}); skills past it were not found. Point skills.dirs at the folders that hold skills.`,
    });
  return { skills: [...byName.values()], byName, problems };
}

function precedenceText(winner: Skill, loser: Skill): string {
  if (winner.source === loser.source)
    return `both in ${winner.source === 'dir' ? 'skills.dirs' : `the ${winner.source}'s places`}; the first found wins`;
  const label = {
    dir: 'an explicit skills dir',
    workspace: "the workspace's",
    user: "the user's",
    store: "the store's",
  } as const;
  return `${label[winner.source]} skills win over ${label[loser.source]}`;
}

/**
 * Puts every valid skill under `dirs` (skills directories or skill folders) into the registry's
 * store, under its namespace, one record each, replacing a stored skill of the same name; every
 * registry on that store and namespace (replicas) then offers them. Invalid skills are named in
 * `problems`. Throws when the registry has no store.
 */
export async function importSkills(registry: { tenant: Tenant }, dirs: readonly string[]): Promise<ImportResult> {
  const scope = storeScope(registry.tenant, undefined);
  if (!scope)
    throw new Error(
      'importSkills needs a registry with a store: createRegistry({ store, namespace }) (docs/state.md).',
    );
  const { importSkillFolders } = await import('./store.js');
  return importSkillFolders(scope, dirs);
}

const CATALOG = Symbol('agent-toolbelt.skills');

/** Gives `tenant` (a registry's) its catalog, made from the registry's `skills` option; returns it. */
export function installSkills(
  tenant: Tenant,
  options: SkillsOptions | undefined,
  warn?: (message: string) => void,
): SkillCatalog {
  const catalog = tenant.slot(CATALOG, () => new SkillCatalog(options, tenant, warn));
  tenant.readRoots = (initCtx) => catalog.readRoots(initCtx);
  return catalog;
}

/** The catalog of a registry's tenant (one without registry options when none installed it). */
export function skillCatalogOf(tenant: Tenant): SkillCatalog {
  return tenant.slot(CATALOG, () => new SkillCatalog(undefined, tenant));
}

/** The catalog of the registry `initCtx` belongs to. */
export function catalogOf(initCtx: Tool.InitContext | undefined): SkillCatalog {
  return skillCatalogOf(tenantOf(initCtx));
}
