/**
 * glob over a backend: the backend's `glob` answers the files; ours orders them newest first (by the
 * `modified_at` a backend reports, then by path: `newestFirst`), keeps MAX_GLOB_RESULTS and saves
 * the full list, with the local glob's sentences.
 * Must not touch the local disk (the full list goes to the tenant's output store, as locally).
 */
import posix from 'node:path/posix';
import { Tool } from '../../../authoring/tool.js';
import { tenantOf } from '../../../workspace/tenant.js';
import { descriptionBeside } from '../../../authoring/description.js';
import { saveFullOutput } from '../../../pipeline/truncate.js';
import { MAX_GLOB_RESULTS, type GlobMetadata } from '../glob.js';
import { backendOf, backendPath, shownPath } from './common.js';
import type { FileInfo } from '../../../backend/protocol.js';
import { parameters } from '../glob.js';
import { withoutIgnored } from '../search-common.js';

/** A path segment `posix.resolve` would change: empty (`//`, trailing `/`), `.` or `..`. */
const NOT_NORMAL = /\/(\.{1,2})?(\/|$)/;

/**
 * The files of a glob answer (directories dropped) as shown paths, newest first, then by path (by
 * UTF-16 code units), duplicates kept. One plain string sort does it: each path behind a
 * fixed-width key of its age (a comparator sort when a time is before 1970, out of the key's range).
 */
export function newestFirst(base: string, infos: readonly FileInfo[]): Array<{ path: string; mtime: number }> {
  const files: Array<{ path: string; mtime: number }> = [];
  let lastStamp: string | undefined;
  let lastMtime = 0;
  let keyable = true;
  for (const f of infos) {
    if (f.is_dir === true || f.path.endsWith('/')) continue;
    const abs = f.path.startsWith('/') && !NOT_NORMAL.test(f.path) ? f.path : posix.resolve(base, f.path);
    const stamp = f.modified_at ?? '';
    if (stamp !== lastStamp) {
      lastStamp = stamp;
      lastMtime = Date.parse(stamp) || 0;
      if (lastMtime < 0) keyable = false;
    }
    files.push({ path: shownPath(abs), mtime: lastMtime });
  }
  if (!keyable) return files.sort((a, b) => b.mtime - a.mtime || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  // Newer first: the key grows as mtime shrinks; NUL ends the path (below any character), then its index.
  let keyOf = -1;
  let age = '';
  const keys = files.map((f, i) => {
    if (f.mtime !== keyOf) age = (Number.MAX_SAFE_INTEGER - (keyOf = f.mtime)).toString(36).padStart(11, '0');
    return `${age}${f.path}\0${i}`;
  });
  return keys.sort().map((k) => files[Number(k.slice(k.lastIndexOf('\0') + 1))]);
}

export const BackendGlobTool = Tool.define<typeof parameters, GlobMetadata>(
  {
    id: 'glob',
    permissions: { required: ['read'] },
    descriptionPath: descriptionBeside(new URL('../glob.js', import.meta.url).href, 'glob'),
    danger: 'safe',
  },
  (initCtx) => {
    const g = backendOf(initCtx);
    const outputs = tenantOf(initCtx).outputs;
    return {
      description: 'Find files by glob pattern (e.g. "**/*.ts"), newest modified first; respects .gitignore.',
      parameters,
      async execute(args, ctx) {
        if (args.pattern.split('/').includes('..'))
          throw new Error(
            `The pattern ${JSON.stringify(args.pattern)} has "..", which could leave the directory being searched. Set path instead.`,
          );
        const base = backendPath(args.path ?? '.');
        const shownBase = shownPath(base);
        const title = `glob ${JSON.stringify(args.pattern)} in ${shownBase}`;
        ctx.metadata({ title });
        const pattern = args.pattern.replace(/^\/+/, '');
        const answer = await g.glob(pattern, base, ctx.abort);
        const filter = await ctx.readFilter?.();
        let sorted = newestFirst(base, withoutIgnored(base, answer.files, initCtx));
        if (filter) sorted = sorted.filter((f) => !filter.skips(`/${f.path}`, false, `/${f.path}`));
        const notice = filter?.notice() ?? '';
        const shown = sorted.slice(0, MAX_GLOB_RESULTS).map((f) => f.path);
        const truncated = sorted.length > shown.length || answer.truncated;
        const metadata: GlobMetadata = { count: sorted.length, shown: shown.length, truncated };
        if (filter?.skipped) metadata.skippedByPolicy = filter.skipped;
        if (sorted.length > shown.length)
          metadata.fullListPath = await saveFullOutput(sorted.map((f) => f.path).join('\n') + '\n', 'glob', outputs);
        if (sorted.length === 0) {
          return {
            title,
            metadata,
            output:
              `No files found matching ${JSON.stringify(args.pattern)} in ${shownBase === '.' ? 'the workspace root' : shownBase}.` +
              (notice ? `\n\n${notice}` : ''),
          };
        }
        let output = shown.join('\n');
        if (sorted.length > shown.length) {
          output += `\n\n(Results are truncated: showing the ${MAX_GLOB_RESULTS} most recently modified of ${sorted.length} files. All ${sorted.length} paths, newest first, are saved at ${metadata.fullListPath}: read it with the read tool (offset=${MAX_GLOB_RESULTS + 1} continues this list), or use a more specific pattern or path.)`;
        } else if (answer.truncated) {
          output += `\n\n(The backend ${g.name} stopped its glob early: more files may match. Use a more specific pattern or path.)`;
        }
        if (notice) output += `\n\n${notice}`;
        return { title: `${title}: ${sorted.length} file${sorted.length === 1 ? '' : 's'}`, metadata, output };
      },
    };
  },
);
