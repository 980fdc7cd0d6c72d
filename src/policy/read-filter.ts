/**
 * The policy applied inside a search: grep, glob and list over a directory are judged by their
 * `path` (step 2), but the walk then finds paths under it that a rule may refuse to read (`secrets/**`
 * denied, `grep .` allowed) or ask about (`.env*` under the defaults). `ReadPathFilter` judges each
 * path the walk finds as the same tool's call on that path would be judged, and leaves it out when
 * that call would be refused or would ask (nobody approved it: the search cannot ask per path).
 * It counts what it leaves out, by why, without keeping the names.
 * Must not walk, read files or word a tool's result: the tools call `skips` and print `notice()`.
 */
import { lstatSync, realpathSync } from 'node:fs';
import path from 'node:path';
import type { Tool } from '../authoring/tool.js';
import { judge, type LayeredRules } from './evaluate.js';
import { anyPathMatcher, pathMatcher } from './glob.js';
import type { PolicyAction, PolicyCheck, PolicyRule, PolicySubject } from './types.js';

/** Stands for "any name" below a directory: no file is called that, so a pattern matching it matches every name. */
const ANY = '\0';

/** Why a path is left out: a rule refuses it, or its read would ask and nobody approved it. */
type Refusal = 'deny' | 'ask';

/** A rule compiled for the fast path: its `outsideWorkspace` selector and its pattern (none matches every path). */
interface Compiled {
  outside?: boolean;
  match: (value: string) => boolean;
}

/**
 * Rules of one action and layer compiled for the fast path: the patterns of those without an
 * `outsideWorkspace` selector or'ed into one matcher (`anyPathMatcher`), the others one by one.
 */
interface Group {
  any?: (value: string) => boolean;
  scoped: readonly Compiled[];
}

/** Whether a rule of the group matches the path, by any spelling. */
function matchesGroup(g: Group, value: string, realValue: string, outside: boolean): boolean {
  if (g.any && (g.any(value) || (realValue !== value && g.any(realValue)))) return true;
  for (const d of g.scoped) {
    if (d.outside !== outside) continue;
    if (d.match(value) || (realValue !== value && d.match(realValue))) return true;
  }
  return false;
}

function group(list: readonly PolicyRule[], action: PolicyAction): Group {
  const rules = list.filter((r) => r.action === action);
  const plain = rules.filter((r) => r.outsideWorkspace === undefined);
  const patterns = plain.flatMap((r) => (r.pattern === undefined ? [] : [r.pattern]));
  const any = plain.length > patterns.length ? () => true : patterns.length ? anyPathMatcher(patterns) : undefined;
  const scoped = rules
    .filter((r) => r.outsideWorkspace !== undefined)
    .map((r) => ({
      outside: r.outsideWorkspace,
      match: r.pattern === undefined ? () => true : pathMatcher(r.pattern),
    }));
  return { any, scoped };
}

/**
 * One search call's filter. `rules` are the policy's rules that can apply to `check`'s tool
 * (evaluate.ts rulesFor), without the asks that do not depend on the path or that the call itself
 * was asked (policy.ts readFilter); `approved` says whether the session approved "always" this
 * tool's read of a path.
 */
export class ReadPathFilter implements Tool.ReadFilter {
  /** What was left out and why, so a path met twice (overlapping patterns) counts once. */
  private readonly left = new Map<string, Refusal>();
  /** Real path of each directory met (one realpath per directory, not per file). */
  private readonly realDirs = new Map<string, string>();

  /** The directory `realOf` last looked up, and its real path. */
  private lastDir = '';
  private lastReal = '';

  /** Every root, given and real, for the inside test. */
  private readonly allRoots: readonly string[];
  /** Each of `allRoots` ending with the separator. */
  private readonly prefixes: readonly string[];
  /**
   * Without `default: deny`, a path is refused exactly when a deny rule matches it (deny wins over
   * every other row): those rules, compiled once, instead of the whole precedence per path.
   */
  private readonly denies?: Group;
  /**
   * The same for asks (the default action `ask` is not one: the search call itself was asked about
   * it): the policy's asks, its allows (which pre-approve past a default ask) and the defaults' asks.
   */
  private readonly asks?: { policy: Group; allows: readonly Compiled[]; defaults: Group };

