/**
 * read over a backend: the same arguments, numbering, line and byte caps, footers and error
 * sentences as the local read, on the file the backend's `readRaw` answers (scanned only up to the
 * window's end); records what was read for the stale-write checks of write and edit (common.ts).
 * Must not read the local disk.
 */
import posix from 'node:path/posix';
import { z } from 'zod';
import { Tool } from '../../../authoring/tool.js';
import { tenantOf } from '../../../workspace/tenant.js';
import { formatBytes } from '../../../text/format.js';
import { descriptionBeside } from '../../../authoring/description.js';
import {
  ATTACHMENT_TYPES,
  BINARY_EXTENSIONS,
  DEFAULT_READ_LIMIT,
  EMPTY,
  LINE_CUT_MARKER,
  MAX_ATTACHMENT_BYTES,
  MAX_LINE_LENGTH,
  MAX_OUTPUT_BYTES,
  MAX_SUGGESTIONS,
  binaryReason,
  directoryResult,
  ReadTool,
  formatLines,
  similarity,
  type LinesResult,
} from '../read.js';
import { backendOf, backendPath, entryAt, recordSeen, shownPath, trackKey } from './common.js';
import type { GuardedBackend } from '../../../backend/guard.js';
import { parameters } from '../read.js';

export const BackendReadTool = Tool.define(
  {
    id: 'read',
    permissions: { required: ['read'] },
    descriptionPath: descriptionBeside(new URL('../read.js', import.meta.url).href, 'read'),
    danger: 'safe',
  },
  (initCtx) => {
    const g = backendOf(initCtx);
    const tenant = tenantOf(initCtx);
    const readTracker = tenant.readTracker;
    // Full outputs the caps saved stay on this host, in the tenant's private directory; read
    // reaches them by their exact path there (nothing else of the host).
    const savedDir = `${tenant.outputs.dir}/`;
    let savedReader: Promise<Tool.Initialized> | undefined;
    return {
      description:
        'Read a file (numbered lines, offset/limit), an image or PDF (as an attachment), or list a directory.',
      parameters,
      async execute(args: z.infer<typeof parameters>, ctx) {
        let offset = args.offset ?? 1;
        const limit = args.limit ?? DEFAULT_READ_LIMIT;
        if (offset === 0) {
          throw new Error(
            'offset 0 is not a line: lines are numbered from 1. Use offset=1 for the start, or a negative offset such as -100 for the last 100 lines.',
          );
        }
        if (args.filePath.startsWith(savedDir) && !args.filePath.split('/').includes('..')) {
          savedReader ??= ReadTool.init({ ...initCtx, backend: undefined, workspaceRoot: tenant.outputs.dir });
          return (await savedReader).execute(args, ctx);
        }
        const p = backendPath(args.filePath);
        const shown = shownPath(p);
        const entry = await entryAt(g, p, ctx.abort);
        if (entry.kind === 'missing') throw new Error(await missingFileMessage(g, p, shown, ctx.abort));
        if (entry.kind === 'dir') return listDirectory(g, p, shown, offset, limit, ctx.abort);
        const file = entry.file;
        const ext = posix.extname(p).toLowerCase();
        const attachment = ATTACHMENT_TYPES[ext];
        if (attachment) return attach(file.bytes ?? Buffer.from(file.text ?? '', 'binary'), p, shown, attachment);
        if (BINARY_EXTENSIONS.has(ext)) {
          throw new Error(
            `${shown} is a binary file (${ext}); read only works on text files. Use a tool that understands this format instead.`,
          );
        }
        if (file.text === undefined) {
          const why =
            binaryReason(Buffer.from(file.bytes!.subarray(0, 4096))) ||
            `the backend stores it as ${file.mimeType ?? 'bytes'}`;
          throw new Error(`${shown} looks like a binary file (${why}); read only works on text files.`);
        }
        const text = file.text;
        const start = text.charCodeAt(0) === 0xfeff ? 1 : 0; // a BOM is not part of line 1
        if (offset < 0) offset = Math.max(1, countLines(text, start) + offset + 1);
        const result = start >= text.length ? EMPTY : window(text, start, offset, limit);
        recordSeen(readTracker, ctx.sessionID, trackKey(g, p), file);
        return formatLines(result, shown, offset, limit);
      },
    };
  },
);

/** Lines of `text` from index `start`: newlines counted, plus a last line without one. */
function countLines(text: string, start: number): number {
  let n = 0;
  for (let i = text.indexOf('\n', start); i !== -1; i = text.indexOf('\n', i + 1)) n++;
  return text.length > start && !text.endsWith('\n') ? n + 1 : n;
}

