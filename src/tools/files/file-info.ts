/**
 * file_info: whether a path exists and what it is (type, size, modification time, mode, and the
 * line count of a text file) without reading it into the conversation.
 * Must not return file contents.
 */
import { promises as fs, createReadStream, type Stats } from 'node:fs';
import { z } from 'zod';
import { Tool } from '../../authoring/tool.js';
import { descriptionBeside } from '../../authoring/description.js';
import { Workspace } from '../../workspace/workspace.js';
import { BINARY_SNIFF_BYTES, binaryReason } from './read.js';

/** Files up to this size get their lines counted; bigger ones report `lines: null`. */
export const MAX_LINE_COUNT_BYTES = 50 * 1024 * 1024;

/** What file_info reports. */
export interface FileInfoMetadata extends Tool.Metadata {
  path: string;
  exists: boolean;
  type?: 'file' | 'directory' | 'symlink' | 'other';
  size?: number;
  /** ISO 8601, UTC. */
  mtime?: string;
  /** Permission bits in octal, e.g. `644`. */
  mode?: string;
  /** Lines of a text file (a last line without a newline counts); null for binary or big files. */
  lines?: number | null;
  binary?: boolean;
  /** For a symlink: its target, relative to the workspace root, when the target is inside. */
  target?: string;
  /** For a directory: how many entries it holds. */
  entries?: number;
  truncated: false;
}

/** The tool's arguments (the backend variant takes the same). */
export const parameters = z.object({
  path: z.string().describe('Path to inspect: absolute, or relative to the workspace root.'),
});

export const FileInfoTool = Tool.define<typeof parameters, FileInfoMetadata>(
  {
    id: 'file_info',
    permissions: { required: ['read'] },
    descriptionPath: descriptionBeside(import.meta.url, 'file_info'),
    danger: 'safe',
  },
  async (initCtx) => {
    const ws = await Workspace.fromInitContext(initCtx);
    return {
      description: 'Whether a path exists, and its type, size, modification time and line count.',
      parameters,
      async execute(args, ctx) {
        const abs = await ws.resolveEntry(args.path, 'read');
        const shown = ws.display(abs);
        const st = await fs.lstat(abs).catch(() => undefined);
        if (!st) {
          const meta: FileInfoMetadata = { path: shown, exists: false, truncated: false };
          return { title: shown, output: `${shown} does not exist.`, metadata: meta };
        }
        const meta: FileInfoMetadata = {
          path: shown,
          exists: true,
          type: typeOf(st),
          size: st.size,
          mtime: st.mtime.toISOString(),
          mode: (st.mode & 0o7777).toString(8),
          truncated: false,
        };
        if (st.isSymbolicLink()) {
          const target = await ws.resolve(abs, 'read').catch(() => undefined);
          if (target) meta.target = ws.display(target);
        } else if (st.isDirectory()) {
          meta.entries = (await fs.readdir(abs)).length;
        } else if (st.isFile()) {
          Object.assign(meta, await textInfo(abs, st.size, ctx.abort));
        }
        return { title: shown, output: describe(meta), metadata: meta };
      },
    };
  },
);

function typeOf(st: Stats): FileInfoMetadata['type'] {
  if (st.isSymbolicLink()) return 'symlink';
  if (st.isDirectory()) return 'directory';
  if (st.isFile()) return 'file';
  return 'other';
}

async function textInfo(
  abs: string,
  size: number,
  signal: AbortSignal,
): Promise<{ lines: number | null; binary: boolean }> {
  const handle = await fs.open(abs, 'r');
  let head: Buffer;
  try {
    const buf = Buffer.alloc(Math.min(size, BINARY_SNIFF_BYTES));
    const { bytesRead } = await handle.read(buf, 0, buf.length, 0);
    head = buf.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
  if (binaryReason(head)) return { lines: null, binary: true };
  if (size > MAX_LINE_COUNT_BYTES) return { lines: null, binary: false };
  let lines = 0;
  let last = 10;
  for await (const chunk of createReadStream(abs, { signal }) as AsyncIterable<Buffer>) {
    for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++;
    if (chunk.length) last = chunk[chunk.length - 1];
  }
  return { lines: lines + (size > 0 && last !== 10 ? 1 : 0), binary: false };
}

function describe(m: FileInfoMetadata): string {
  const parts = [`${m.path}: ${m.type}`, `${m.size} bytes`, `modified ${m.mtime}`, `mode ${m.mode}`];
  if (m.type === 'file') {
    if (m.binary) parts.push('binary');
    else
      parts.push(
        m.lines === null ? `text, lines not counted (over ${MAX_LINE_COUNT_BYTES} bytes)` : `${m.lines} lines`,
      );
  }
  if (m.type === 'directory') parts.push(`${m.entries} entries`);
  if (m.type === 'symlink') parts.push(m.target ? `-> ${m.target}` : 'target outside the workspace or missing');
  return parts.join(', ') + '.';
}