  constructor(
    private readonly check: Omit<PolicyCheck, 'subject' | 'label'>,
    private readonly rules: LayeredRules,
    private readonly fallback: PolicyAction,
    /** The workspace roots as given (main first) and as real paths. */
    private readonly roots: readonly string[],
    private readonly realRoots: readonly string[],
    /** The session's "always" approval of this tool's read of a path, if any. */
    private readonly approved: (check: PolicyCheck) => PolicyRule | undefined = () => undefined,
  ) {
    this.allRoots = [...roots, ...realRoots];
    this.prefixes = this.allRoots.map(withSep);
    if (fallback === 'deny') return;
    this.denies = group([...rules.policy, ...rules.defaults], 'deny');
    const asks = { policy: group(rules.policy, 'ask'), defaults: group(rules.defaults, 'ask') };
    const none = (g: Group) => !g.any && !g.scoped.length;
    if (!none(asks.policy) || !none(asks.defaults))
      this.asks = {
        ...asks,
        allows: rules.policy
          .filter((r) => r.action === 'allow')
          .map((r) => ({
            outside: r.outsideWorkspace,
            match: r.pattern === undefined ? () => true : pathMatcher(r.pattern),
          })),
      };
  }

  /**
   * Judges a backend's paths (`/`-rooted, not on this disk): a path is its own real path, and no
   * file of this host is looked at.
   */
  onBackend(): this {
    this.backend = true;
    return this;
  }

  private backend = false;

  skips(abs: string, isDir: boolean, real?: string): boolean {
    const realPath = real ?? (this.backend ? abs : this.realOf(abs));
    const value = this.shown(abs);
    const realValue = realPath === abs ? value : this.shown(realPath);
    const outside = !this.inside(abs) || (realPath !== abs && !this.inside(realPath));
    return this.judged(abs, isDir, realPath, value, realValue, outside);
  }

  /**
   * `skips` for the entry `name` of the directory `dir` a walk just listed (not a link's target:
   * a link is judged as the entry it is). The directory's shown and real forms are worked out once
   * for all its entries, so an entry costs one string and the rule match.
   */
  skipsIn(dir: string, name: string, isDir: boolean): boolean {
    if (dir !== this.listDir) this.enterListing(dir);
    const l = this.listing;
    // Outside the roots (or a link out of them) an entry can still be a root itself: judged whole.
    if (l.outside) return this.skips(l.prefix + name, isDir);
    const value = l.shown === '.' ? name : l.shown + l.join + name;
    const realValue = l.realShown === l.shown ? value : l.realShown === '.' ? name : l.realShown + l.realJoin + name;
    // Most entries are kept: the absolute path is built only for what is left out or recorded.
    const refused = this.refusalOf(value, realValue, l.outside, isDir);
    if (isDir) {
      const abs = l.prefix + name;
      if (!this.realDirs.has(abs)) this.realDirs.set(abs, l.realDir === dir ? abs : l.realPrefix + name);
    }
    if (refused) this.left.set(l.prefix + name, refused);
    return refused !== undefined;
  }

  /** The directory `skipsIn` last saw, and its forms. */
  private listDir = '';
  private listing = {
    prefix: '',
    realDir: '',
    realPrefix: '',
    shown: '',
    realShown: '',
    join: '/',
    realJoin: '/',
    outside: false,
  };

  private enterListing(dir: string): void {
    const realDir = this.backend ? dir : this.realDir(dir);
    const shown = this.shown(dir);
    const realShown = realDir === dir ? shown : this.shown(realDir);
    this.listDir = dir;
    this.listing = {
      prefix: withSep(dir),
      realDir,
      realPrefix: withSep(realDir),
      shown,
      realShown,
      join: shown.endsWith('/') ? '' : '/',
      realJoin: realShown.endsWith('/') ? '' : '/',
      outside: !this.inside(dir) || (realDir !== dir && !this.inside(realDir)),
    };
  }

  private judged(
    abs: string,
    isDir: boolean,
    realPath: string,
    value: string,
    realValue: string,
    outside: boolean,
  ): boolean {
    // A directory the walk listed (a link is never one): its real path is known for its own entries.
    if (isDir && !this.realDirs.has(abs)) this.realDirs.set(abs, realPath);
    const refused = this.refusalOf(value, realValue, outside, isDir);
    if (refused) this.left.set(abs, refused);
    return refused !== undefined;
  }

  /** Why the entry (a directory: the tree under it) is left out, or undefined when it is kept. */
  private refusalOf(value: string, realValue: string, outside: boolean, isDir: boolean): Refusal | undefined {
    // A directory is left out whole when it is refused itself (`list` of it would be), or when every
    // path under it, at any depth, is.
    // (A directory is not refused by `default: deny` alone: allow rules name the files under it.)
    let refused = this.refusal(value, realValue, outside, isDir);
    if (!refused && isDir) {
      const child = this.refusal(under(value, ANY), under(realValue, ANY), outside);
      const deeper = child && this.refusal(under(value, `${ANY}/${ANY}`), under(realValue, `${ANY}/${ANY}`), outside);
      if (child && deeper) refused = child === 'deny' && deeper === 'deny' ? 'deny' : 'ask';
    }
    return refused;
  }

