/**
 * list over a backend: the local list's tree (directories first, breadth-first under a cap, default
 * ignores and `ignore` globs) built from the backend's `ls`, one directory at a time.
 * Must not touch the local disk. A backend has no .gitignore walk: only the default and given
 * ignores apply (a documented difference).
 */
import posix from 'node:path/posix';
import { Tool } from '../../../authoring/tool.js';
import { descriptionBeside } from '../../../authoring/description.js';
import { abortedMessage, throwIfAborted } from '../../../authoring/abort.js';
import { makeIgnore } from '../search-common.js';
import { LIST_MAX_LIMIT, listDefaultLimit, listIgnores, type ListMetadata } from '../list.js';
import { backendOf, backendPath, entryAt, shownPath } from './common.js';
import { parameters } from '../list.js';

interface Node {
  name: string;
  path: string;
  dir: boolean;
  children?: Node[];
  more?: number;
}

export const BackendListTool = Tool.define<typeof parameters, ListMetadata>(
  {
    id: 'list',
    permissions: { required: ['read'] },
    descriptionPath: descriptionBeside(new URL('../list.js', import.meta.url).href, 'list'),
    danger: 'safe',
  },
  (initCtx) => {
    const g = backendOf(initCtx);
    const defaultLimit = listDefaultLimit(initCtx);
    return {
      description:
        'List a directory as a tree (directories first); skips node_modules, .git, build output and .gitignored files.',
      parameters,
      async execute(args, ctx) {
        const limit = args.limit ?? defaultLimit;
        const root = backendPath(args.path ?? '.');
        const entry = await entryAt(g, root, ctx.abort);
        if (entry.kind === 'missing')
          throw new Error(
            `Directory ${JSON.stringify(args.path)} does not exist (resolved to ${root}). Check the path, or list its parent first.`,
          );
        if (entry.kind === 'file')
          throw new Error(`${shownPath(root)} is a file, not a directory. Use read to see its content.`);
        const extra = listIgnores(initCtx, args.ignore);
        const filter = await ctx.readFilter?.();
        const top: Node = { name: root, path: root, dir: true };
        const queue: Node[] = [top];
        let count = 0;
        let truncated = false;
        while (queue.length && !truncated) {
          throwIfAborted(ctx.abort, abortedMessage('list'));
          const node = queue.shift() as Node;
          let entries = childrenOf(await g.ls(node.path, ctx.abort), node.path, root, extra);
          if (filter) entries = entries.filter((e) => !filter.skips(e.path, e.dir, e.path));
          node.children = [];
          for (let i = 0; i < entries.length; i++) {
            if (count >= limit) {
              node.more = entries.length - i;
              truncated = true;
              break;
            }
            node.children.push(entries[i]);
            count++;
            if (entries[i].dir) queue.push(entries[i]);
          }
        }
        const lines = [root.endsWith('/') ? root : `${root}/`];
        render(top, 1, lines);
        if (top.children?.length === 0) lines.push('  (empty directory)');
        if (truncated) {
          lines.push(
            '',
            `(Showing ${count} entries; the listing is truncated. Directories marked "(not expanded)" were not read. ` +
              `List one of them with path, leave entries out with ignore, or raise limit (max ${LIST_MAX_LIMIT}).)`,
          );
        }
        if (filter?.skipped) lines.push('', filter.notice());
        return {
          title: `list ${shownPath(root)}: ${count} entr${count === 1 ? 'y' : 'ies'}`,
          metadata: { count, truncated, ...(filter?.skipped ? { skippedByPolicy: filter.skipped } : {}) },
          output: lines.join('\n'),
        };
      },
    };
  },
);

/** The visible entries of one `ls` answer: directories first, then by name. */
function childrenOf(
  infos: Array<{ path: string; is_dir?: boolean }>,
  dir: string,
  root: string,
  extra: ReturnType<typeof makeIgnore>,
): Node[] {
  const out: Node[] = [];
  const seen = new Set<string>();
  for (const f of infos) {
    const isDir = f.is_dir === true || f.path.endsWith('/');
    const p = posix.resolve('/', f.path.replace(/\/+$/, ''));
    if (p === dir || seen.has(p)) continue;
    seen.add(p);
    const name = posix.basename(p);
    const rel = posix.relative(root, p);
    let hidden: boolean;
    try {
      hidden = extra.ignores(isDir ? `${rel}/` : rel);
    } catch {
      hidden = false;
    }
    if (!hidden) out.push({ name, path: p, dir: isDir });
  }
  return out.sort((a, b) => (a.dir !== b.dir ? (a.dir ? -1 : 1) : a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

function render(node: Node, depth: number, lines: string[]): void {
  const indent = '  '.repeat(depth);
  for (const child of node.children ?? []) {
    if (child.dir) {
      lines.push(`${indent}${child.name}/${child.children ? '' : ' (not expanded)'}`);
      render(child, depth + 1, lines);
    } else {
      lines.push(`${indent}${child.name}`);
    }
  }
  if (node.more) lines.push(`${indent}... ${node.more} more entr${node.more === 1 ? 'y' : 'ies'} not shown`);
}
