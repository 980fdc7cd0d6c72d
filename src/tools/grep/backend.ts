/**
 * grep over a backend. The protocol's grep is literal and ours takes a regex: a pattern that is a
 * plain literal (case-sensitive, no context asked) goes to the backend's own grep; anything else runs
 * our regex over the files the backend's readRaw answers, for trees up to MAX_BACKEND_GREP_FILES
 * files and MAX_BACKEND_GREP_CHARS characters (above them it refuses, saying so). Either way the
 * result says which one ran, and has the local grep's shape, cap and saved full list.
 * Must not touch the local disk (but for the saved full list, in the tenant's output store).
 */
import posix from 'node:path/posix';
import { Tool } from '../../authoring/tool.js';
import { tenantOf } from '../../workspace/tenant.js';
import { descriptionBeside } from '../../authoring/description.js';
import { abortedMessage, throwIfAborted } from '../../authoring/abort.js';
import { IncludeMatcher, ignoredNames, underIgnoredName } from '../files/search-common.js';
import { backendOf, backendPath, entryAt, shownPath } from '../files/backend/common.js';
import { BackendError, MAX_BACKEND_ENTRIES, type GuardedBackend } from '../../backend/guard.js';
import { compilePattern, type CompiledPattern } from './pattern.js';
import { Collector, FullMatchList, render, type GrepBackend, type GrepMetadata } from './results.js';
import { MAX_MATCHES } from './grep.js';
import { parameters } from './grep.js';

/** Most files a regex search over a backend reads (each is one readRaw there). */
export const MAX_BACKEND_GREP_FILES = 2000;
/** Most characters, all files together, a regex search over a backend reads. */
export const MAX_BACKEND_GREP_CHARS = 20 * 1024 * 1024;

/** The regex metacharacters: a pattern without them (once unescaped) is a plain literal. */
const META = /[\\^$.*+?()[\]{}|]/;

export const BackendGrepTool = Tool.define<typeof parameters, GrepMetadata>(
  {
    id: 'grep',
    permissions: { required: ['read'] },
    descriptionPath: descriptionBeside(new URL('./grep.js', import.meta.url).href, 'grep'),
    danger: 'safe',
  },
  (initCtx) => {
    const g = backendOf(initCtx);
    const outputs = tenantOf(initCtx).outputs;
    const ignored = ignoredNames(initCtx);
    return {
      description:
        'Search file contents with a regular expression (ripgrep when available); results grouped by file, newest first; skips node_modules, .git, build output and .gitignored files.',
      parameters,
      async execute(args, ctx) {
        const before = args.before ?? args.context ?? 0;
        const after = args.after ?? args.context ?? 0;
        const target = backendPath(args.path ?? '.');
        const missing = () =>
          new Error(
            `Path ${JSON.stringify(args.path)} does not exist (resolved to ${target}). Check the path, or use glob to find it.`,
          );
        const literal = plainLiteral(args.pattern);
        const engine: GrepBackend =
          literal !== undefined && !args.caseInsensitive && before === 0 && after === 0
            ? 'backend-literal'
            : 'backend-regex';
        // Validated always (a literal can only fail on a line break), compiled only for our own search.
        const compiled =
          engine === 'backend-regex' || /[\r\n]/.test(args.pattern)
            ? compilePattern(args.pattern, !!args.caseInsensitive)
            : undefined;
        const include = args.include !== undefined ? new IncludeMatcher(args.include) : undefined;
        // The regex search needs to know a file from a directory; the backend's literal grep does
        // not, so there the path is looked up only when the grep found nothing or refused (to tell
        // a missing path from a search without matches): one lookup fewer on the common path.
        const entry = engine === 'backend-regex' ? await entryAt(g, target, ctx.abort) : undefined;
        if (entry?.kind === 'missing') throw missing();
        const display = (p: string) => shownPath(p);
        const full = new FullMatchList(outputs, display);
        const collector = new Collector(MAX_MATCHES, after, before > 0 || after > 0, full);
        ctx.metadata({
          title: `grep ${JSON.stringify(args.pattern)} in ${shownPath(target)}`,
          metadata: { backend: engine },
        });
        // Over a directory, files the policy does not let grep read are left out (never read, for the regex path).
        const filter = entry?.kind === 'file' ? undefined : await ctx.readFilter?.();
        // Files below a default-ignored name (node_modules, dist, ...) are left out as the local grep leaves them.
        const outside = (p: string) => underIgnoredName(target, p, ignored);
        const skip = filter ? (p: string) => outside(p) || filter.skips(p, false, p) : outside;
        try {
          let cutByBackend = false;
          if (engine === 'backend-literal') {
            let found;
            try {
              found = await literalSearch(g, literal!, target, include, skip, collector, ctx.abort);
            } catch (err) {
              if (err instanceof BackendError && err.kind === 'refused' && (await isMissing(g, target, ctx.abort)))
                throw missing();
              throw err;
            }
            if (found.matches === 0 && (await isMissing(g, target, ctx.abort))) throw missing();
            cutByBackend = found.truncated;
          } else {
            const files: Array<[string, string]> =
              entry!.kind === 'file'
                ? entry!.file.text !== undefined
                  ? [[target, entry!.file.text]]
                  : []
                : await readTree(g, target, include, skip, ctx.abort);
            for (const [p, text] of files) collectFile(collector, p, text, compiled!, before, after);
          }
          throwIfAborted(ctx.abort, abortedMessage('grep'));
          const result = await render(collector, { display }, args.pattern, target, engine);
          const how =
            engine === 'backend-literal'
              ? `(Searched by the backend ${g.name}'s own grep, which matches the pattern literally; files in path order.${cutByBackend ? ' The backend stopped early: more matches may exist.' : ''})`
              : `(Searched with the regular expression by agent-toolbelt over the files the backend ${g.name} returned (readRaw); files in path order.)`;
          const notice = filter?.notice();
          return {
            ...result,
            output: `${result.output}\n\n${how}${notice ? `\n\n${notice}` : ''}`,
            ...(filter?.skipped ? { metadata: { ...result.metadata, skippedByPolicy: filter.skipped } } : {}),
          };
        } finally {
          full.close();
        }
      },
    };
  },
);

