/**
 * grep: search file contents with a regular expression. Uses ripgrep when an `rg` binary is on
 * PATH, else a JavaScript search with the same output: .gitignore respected, binary files skipped,
 * at most MAX_MATCHES matches grouped by file, newest files first, long lines cut.
 * Must not hold backend or output code: grep-rg.ts, grep-js.ts and grep-results.ts do.
 */
import { promises as fs } from 'node:fs';
import { z } from 'zod';
import { Tool } from '../../authoring/tool.js';
import { descriptionBeside } from '../../authoring/description.js';
import { Workspace } from '../../workspace/workspace.js';
import { IncludeMatcher, ignoredNames, rootContaining } from '../files/search-common.js';
import { PROGRESS_INTERVAL_MS, throttle } from '../../authoring/progress.js';
import { abortedMessage, throwIfAborted } from '../../authoring/abort.js';
import { findExecutable } from '../../platform/files.js';
import { compilePattern } from './pattern.js';
import {
  Collector,
  FullMatchList,
  render,
  type GrepBackend,
  type GrepMetadata,
  type SearchOptions,
} from './results.js';
import { tenantOf } from '../../workspace/tenant.js';
import { searchWithRg } from './rg.js';
import { JS_BLOCK_BYTES, searchWithJs } from './js.js';

declare module '../../authoring/tool.js' {
  namespace Tool {
    interface InitContext {
      /** grep: `'rg'` forces ripgrep (an error when it is missing), `'js'` the JavaScript search; default `'auto'`. */
      grepBackend?: 'auto' | 'rg' | 'js';
      /** grep: the ripgrep binary; default `rg` found on PATH. */
      rgPath?: string;
      /** grep's JS search: files above this size (bytes) are read in blocks of this size; default JS_BLOCK_BYTES. */
      grepBlockBytes?: number;
    }
  }
}

/** Matching lines shown at most; the rest are counted ("Found N matches"). */
export const MAX_MATCHES = 100;
/** Most context lines before/after a match. */
export const MAX_CONTEXT_LINES = 20;

/** The tool's arguments (the backend variant takes the same). */
export const parameters = z.object({
  pattern: z
    .string()
    .min(1)
    .describe('Regular expression to search for, e.g. "function\\s+\\w+" or "TODO|FIXME". Matched line by line.'),
  path: z
    .string()
    .optional()
    .describe(
      'File or directory to search: absolute, or relative to the workspace root (default: the workspace root).',
    ),
  include: z
    .string()
    .optional()
    .describe(
      'Only search files matching this glob, e.g. "*.ts", "*.{ts,tsx}", "src/**/*.py" (a glob with "/" is matched against the path relative to `path`).',
    ),
  context: z
    .number()
    .int()
    .min(0)
    .max(MAX_CONTEXT_LINES)
    .optional()
    .describe(`Lines of context to show before and after each match (default 0, max ${MAX_CONTEXT_LINES}).`),
  before: z
    .number()
    .int()
    .min(0)
    .max(MAX_CONTEXT_LINES)
    .optional()
    .describe('Lines of context before each match (overrides `context`).'),
  after: z
    .number()
    .int()
    .min(0)
    .max(MAX_CONTEXT_LINES)
    .optional()
    .describe('Lines of context after each match (overrides `context`).'),
  caseInsensitive: z.boolean().optional().describe('Match letters regardless of case (default false).'),
});

