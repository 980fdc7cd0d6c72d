/**
 * Pattern matching for rules. Paths use globs (`*` within a segment, `**` across segments, `?`,
 * `[...]`, `{a,b}`); a pattern without `/` matches the last segment at any depth (`.env*` matches
 * `a/.env.local`). Commands, URLs, hosts and servers use `*` for any text; a command pattern ending
 * in ` *` also matches the command without arguments (`git status *` matches `git status`).
 * Must not know rules or checks: evaluate.ts decides which pattern applies to which subject.
 */
import { expandBraces } from '../text/braces.js';

const cache = new Map<string, RegExp>();
/** Compiled patterns kept; the cache is cleared past this (policies have a handful of patterns). */
const MAX_CACHED_PATTERNS = 1000;

function compiled(key: string, make: () => RegExp): RegExp {
  let re = cache.get(key);
  if (!re) {
    if (cache.size >= MAX_CACHED_PATTERNS) cache.clear();
    cache.set(key, (re = make()));
  }
  return re;
}

/** Whether a path glob matches a (workspace-relative or absolute) path. */
export function matchPath(pattern: string, value: string): boolean {
  return pathMatcher(pattern)(value);
}

/** `matchPath` with the pattern compiled once: for judging many paths against one pattern. */
export function pathMatcher(pattern: string): (value: string) => boolean {
  const anchored = pattern.includes('/') && !pattern.startsWith('**/');
  const floating = pattern.startsWith('**/');
  const re = compiled(`p:${pattern}`, () => new RegExp(`^${pathGlobSource(pattern.replace(/^\.\//, ''))}$`));
  return (value) => {
    if (re.test(value)) return true;
    if (anchored) return false;
    // No slash: the pattern names a file anywhere (gitignore style).
    const last = value.slice(value.lastIndexOf('/') + 1);
    return re.test(last) || (floating && re.test(value.replace(/^\//, '')));
  };
}

/**
 * Whether any of `patterns` matches the path (`pathMatcher` of each, or'ed): one regular expression
 * per way of matching instead of one per pattern, for judging every path of a walk against many rules.
 */
export function anyPathMatcher(patterns: readonly string[]): (value: string) => boolean {
  const source = (list: readonly string[]) => list.map((p) => pathGlobSource(p.replace(/^\.\//, ''))).join('|');
  const regex = (list: readonly string[]) => (list.length ? new RegExp(`^(?:${source(list)})$`) : undefined);
  const named = patterns.filter((p) => !(p.includes('/') && !p.startsWith('**/')));
  // A name pattern without `/` or `**` matches no text holding a `/`: the last segment test covers
  // it, so the whole path is tested against the others only.
  const whole = regex(patterns.filter((p) => p.includes('/') || p.includes('**')));
  const last = regex(named);
  const float = regex(patterns.filter((p) => p.startsWith('**/')));
  const match = (value: string): boolean => {
    if (whole?.test(value)) return true;
    if (!last) return false;
    // No slash: the pattern names a file anywhere (gitignore style).
    if (last.test(value.slice(value.lastIndexOf('/') + 1))) return true;
    return float !== undefined && value.startsWith('/') && float.test(value.slice(1));
  };
  // Most paths hold none of the patterns' fixed text (`.env`, `.pem`, `.ssh/`): a substring search
  // rules them out before any expression runs.
  const needles = patterns.map(fixedText);
  if (needles.some((n) => n === '')) return match;
  const holds = new RegExp(needles.map(escape).join('|'));
  return (value) => holds.test(value) && match(value);
}

/** The longest text a path glob matches literally (outside `*`, `?`, `[...]` and `{...}`): every match holds it. */
function fixedText(pattern: string): string {
  let best = '';
  let run = '';
  const end = () => {
    if (run.length > best.length) best = run;
    run = '';
  };
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    const close = c === '[' ? pattern.indexOf(']', i + 1) : c === '{' ? pattern.indexOf('}', i + 1) : -2;
    if (c === '*' || c === '?') {
      end();
      // `**/` may match nothing at all, its `/` included.
      if (pattern.startsWith('**/', i)) i += 2;
    } else if (close >= 0) {
      end();
      i = close;
    } else run += c;
  }
  end();
  return best.replace(/^\.\//, '');
}

/** Whether a path pattern names a place (it has a `/`), rather than a file name at any depth. */
export function isAnchored(pattern: string): boolean {
  return pattern.includes('/');
}

/**
 * Whether an anchored path glob can match some path strictly under the directory `dir` (`.` is
 * the workspace root): `protected/**` can under `protected` and under `.`, `a/*.txt` under `a`,
 * a `.ssh` tree at any depth under any directory. Segment by segment, so it needs no files on disk.
 */
export function matchUnder(pattern: string, dir: string): boolean {
  let alternatives: string[];
  try {
    alternatives = expandBraces(pattern.replace(/^\.\//, ''));
  } catch {
    return true; // too many alternatives to check: assume it can (the rule applies)
  }
  const d = dir === '.' || dir === '' ? [] : dir.split('/');
  return alternatives.some((alt) => under(alt.split('/'), 0, d, 0));
}

function under(p: string[], pi: number, d: string[], di: number): boolean {
  if (pi === p.length) return false;
  if (di === d.length) return true; // the rest of the pattern names something below `dir`
  if (p[pi] === '**') return under(p, pi + 1, d, di) || under(p, pi, d, di + 1);
  const seg = compiled(`s:${p[pi]}`, () => new RegExp(`^${pathGlobSource(p[pi])}$`));
  return seg.test(d[di]) && under(p, pi + 1, d, di + 1);
}

/** Whether a text glob (`*` = any text) matches a command, URL, host or server name. */
export function matchText(pattern: string, value: string): boolean {
  const re = compiled(`t:${pattern}`, () => {
    const optionalArgs = pattern.endsWith(' *');
    const body = optionalArgs ? pattern.slice(0, -2) : pattern;
    return new RegExp(`^${body.split('*').map(escape).join('[\\s\\S]*')}${optionalArgs ? '(?:\\s[\\s\\S]*)?' : ''}$`);
  });
  return re.test(value);
}

/** Whether `pattern` is usable as a path glob; returns the problem when it is not. */
export function patternProblem(pattern: string): string | undefined {
  if (!pattern) return 'the pattern is empty';
  try {
    new RegExp(pathGlobSource(pattern));
  } catch (err) {
    return `the pattern is not a valid glob (${(err as Error).message})`;
  }
  return undefined;
}

function pathGlobSource(glob: string): string {
  let out = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === '*') {
      if (glob[i + 1] === '*') {
        const slash = glob[i + 2] === '/';
        out += slash ? '(?:[^/]*/)*' : '.*';
        i += slash ? 2 : 1;
      } else out += '[^/]*';
    } else if (c === '?') out += '[^/]';
    else if (c === '[') {
      const end = glob.indexOf(']', i + 1);
      if (end === -1) out += '\\[';
      else {
        out += `[${glob
          .slice(i + 1, end)
          .replace(/^!/, '^')
          .replace(/\\/g, '\\\\')}]`;
        i = end;
      }
    } else if (c === '{') {
      const end = glob.indexOf('}', i + 1);
      if (end === -1) out += '\\{';
      else {
        out += `(?:${glob
          .slice(i + 1, end)
          .split(',')
          .map((alt) => pathGlobSource(alt))
          .join('|')})`;
        i = end;
      }
    } else out += escape(c);
  }
  return out;
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}
