/**
 * The policy applied inside a search: grep, glob and list over a directory are judged by their
 * `path` (step 2), but the walk then finds paths under it that a rule may refuse to read (`secrets/**`
 * denied, `grep .` allowed). `ReadPathFilter` judges each path the walk finds, as the same tool's
 * call on that path would be judged, and counts what it leaves out without keeping the names.
 * Must not walk, read files or word a tool's result: the tools call `skips` and print `notice()`.
 */
import { lstatSync, realpathSync } from 'node:fs';
import path from 'node:path';
import type { Tool } from '../tool.js';
import { judge, type LayeredRules } from './evaluate.js';
import { pathMatcher } from './glob.js';
import type { PolicyAction, PolicyCheck, PolicySubject } from './types.js';

/** Stands for "any name" below a directory: no file is called that, so a pattern matching it matches every name. */
const ANY = '\0';

/** One search call's filter: `rules` are the policy's rules that can apply to `check`'s tool (evaluate.ts rulesFor). */
export class ReadPathFilter implements Tool.ReadFilter {
  /** What was left out, so a path met twice (overlapping patterns) counts once. */
  private readonly left = new Set<string>();
  /** Real path of each directory met (one realpath per directory, not per file). */
  private readonly realDirs = new Map<string, string>();

  /** Every root, given and real, for the inside test. */
  private readonly allRoots: readonly string[];
  /**
   * Without `default: deny`, a path is refused exactly when a deny rule matches it (deny wins over
   * every other row): those rules, compiled once, instead of the whole precedence per path.
   */
  private readonly denies?: ReadonlyArray<{ outside?: boolean; match: (value: string) => boolean }>;

  constructor(
    private readonly check: Omit<PolicyCheck, 'subject' | 'label'>,
    private readonly rules: LayeredRules,
    private readonly fallback: PolicyAction,
    /** The workspace roots as given (main first) and as real paths. */
    private readonly roots: readonly string[],
    private readonly realRoots: readonly string[],
  ) {
    this.allRoots = [...roots, ...realRoots];
    if (fallback !== 'deny')
      this.denies = [...rules.policy, ...rules.defaults]
        .filter((r) => r.action === 'deny')
        .map((r) => ({
          outside: r.outsideWorkspace,
          match: r.pattern === undefined ? () => true : pathMatcher(r.pattern),
        }));
  }

  skips(abs: string, isDir: boolean, real?: string): boolean {
    const realPath = real ?? this.realOf(abs);
    // A directory the walk listed (a link is never one): its real path is known for its own entries.
    if (isDir && !this.realDirs.has(abs)) this.realDirs.set(abs, realPath);
    const value = this.shown(abs);
    const realValue = realPath === abs ? value : this.shown(realPath);
    const outside = !this.inside(abs) || !this.inside(realPath);
    // A directory is left out whole when it is refused itself (`list` of it would be), or when every
    // path under it, at any depth, is.
    // (A directory is not refused by `default: deny` alone: allow rules name the files under it.)
    const refused =
      this.denied(value, realValue, outside, isDir) ||
      (isDir &&
        this.denied(under(value, ANY), under(realValue, ANY), outside) &&
        this.denied(under(value, `${ANY}/${ANY}`), under(realValue, `${ANY}/${ANY}`), outside));
    if (refused) this.left.add(abs);
    return refused;
  }

  get skipped(): number {
    return this.left.size;
  }

  notice(): string {
    const n = this.skipped;
    if (n === 0) return '';
    const tool = this.check.tool;
    return n === 1
      ? `(1 path was left out because the policy does not let ${tool} read it; it is not named here. Ask the user if you need it.)`
      : `(${n} paths were left out because the policy does not let ${tool} read them; they are not named here. Ask the user if you need them.)`;
  }

  private denied(value: string, realValue: string, outside: boolean, byRuleOnly = false): boolean {
    if (this.denies) {
      for (const d of this.denies) {
        if (d.outside !== undefined && d.outside !== outside) continue;
        if (d.match(value) || (realValue !== value && d.match(realValue))) return true;
      }
      return false;
    }
    const subject: PolicySubject = { kind: 'path', value, outside };
    if (realValue !== value) subject.also = [realValue];
    const check = { ...this.check, subject, label: '' } as PolicyCheck;
    const decision = judge(check, this.rules, this.fallback);
    return decision.action === 'deny' && (!byRuleOnly || decision.source !== 'default');
  }

  /** The real path of `abs`: its directory's real path (cached) plus its name. */
  private realOf(abs: string): string {
    const dir = path.dirname(abs);
    const realDir = this.realDir(dir);
    return realDir === dir ? abs : path.join(realDir, path.basename(abs));
  }

  /**
   * A directory's real path, cached. A walk meets a directory's parent first: then one lstat says
   * whether the directory itself is a link, instead of a realpath (one readlink per component).
   */
  private realDir(dir: string): string {
    let real = this.realDirs.get(dir);
    if (real !== undefined) return real;
    const parentReal = this.realDirs.get(path.dirname(dir));
    try {
      real =
        parentReal !== undefined && !lstatSync(dir).isSymbolicLink()
          ? path.join(parentReal, path.basename(dir))
          : realpathSync.native(dir);
    } catch {
      real = dir; // vanished: judged as found
    }
    this.realDirs.set(dir, real);
    return real;
  }

  /** As rules see a path: relative to the main root when inside it (`.` for the root), else absolute. */
  private shown(abs: string): string {
    const rel = within(abs, this.realRoots[0]) ?? within(abs, this.roots[0]);
    return rel === undefined ? abs : rel || '.';
  }

  private inside(abs: string): boolean {
    for (const r of this.allRoots)
      if (abs === r || abs.startsWith(r.endsWith(path.sep) ? r : r + path.sep)) return true;
    return false;
  }
}

/** `rest` under the rule-form path `dir`. */
function under(dir: string, rest: string): string {
  return dir === '.' ? rest : `${dir}/${rest}`;
}

/** `p` relative to `root` (posix separators) when inside it, else undefined. */
function within(p: string, root: string): string | undefined {
  if (p === root) return '';
  const prefix = root.endsWith(path.sep) ? root : root + path.sep;
  if (!p.startsWith(prefix)) return undefined;
  const rel = p.slice(prefix.length);
  return path.sep === '/' ? rel : rel.split(path.sep).join('/');
}