  get skipped(): number {
    return this.left.size;
  }

  /** Paths left out because reading them would ask (the rest of `skipped` are refused outright). */
  get asked(): number {
    let n = 0;
    for (const why of this.left.values()) if (why === 'ask') n++;
    return n;
  }

  notice(): string {
    const n = this.skipped;
    if (n === 0) return '';
    const tool = this.check.tool;
    const asked = this.asked;
    const denied = n - asked;
    const them = n === 1 ? 'it' : 'them';
    const left = n === 1 ? '1 path was left out' : `${n} paths were left out`;
    const unnamed = n === 1 ? 'it is not named here' : 'they are not named here';
    if (asked === 0)
      return `(${left} because the policy does not let ${tool} read ${them}; ${unnamed}. Ask the user if you need ${them}.)`;
    const why =
      denied === 0
        ? `because the policy asks the user for approval before ${tool} reads ${them} (by default, files that usually hold secrets)`
        : `: ${denied} because the policy does not let ${tool} read ${denied === 1 ? 'it' : 'them'}, ${asked} because the policy asks the user for approval before ${tool} reads ${asked === 1 ? 'it' : 'them'} (by default, files that usually hold secrets)`;
    return `(${left}${denied === 0 ? ' ' : ''}${why}; ${unnamed}. Reading such a file directly by its name asks the user for approval; ask the user if you need ${them}.)`;
  }

  /** Whether the tool's call on this path would be refused (`deny`) or would ask (`ask`); undefined when it may read it. */
  private refusal(value: string, realValue: string, outside: boolean, byRuleOnly = false): Refusal | undefined {
    if (this.denies) {
      if (matchesGroup(this.denies, value, realValue, outside)) return 'deny';
      const asks = this.asks;
      if (!asks) return undefined;
      // Most paths match no ask: one pass, before the precedence below.
      const policyAsk = matchesGroup(asks.policy, value, realValue, outside);
      if (!policyAsk && !matchesGroup(asks.defaults, value, realValue, outside)) return undefined;
      if (this.approved(this.checkOf(value, realValue, outside))) return undefined;
      if (policyAsk) return 'ask';
      // A policy allow pre-approves past a default ask when it matches every spelling (a link too).
      for (const a of asks.allows) {
        if (a.outside !== undefined && a.outside !== outside) continue;
        if (a.match(value) && (realValue === value || a.match(realValue))) return undefined;
      }
      return 'ask';
    }
    const decision = judge(this.checkOf(value, realValue, outside), this.rules, this.fallback, this.approved);
    if (decision.action === 'allow' || (byRuleOnly && decision.source === 'default')) return undefined;
    return decision.action;
  }

  private checkOf(value: string, realValue: string, outside: boolean): PolicyCheck {
    const subject: PolicySubject = { kind: 'path', value, outside };
    if (realValue !== value) subject.also = [realValue];
    return { ...this.check, subject, label: '' };
  }

  /** The real path of `abs`: its directory's real path (cached) plus its name. */
  private realOf(abs: string): string {
    const cut = abs.lastIndexOf(path.sep);
    const dir = cut > 0 ? abs.slice(0, cut) : path.dirname(abs);
    // A walk asks about a directory's entries one after another: the last directory is kept at hand.
    if (dir !== this.lastDir) this.lastReal = this.realDir((this.lastDir = dir));
    const realDir = this.lastReal;
    return realDir === dir ? abs : path.join(realDir, abs.slice(cut + 1));
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
    const rel =
      within(abs, this.realRoots[0], this.prefixes[this.roots.length]) ?? within(abs, this.roots[0], this.prefixes[0]);
    return rel === undefined ? abs : rel || '.';
  }

  private inside(abs: string): boolean {
    for (let i = 0; i < this.allRoots.length; i++)
      if (abs === this.allRoots[i] || abs.startsWith(this.prefixes[i])) return true;
    return false;
  }
}

/** `dir` ending with the path separator. */
function withSep(dir: string): string {
  return dir.endsWith(path.sep) ? dir : dir + path.sep;
}

/** `rest` under the rule-form path `dir`. */
function under(dir: string, rest: string): string {
  return dir === '.' ? rest : `${dir}/${rest}`;
}

/** `p` relative to `root` (posix separators) when inside it, else undefined. */
function within(p: string, root: string, prefix = withSep(root)): string | undefined {
  if (p === root) return '';
  if (!p.startsWith(prefix)) return undefined;
  const rel = p.slice(prefix.length);
  return path.sep === '/' ? rel : rel.split(path.sep).join('/');
}
