/**
 * file_info over a backend: whether a path exists there, its type, size, modification time (as the
 * backend reports it) and line count; no mode or symlinks (a backend has neither: a documented
 * difference), with the local tool's sentence shape.
 * Must not touch the local disk.
 */
import posix from 'node:path/posix';
import { Tool } from '../../../authoring/tool.js';
import { descriptionBeside } from '../../../authoring/description.js';
import { binaryReason } from '../read.js';
import type { FileInfoMetadata } from '../file-info.js';
import { backendOf, backendPath, entryAt, shownPath } from './common.js';
import { parameters } from '../file-info.js';

export const BackendFileInfoTool = Tool.define<typeof parameters, FileInfoMetadata>(
  {
    id: 'file_info',
    permissions: { required: ['read'] },
    descriptionPath: descriptionBeside(new URL('../file-info.js', import.meta.url).href, 'file_info'),
    danger: 'safe',
  },
  (initCtx) => {
    const g = backendOf(initCtx);
    return {
      description: 'Whether a path exists, and its type, size, modification time and line count.',
      parameters,
      async execute(args, ctx) {
        const p = backendPath(args.path);
        const shown = shownPath(p);
        const entry = await entryAt(g, p, ctx.abort);
        if (entry.kind === 'missing') {
          return {
            title: shown,
            output: `${shown} does not exist.`,
            metadata: { path: shown, exists: false, truncated: false },
          };
        }
        const meta: FileInfoMetadata = { path: shown, exists: true, truncated: false };
        if (entry.kind === 'dir') {
          meta.type = 'directory';
          meta.entries = entry.entries;
        } else {
          const f = entry.file;
          meta.type = 'file';
          meta.size = f.text !== undefined ? Buffer.byteLength(f.text) : f.bytes!.length;
          const listed = (await g.ls(posix.dirname(p), ctx.abort)).find(
            (i) => posix.resolve('/', i.path) === p && i.modified_at,
          );
          const mtime = f.modifiedAt || listed?.modified_at;
          if (mtime) meta.mtime = mtime;
          const binary = f.text === undefined || binaryReason(Buffer.from(f.text.slice(0, 4096))) !== '';
          meta.binary = binary;
          meta.lines = binary ? null : countLines(f.text!);
        }
        return { title: shown, output: describe(meta), metadata: meta };
      },
    };
  },
);

function countLines(s: string): number {
  if (s === '') return 0;
  let n = 0;
  for (let i = s.indexOf('\n'); i !== -1; i = s.indexOf('\n', i + 1)) n++;
  return n + (s.endsWith('\n') ? 0 : 1);
}

function describe(m: FileInfoMetadata): string {
  const parts = [`${m.path}: ${m.type}`];
  if (m.type === 'file') {
    parts.push(`${m.size} bytes`);
    if (m.mtime) parts.push(`modified ${m.mtime}`);
    parts.push(m.binary ? 'binary' : `${m.lines} lines`);
  }
  if (m.type === 'directory') parts.push(`${m.entries} entries`);
  return parts.join(', ') + '.';
}