/** The literal a regex stands for when it has no regex syntax (`\.` unescaped), else undefined. */
function plainLiteral(pattern: string): string | undefined {
  if (/\\[a-zA-Z0-9]/.test(pattern)) return undefined;
  const unescaped = pattern.replace(/\\([^a-zA-Z0-9])/g, '$1');
  const rest = pattern.replace(/\\[^a-zA-Z0-9]/g, '');
  return META.test(rest) ? undefined : unescaped;
}

/** Whether nothing is at `target` (the backend's path). */
async function isMissing(g: GuardedBackend, target: string, signal: AbortSignal): Promise<boolean> {
  return (await entryAt(g, target, signal)).kind === 'missing';
}

/** The backend's literal grep, grouped per file in path order: the matches kept, and whether the backend cut its answer. */
async function literalSearch(
  g: GuardedBackend,
  literal: string,
  target: string,
  include: IncludeMatcher | undefined,
  skip: ((p: string) => boolean) | undefined,
  collector: Collector,
  signal: AbortSignal,
): Promise<{ matches: number; truncated: boolean }> {
  const answer = await g.grep(literal, target, null, MAX_BACKEND_ENTRIES, signal);
  let matches = 0;
  const byFile = new Map<string, Array<{ line: number; text: string }>>();
  for (const m of answer.matches) {
    const p = posix.resolve(target, m.path);
    if (include && !include.matches(posix.relative(target, p) || posix.basename(p))) continue;
    let list = byFile.get(p);
    if (!list && skip?.(p)) continue;
    if (!list) byFile.set(p, (list = []));
    list.push({ line: m.line, text: m.text });
    matches++;
  }
  for (const p of [...byFile.keys()].sort()) {
    const acc = collector.newFile();
    for (const m of byFile.get(p)!.sort((a, b) => a.line - b.line))
      acc.add({ line: m.line, text: m.text, match: true });
    collector.filesScanned++;
    collector.addFile(p, acc, 0);
  }
  return { matches, truncated: answer.truncated };
}

/** Every text file under `dir` (include applied), within the fallback's limits, in path order. */
async function readTree(
  g: GuardedBackend,
  dir: string,
  include: IncludeMatcher | undefined,
  skip: ((p: string) => boolean) | undefined,
  signal: AbortSignal,
): Promise<Array<[string, string]>> {
  const listed = (await g.glob('**/*', dir, signal)).files
    .filter((f) => f.is_dir !== true && !f.path.endsWith('/'))
    .map((f) => posix.resolve(dir, f.path))
    .filter((p) => (!include || include.matches(posix.relative(dir, p))) && !skip?.(p))
    .sort();
  if (listed.length > MAX_BACKEND_GREP_FILES)
    throw new Error(
      `A regular-expression grep over the backend ${g.name} reads every file, and ${shownPath(dir)} holds ${listed.length} files, above the limit of ${MAX_BACKEND_GREP_FILES}. ` +
        'Narrow it with path or include, or search for a plain literal (the backend greps literals itself).',
    );
  const out: Array<[string, string]> = [];
  let chars = 0;
  for (const p of listed) {
    throwIfAborted(signal, abortedMessage('grep'));
    const r = await g.readRaw(p, signal);
    const text = r.file?.text;
    if (text === undefined || text.includes('\0')) continue; // binary (or gone): skipped, as locally
    chars += text.length;
    if (chars > MAX_BACKEND_GREP_CHARS)
      throw new Error(
        `A regular-expression grep over the backend ${g.name} reads every file, and the files under ${shownPath(dir)} pass the limit of ${MAX_BACKEND_GREP_CHARS} characters. ` +
          'Narrow it with path or include, or search for a plain literal (the backend greps literals itself).',
      );
    out.push([p, text]);
  }
  return out;
}

/** One file's matching lines (and context) into the collector. */
function collectFile(
  collector: Collector,
  p: string,
  text: string,
  compiled: CompiledPattern,
  before: number,
  after: number,
): void {
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  const acc = collector.newFile();
  let lastAdded = 0;
  let afterUntil = 0;
  for (let i = 0; i < lines.length; i++) {
    const n = i + 1;
    if (compiled.line.test(lines[i])) {
      for (let c = Math.max(lastAdded + 1, n - before); c < n; c++)
        acc.add({ line: c, text: lines[c - 1], match: false });
      acc.add({ line: n, text: lines[i], match: true });
      lastAdded = n;
      afterUntil = n + after;
    } else if (n <= afterUntil) {
      acc.add({ line: n, text: lines[i], match: false });
      lastAdded = n;
    }
  }
  collector.filesScanned++;
  collector.addFile(p, acc, 0);
}