export const GrepTool = Tool.define<typeof parameters, GrepMetadata>(
  {
    id: 'grep',
    permissions: { required: ['read'] },
    descriptionPath: descriptionBeside(import.meta.url, 'grep'),
    danger: 'safe',
  },
  async (initCtx) => {
    const ws = await Workspace.fromInitContext(initCtx);
    const outputs = tenantOf(initCtx).outputs;
    const wanted = initCtx.grepBackend === 'js' || initCtx.grepBackend === 'rg' ? initCtx.grepBackend : 'auto';
    const rgPath =
      wanted === 'js' ? undefined : typeof initCtx.rgPath === 'string' ? initCtx.rgPath : await findExecutable('rg');
    const progressMs =
      typeof initCtx.progressIntervalMs === 'number' ? initCtx.progressIntervalMs : PROGRESS_INTERVAL_MS;
    // Tuning knob for tests: a tiny block size exercises the large-file path on small files.
    const blockBytes =
      typeof initCtx.grepBlockBytes === 'number' && initCtx.grepBlockBytes > 0
        ? initCtx.grepBlockBytes
        : JS_BLOCK_BYTES;
    const ignored = ignoredNames(initCtx);
    return {
      description:
        'Search file contents with a regular expression (ripgrep when available); results grouped by file, newest first; skips node_modules, .git, build output and .gitignored files.',
      parameters,
      async execute(args, ctx) {
        if (wanted === 'rg' && !rgPath) {
          throw new Error(
            'grep is configured to use ripgrep (grepBackend: "rg") but no `rg` binary was found on PATH. Install ripgrep or use grepBackend "auto".',
          );
        }
        const backend: GrepBackend = rgPath ? 'rg' : 'js';
        const compiled = compilePattern(args.pattern, !!args.caseInsensitive);
        const before = args.before ?? args.context ?? 0;
        const after = args.after ?? args.context ?? 0;
        const include = args.include !== undefined ? new IncludeMatcher(args.include) : undefined;
        const target = await ws.resolve(args.path ?? '.');
        const stat = await fs.stat(target).catch(() => undefined);
        if (!stat)
          throw new Error(
            `Path ${JSON.stringify(args.path)} does not exist (resolved to ${target}). Check the path, or use glob to find it.`,
          );
        const isFile = stat.isFile();
        if (!isFile && !stat.isDirectory())
          throw new Error(`${ws.display(target)} is neither a file nor a directory; give grep a file or directory.`);
        throwIfAborted(ctx.abort, abortedMessage('grep'));
        if (isFile && (await containsNul(target))) {
          throw new Error(
            `${ws.display(target)} is a binary file (it contains NUL bytes); grep skips binary files. Use read to inspect it.`,
          );
        }
        const top = rootContaining(ws.roots, target) ?? ws.root;
        const full = new FullMatchList(outputs, (abs) => ws.display(abs));
        const collector = new Collector(MAX_MATCHES, after, before > 0 || after > 0, full);
        const title = `grep ${JSON.stringify(args.pattern)} in ${ws.display(target)}`;
        ctx.metadata({ title, metadata: { backend } });
        const report = throttle(progressMs, () =>
          ctx.metadata({
            title,
            metadata: {
              backend,
              matches: collector.totalMatches,
              files: collector.fileCount,
              filesScanned: collector.filesScanned,
            },
          }),
        );
        const opts: SearchOptions = {
          target,
          isFile,
          top,
          compiled,
          before,
          after,
          include,
          ctx,
          collector,
          report,
          blockBytes,
          ignored,
        };
        // A single file was judged as the call's path; a directory's files are judged one by one.
        if (!isFile) opts.filter = await ctx.readFilter?.();
        try {
          if (backend === 'rg') await searchWithRg(rgPath as string, opts);
          else await searchWithJs(opts);
          throwIfAborted(ctx.abort, abortedMessage('grep'));
          const result = await render(collector, ws, args.pattern, target, backend);
          const skipped = opts.filter?.skipped;
          if (skipped) {
            result.metadata.skippedByPolicy = skipped;
            result.output += `\n\n${opts.filter!.notice()}`;
          }
          return result;
        } finally {
          full.close();
        }
      },
    };
  },
);

/** Whether the file contains a NUL byte anywhere (ripgrep's binary rule), read in chunks. */
async function containsNul(abs: string): Promise<boolean> {
  const handle = await fs.open(abs, 'r');
  try {
    const buf = Buffer.allocUnsafe(1024 * 1024);
    for (;;) {
      const { bytesRead } = await handle.read(buf, 0, buf.length, null);
      if (bytesRead === 0) return false;
      if (buf.subarray(0, bytesRead).indexOf(0) !== -1) return true;
    }
  } finally {
    await handle.close();
  }
}
