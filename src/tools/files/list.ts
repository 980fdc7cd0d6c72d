/**
 * list: a directory as a tree, directories first, breadth-first up to a cap so the top levels are
 * always shown. Skips common build/dependency directories and .gitignored entries; symlinks are
 * shown but never followed.
 * Must not re-implement ignore rules (search-common.ts).
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { Tool } from '../../authoring/tool.js';
import { descriptionBeside } from '../../authoring/description.js';
import { Workspace } from '../../workspace/workspace.js';
import { isAtomicTempName } from '../../workspace/atomic-write.js';
import { DEFAULT_IGNORES, IgnoreTree, ignoredNames, makeIgnore, rootContaining } from './search-common.js';
import { abortedMessage, throwIfAborted } from '../../authoring/abort.js';

declare module '../../authoring/tool.js' {
  namespace Tool {
    interface InitContext {
      /** list: entries shown at most (capped at LIST_MAX_LIMIT); default LIST_DEFAULT_LIMIT. */
      listLimit?: number;
    }
  }
}

/** Entries shown when `limit` is not given (an init option `listLimit` changes it). */
export const LIST_DEFAULT_LIMIT = 100;
/** Largest `limit` a call may ask for. */
export const LIST_MAX_LIMIT = 1000;
/** Names never listed unless the call names them as `path` (or un-ignores them with "!name"): DEFAULT_IGNORES, the list glob and grep skip too. */
export const LIST_DEFAULT_IGNORES: readonly string[] = DEFAULT_IGNORES;

/** list's metadata. */
export interface ListMetadata extends Tool.Metadata {
  /** Entries shown (files, directories and symlinks, not counting the listed directory). */
  count: number;
  truncated: boolean;
  /** Paths left out because the policy does not let list read them (ctx.readFilter); absent when none. */
  skippedByPolicy?: number;
}

/** The tool's arguments (the backend variant takes the same). */
export const parameters = z.object({
  path: z
    .string()
    .optional()
    .describe('Directory to list: absolute, or relative to the workspace root (default: the workspace root).'),
  ignore: z
    .array(z.string())
    .optional()
    .describe(
      'Extra .gitignore-style globs to leave out, e.g. ["*.log", "fixtures/"]. "!name" shows a default-ignored name such as "!dist".',
    ),
  limit: z
    .number()
    .int()
    .min(1)
    .max(LIST_MAX_LIMIT)
    .optional()
    .describe(`Most entries to show (default ${LIST_DEFAULT_LIMIT}, max ${LIST_MAX_LIMIT}).`),
});

interface Node {
  name: string;
  abs: string;
  kind: 'dir' | 'file' | 'link';
  children?: Node[];
  /** Entries of a directory left out by the cap. */
  more?: number;
}

export const ListTool = Tool.define<typeof parameters, ListMetadata>(
  {
    id: 'list',
    permissions: { required: ['read'] },
    descriptionPath: descriptionBeside(import.meta.url, 'list'),
    danger: 'safe',
  },
  async (initCtx) => {
    const ws = await Workspace.fromInitContext(initCtx);
    const defaultLimit = listDefaultLimit(initCtx);
    return {
      description:
        'List a directory as a tree (directories first); skips node_modules, .git, build output and .gitignored files.',
      parameters,
      async execute(args, ctx) {
        const limit = args.limit ?? defaultLimit;
        const root = await ws.resolve(args.path ?? '.');
        const stat = await fs.stat(root).catch(() => undefined);
        if (!stat)
          throw new Error(
            `Directory ${JSON.stringify(args.path)} does not exist (resolved to ${root}). Check the path, or list its parent first.`,
          );
        if (!stat.isDirectory())
          throw new Error(`${ws.display(root)} is a file, not a directory. Use read to see its content.`);
        ctx.metadata({ title: `list ${ws.display(root)}` });

        const extra = listIgnores(initCtx, args.ignore);
        const tree = await IgnoreTree.forWalk(rootContaining(ws.roots, root) ?? ws.root, root);
        // The call was judged by its path; what is under it is judged entry by entry.
        const filter = await ctx.readFilter?.();
        const top: Node = { name: root, abs: root, kind: 'dir' };
        const queue: Node[] = [top];
        let count = 0;
        let truncated = false;
        // Breadth-first, so a huge first subdirectory cannot hide the rest of the top level.
        while (queue.length && !truncated) {
          throwIfAborted(ctx.abort, abortedMessage('list'));
          const node = queue.shift() as Node;
          const entries = await readEntries(node.abs, root, tree, extra, filter);
          node.children = [];
          for (let i = 0; i < entries.length; i++) {
            if (count >= limit) {
              node.more = entries.length - i;
              truncated = true;
              break;
            }
            const child = entries[i];
            node.children.push(child);
            count++;
            if (child.kind === 'dir') queue.push(child);
          }
        }
        const lines = [`${root}${root.endsWith(path.sep) ? '' : path.sep}`];
        render(top, 1, lines);
        if (top.children?.length === 0) lines.push('  (empty directory)');
        if (truncated) {
          lines.push(
            '',
            `(Showing ${count} entries; the listing is truncated. Directories marked "(not expanded)" were not read. ` +
              `List one of them with path, leave entries out with ignore, or raise limit (max ${LIST_MAX_LIMIT}).)`,
          );
        }
        const metadata: ListMetadata = { count, truncated };
        if (filter?.skipped) {
          metadata.skippedByPolicy = filter.skipped;
          lines.push('', filter.notice());
        }
        return {
          title: `list ${ws.display(root)}: ${count} entr${count === 1 ? 'y' : 'ies'}`,
          metadata,
          output: lines.join('\n'),
        };
      },
    };
  },
);

