/**
 * The policy applied inside a search: grep, glob and list over a directory are judged by their
 * `path` (step 2), but the walk then finds paths under it that a rule may refuse to read (`secrets/**`
 * denied, `grep .` allowed). `ReadPathFilter` judges each path the walk finds, as the same tool's
 * call on that path would be judged, and counts what it leaves out without keeping the names.
 * Must not walk, read files or word a tool's result: the tools call `skips` and print `notice()`.
 */
import { realpathSync } from 'node:fs';
import path from 'node:path';
import type { Tool } from '../tool.js';
import { judge, type LayeredRules } from './evaluate.js';
import type { PolicyAction, PolicyCheck, PolicySubject } from './types.js';

/** Stands for "any name" below a directory: no file is called that, so a pattern matching it matches every name. */
const ANY = '\0';

/** One search call's filter: `rules` are the policy's rules that can apply to `check`'s tool (evaluate.ts rulesFor). */
export class ReadPathFilter implements Tool.ReadFilter {
  /** What was left out, so a path met twice (overlapping patterns) counts once. */
  private readonly left = new Set<string>();
  /** Real path of each directory met (one realpath per directory, not per file). */
  private readonly realDirs = new Map<string, string>();

  constructor(
    private readonly check: Omit<PolicyCheck, 'subject' | 'label'>,
    private readonly rules: LayeredRules,
    private readonly fallback: PolicyAction,
    /** The workspace roots as given (main first) and as real paths. */
    private readonly roots: readonly string[],
    private readonly realRoots: readonly string[],
  ) {}

  skips(abs: string, isDir: boolean, real?: string): boolean {
    const realPath = real ?? this.realOf(abs);
    const value = this.shown(abs);
    const realValue = realPath === abs ? value : this.shown(realPath);
    const outside = !this.inside(abs) || !this.inside(realPath);
    // A directory is left out whole only when every path under it, at any depth, is refused.
    const refused = isDir
      ? this.denied(under(value, ANY), under(realValue, ANY), outside) &&
        this.denied(under(value, `${ANY}/${ANY}`), under(realValue, `${ANY}/${ANY}`), outside)
      : this.denied(value, realValue, outside);
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

  private denied(value: string, realValue: string, outside: boolean): boolean {
    const subject: PolicySubject = { kind: 'path', value, outside };
    if (realValue !== value) subject.also = [realValue];
    const check = { ...this.check, subject, label: '' } as PolicyCheck;
    return judge(check, this.rules, this.fallback).action === 'deny';
  }

  /** The real path of `abs`: its directory's real path (cached) plus its name. */
  private realOf(abs: string): string {
    const dir = path.dirname(abs);
    let realDir = this.realDirs.get(dir);
    if (realDir === undefined) {
      try {
        realDir = realpathSync.native(dir);
      } catch {
        realDir = dir; // vanished: judged as found
      }
      this.realDirs.set(dir, realDir);
    }
    return realDir === dir ? abs : path.join(realDir, path.basename(abs));
  }

  /** As rules see a path: relative to the main root when inside it (`.` for the root), else absolute. */
  private shown(abs: string): string {
    for (const root of [this.realRoots[0], this.roots[0]]) {
      const rel = within(abs, root);
      if (rel !== undefined) return rel || '.';
    }
    return abs;
  }

  private inside(abs: string): boolean {
    return [...this.roots, ...this.realRoots].some((r) => within(abs, r) !== undefined);
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
  return p.startsWith(prefix) ? p.slice(prefix.length).split(path.sep).join('/') : undefined;
}