/**
 * Lines `offset..offset+limit-1` of `text` (from index `start`) with read's line and byte caps: lines
 * end at LF (a CR before it dropped), a final newline starts no line; only the lines up to the
 * window are scanned, and none is copied but those shown.
 */
function window(text: string, start: number, offset: number, limit: number): LinesResult {
  const end = text.length;
  let pos = start;
  let n = 1; // the number of the line starting at pos
  for (; n < offset && pos < end; n++) {
    const nl = text.indexOf('\n', pos);
    pos = nl === -1 ? end : nl + 1;
  }
  const lines: string[] = [];
  let outBytes = 0;
  let cutLines = 0;
  for (; pos < end; n++) {
    if (lines.length >= limit) return { lines, more: true, capped: false, cutLines };
    const nl = text.indexOf('\n', pos);
    const stop = nl === -1 ? end : nl;
    let line = text.slice(pos, stop > pos && text.charCodeAt(stop - 1) === 13 ? stop - 1 : stop);
    pos = nl === -1 ? end : nl + 1;
    if (line.length > MAX_LINE_LENGTH) {
      let cut = line.slice(0, MAX_LINE_LENGTH);
      if (/[\uD800-\uDBFF]$/.test(cut)) cut = cut.slice(0, -1);
      line = cut + LINE_CUT_MARKER;
      cutLines++;
    }
    const cost = Buffer.byteLength(line) + String(n).length + 3;
    if (lines.length > 0 && outBytes + cost > MAX_OUTPUT_BYTES) return { lines, more: true, capped: true, cutLines };
    outBytes += cost;
    lines.push(line);
  }
  return { lines, more: false, totalLines: n - 1, capped: false, cutLines };
}

function attach(
  data: Uint8Array,
  p: string,
  shown: string,
  kind: { mime: string; type: 'image' | 'file' },
): Tool.Result {
  if (data.length > MAX_ATTACHMENT_BYTES) {
    throw new Error(
      `${shown} is ${formatBytes(data.length)}, above the ${formatBytes(MAX_ATTACHMENT_BYTES)} limit for images and PDFs. ` +
        'Use a smaller or downscaled copy.',
    );
  }
  return {
    title: shown,
    output: `${kind.type === 'image' ? 'Image' : 'PDF'} ${shown} (${kind.mime}, ${formatBytes(data.length)}) is attached.`,
    metadata: { path: shown, mime: kind.mime, bytes: data.length, truncated: false },
    attachments: [
      {
        type: kind.type,
        mime: kind.mime,
        data: Buffer.from(data).toString('base64'),
        filename: posix.basename(p),
      },
    ],
  };
}

/** A directory's entries as the local read lists them (directories first, then by name). */
async function listDirectory(
  g: GuardedBackend,
  p: string,
  shown: string,
  offset: number,
  limit: number,
  signal: AbortSignal,
): Promise<Tool.Result> {
  const infos = await g.ls(p, signal);
  const names = infos.map((f) => {
    const name = posix.basename(f.path.replace(/\/+$/, ''));
    return f.is_dir || f.path.endsWith('/') ? `${name}/` : name;
  });
  return directoryResult(names, shown, offset, limit);
}

/** "File not found" with up to MAX_SUGGESTIONS similar names from the same backend directory. */
async function missingFileMessage(g: GuardedBackend, p: string, shown: string, signal: AbortSignal): Promise<string> {
  const dir = posix.dirname(p);
  const names = (await g.ls(dir, signal)).map((f) => posix.basename(f.path.replace(/\/+$/, '')));
  if (!names.length && dir !== '/')
    return `File ${shown} does not exist, and neither does its directory ${shownPath(dir)}. Check the path (list the workspace to find it).`;
  const wanted = posix.basename(p).toLowerCase();
  const scored = names
    .map((n) => ({ n, d: similarity(wanted, n.toLowerCase()) }))
    .filter((s) => s.d >= 0.5)
    .sort((a, b) => b.d - a.d || a.n.localeCompare(b.n))
    .slice(0, MAX_SUGGESTIONS)
    .map((s) => shownPath(posix.join(dir, s.n)));
  return scored.length
    ? `File ${shown} does not exist. Did you mean one of these?\n${scored.join('\n')}`
    : `File ${shown} does not exist. Check the path (list ${shownPath(dir)} to see what is there).`;
}