/** A directory's visible entries: directories first, then the rest, each by name. */
async function readEntries(
  dir: string,
  root: string,
  tree: IgnoreTree,
  extra: ReturnType<typeof makeIgnore>,
  filter: Tool.ReadFilter | undefined,
): Promise<Node[]> {
  let dirents;
  try {
    dirents = await fs.readdir(dir, { withFileTypes: true });
  } catch {
    return []; // unreadable: shown as empty rather than failing the whole listing
  }
  const chain = await tree.enter(
    dir,
    dirents.map((d) => d.name),
  );
  const out: Node[] = [];
  for (const d of dirents) {
    const abs = path.join(dir, d.name);
    const kind: Node['kind'] = d.isSymbolicLink() ? 'link' : d.isDirectory() ? 'dir' : 'file';
    const rel = path.relative(root, abs).split(path.sep).join('/');
    let hidden: boolean;
    try {
      hidden = extra.ignores(kind === 'dir' ? `${rel}/` : rel);
    } catch {
      hidden = false; // a name the matcher cannot take (e.g. "...")
    }
    if (hidden || tree.isIgnored(chain, abs, kind === 'dir')) continue;
    if (kind === 'file' && isAtomicTempName(d.name)) continue; // an unfinished or abandoned atomic write
    // A link is shown, not followed: its name is judged as the entry it is.
    if (filter?.skips(abs, kind === 'dir')) continue;
    out.push({ name: d.name, abs, kind });
  }
  return out.sort((a, b) =>
    (a.kind === 'dir') !== (b.kind === 'dir')
      ? a.kind === 'dir'
        ? -1
        : 1
      : a.name < b.name
        ? -1
        : a.name > b.name
          ? 1
          : 0,
  );
}

function render(node: Node, depth: number, lines: string[]): void {
  const indent = '  '.repeat(depth);
  for (const child of node.children ?? []) {
    if (child.kind === 'dir') {
      lines.push(`${indent}${child.name}/${child.children ? '' : ' (not expanded)'}`);
      render(child, depth + 1, lines);
    } else {
      lines.push(`${indent}${child.name}${child.kind === 'link' ? '@ (symlink, not followed)' : ''}`);
    }
  }
  if (node.more) lines.push(`${indent}... ${node.more} more entr${node.more === 1 ? 'y' : 'ies'} not shown`);
}

/** list's limit when a call gives none: `initCtx.listLimit` when it is a positive integer (at most LIST_MAX_LIMIT), else LIST_DEFAULT_LIMIT. */
export function listDefaultLimit(initCtx: Tool.InitContext): number {
  return typeof initCtx.listLimit === 'number' && Number.isInteger(initCtx.listLimit) && initCtx.listLimit > 0
    ? Math.min(initCtx.listLimit, LIST_MAX_LIMIT)
    : LIST_DEFAULT_LIMIT;
}

/** What list hides below the listed directory: the default names (less `initCtx.searchIgnored`'s), then the call's `ignore` globs ("!name" shows one again). */
export function listIgnores(initCtx: Tool.InitContext, ignore: string[] = []): ReturnType<typeof makeIgnore> {
  return makeIgnore([...ignoredNames(initCtx), ...ignore]);
}
