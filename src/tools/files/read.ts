/**
 * read: a file's lines (streamed, numbered, capped), an image or PDF as an attachment, or a
 * directory's listing. Records the read for the stale-write check of write and edit.
 * Must not hold reading-from-the-end (read-tail.ts) or byte formatting (src/text/format.ts).
 * Over 400 lines: text, binary, attachment and directory reads share one resolution and record path.
 */
import { promises as fs, openSync, closeSync, fstatSync, constants as fsConstants } from 'node:fs';
import type { BigIntStats } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { Tool } from '../../authoring/tool.js';
import { formatBytes } from '../../text/format.js';
import { descriptionBeside } from '../../authoring/description.js';
import { tenantOf } from '../../workspace/tenant.js';
import { Workspace, stampOf } from '../../workspace/workspace.js';
import { statIfExistsSync } from '../../platform/files.js';
import { levenshteinRatio } from '../../text/similarity.js';
import { LineCounts, SlicedReader, TAIL_COUNT_MAX_BYTES, countNewlinesBefore, findTailStart } from './read-tail.js';

/** Lines returned when `limit` is not given. */
export const DEFAULT_READ_LIMIT = 2000;
/** Characters kept of one line; the rest is cut with LINE_CUT_MARKER. */
export const MAX_LINE_LENGTH = 2000;
/** Appended to a line cut at MAX_LINE_LENGTH. */
export const LINE_CUT_MARKER = '... (line truncated)';
/** Output cap in bytes (UTF-8) for the numbered lines. */
export const MAX_OUTPUT_BYTES = 50 * 1024;
/** Bytes sniffed at the start of a file to tell text from binary. */
export const BINARY_SNIFF_BYTES = 4096;
/** Share of non-printable bytes in the sniffed prefix above which a file counts as binary. */
export const NON_PRINTABLE_RATIO = 0.3;
/** Largest image or PDF returned as an attachment (base64 grows it by a third). */
export const MAX_ATTACHMENT_BYTES = 5 * 1024 * 1024;
/** Similar names suggested for a missing file. */
export const MAX_SUGGESTIONS = 3;
/** Chunk size of the streaming line reader. */
const CHUNK_BYTES = 1024 * 1024;
/** Opening never blocks: a FIFO swapped in after the stat would otherwise hold the event loop. */
const OPEN_FLAGS = fsConstants.O_RDONLY | fsConstants.O_NONBLOCK;

/** Extensions returned as attachments, with their MIME types. */
export const ATTACHMENT_TYPES: Readonly<Record<string, { mime: string; type: 'image' | 'file' }>> = {
  '.png': { mime: 'image/png', type: 'image' },
  '.jpg': { mime: 'image/jpeg', type: 'image' },
  '.jpeg': { mime: 'image/jpeg', type: 'image' },
  '.gif': { mime: 'image/gif', type: 'image' },
  '.webp': { mime: 'image/webp', type: 'image' },
  '.bmp': { mime: 'image/bmp', type: 'image' },
  '.pdf': { mime: 'application/pdf', type: 'file' },
};

/** Extensions refused as binary without looking inside. */
export const BINARY_EXTENSIONS: ReadonlySet<string> = new Set([
  '.zip',
  '.tar',
  '.gz',
  '.tgz',
  '.bz2',
  '.xz',
  '.zst',
  '.7z',
  '.rar',
  '.jar',
  '.war',
  '.ear',
  '.exe',
  '.dll',
  '.so',
  '.dylib',
  '.o',
  '.a',
  '.lib',
  '.obj',
  '.class',
  '.pyc',
  '.pyo',
  '.wasm',
  '.node',
  '.bin',
  '.dat',
  '.db',
  '.sqlite',
  '.sqlite3',
  '.iso',
  '.dmg',
  '.img',
  '.mp3',
  '.mp4',
  '.m4a',
  '.mov',
  '.avi',
  '.mkv',
  '.webm',
  '.wav',
  '.flac',
  '.ogg',
  '.ico',
  '.tif',
  '.tiff',
  '.psd',
  '.woff',
  '.woff2',
  '.ttf',
  '.otf',
  '.eot',
  '.doc',
  '.docx',
  '.xls',
  '.xlsx',
  '.ppt',
  '.pptx',
  '.odt',
  '.ods',
  '.odp',
]);

/** The tool's arguments (the backend variant takes the same). */
export const parameters = z.object({
  filePath: z.string().describe('Path of the file or directory to read: absolute, or relative to the workspace root.'),
  offset: z
    .number()
    .int()
    .optional()
    .describe(
      'Line to start from: 1-based (default 1), or negative to count from the end (-100 starts 100 lines before the end, i.e. the last 100 lines).',
    ),
  limit: z.number().int().min(1).optional().describe(`How many lines to return (default ${DEFAULT_READ_LIMIT}).`),
});

export const ReadTool = Tool.define(
  {
    id: 'read',
    permissions: { required: ['read'] },
    descriptionPath: descriptionBeside(import.meta.url, 'read'),
    danger: 'safe',
  },
  async (initCtx) => {
    const ws = await Workspace.fromInitContext(initCtx);
    const readTracker = tenantOf(initCtx).readTracker;
    const lineCounts = new LineCounts();
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
        const abs = await ws.resolve(args.filePath, 'read');
        const shown = ws.display(abs);
        const stat = statIfExistsSync(abs);
        if (!stat) throw new Error(await missingFileMessage(abs, shown, ws));
        if (stat.isDirectory()) return listDirectory(abs, shown, offset, limit);
        if (!stat.isFile())
          throw new Error(`${shown} is not a regular file (it is a device, socket or FIFO); it cannot be read.`);

        const ext = path.extname(abs).toLowerCase();
        const attachment = ATTACHMENT_TYPES[ext];
        if (attachment) return readAttachment(abs, shown, stat.size, attachment);
        if (BINARY_EXTENSIONS.has(ext)) {
          throw new Error(
            `${shown} is a binary file (${ext}); read only works on text files. Use a tool that understands this format instead.`,
          );
        }

        // Synchronous calls from here on: each costs microseconds on a cached file, where a
        // thread-pool round trip each cost milliseconds on a loaded machine (the tail of a 100 MB
        // log is about eight of them).
        const fd = openSync(abs, OPEN_FLAGS);
        try {
          // Recorded before reading the content: a change during the read then counts as stale.
          const st = fstatSync(fd, { bigint: true });
          if (!st.isFile())
            throw new Error(`${shown} is not a regular file (it is a device, socket or FIFO); it cannot be read.`);
          const stamp = stampOf(st);
          const size = Number(st.size);
          const reader = new SlicedReader(fd, ctx.abort);
          const head = Buffer.alloc(Math.min(BINARY_SNIFF_BYTES, size));
          if (head.length) await reader.read(head, head.length, 0);
          const why = binaryReason(head);
          if (why) throw new Error(`${shown} looks like a binary file (${why}); read only works on text files.`);
          let start: ReadStart = { position: 0, lineNo: 1, fromEnd: false };
          if (offset < 0) {
            if (size === 0) return formatLines(EMPTY, shown, 1, limit);
            start = await tailStart(reader, st, -offset, lineCounts);
            offset = start.lineNo;
          }
          const result = await readLines(reader, size, start, offset, limit);
          readTracker.record(ctx.sessionID, abs, stamp);
          if (start.fromEnd) return formatFromEnd(result, shown, offset, limit, size);
          return formatLines(result, shown, offset, limit);
        } finally {
          closeSync(fd);
        }
      },
    };
  },
);

/** Where the forward line reader starts: a byte position and the number of the line there. */
interface ReadStart {
  position: number;
  /** 1-based; negative when `fromEnd` (-k is the k-th line from the end). */
  lineNo: number;
  /** The lines are numbered from the end: their absolute numbers were not counted. */
  fromEnd: boolean;
}

/**
 * The start of the last `n` lines and that line's number: the backwards scan finds the position;
 * the absolute number comes from the cached line count when the file is unchanged, else from
 * counting the newlines before the position (then cached) when that is at most
 * TAIL_COUNT_MAX_BYTES; otherwise the lines are numbered from the end.
 */
async function tailStart(reader: SlicedReader, st: BigIntStats, n: number, lineCounts: LineCounts): Promise<ReadStart> {
  const tail = await findTailStart(reader, Number(st.size), n);
  if (tail.position === 0) return { position: 0, lineNo: 1, fromEnd: false };
  const cached = lineCounts.get(st, tail.probe);
  if (cached !== undefined) return { position: tail.position, lineNo: cached - tail.lines + 1, fromEnd: false };
  if (tail.position > TAIL_COUNT_MAX_BYTES) return { position: tail.position, lineNo: -tail.lines, fromEnd: true };
  const startedMs = Date.now();
  const lineNo = (await countNewlinesBefore(reader, tail.position)) + 1;
  lineCounts.set(st, tail.probe, lineNo + tail.lines - 1, startedMs);
  return { position: tail.position, lineNo, fromEnd: false };
}

/**
 * Lines numbered from the end (-1 is the last): the footer says why and how to go on, backwards
 * (the lines before) or forwards (the rest of a window cut by limit or the byte cap).
 */
function formatFromEnd(r: LinesResult, shown: string, offset: number, limit: number, size: number): Tool.Result {
  const last = offset + r.lines.length - 1;
  const body = r.lines.map((l, i) => `${offset + i}: ${l}`).join('\n');
  const why =
    `Lines are numbered from the end (-1 is the last line): ${shown} is ${formatBytes(size)}, and absolute ` +
    `numbers would mean counting every line before these (done only up to ${formatBytes(TAIL_COUNT_MAX_BYTES)}).`;
  const before = `offset=${offset - limit} limit=${limit} for the ${limit} line${limit === 1 ? '' : 's'} before line ${offset}`;
  let footer: string;
  if (r.more) {
    const capped = r.capped ? `Output capped at ${MAX_OUTPUT_BYTES / 1024} KB. ` : '';
    footer = `(${capped}Showing lines ${offset} to ${last}. Use offset=${last + 1} to continue. ${why})`;
  } else {
    footer = `(End of file. ${why} Use ${before}.)`;
  }
  return {
    title: shown,
    output: `${body}\n\n${footer}`,
    metadata: {
      path: shown,
      startLine: offset,
      endLine: last,
      numberedFromEnd: true,
      cutLines: r.cutLines,
      limit,
      truncated: r.more || r.cutLines > 0,
    },
  };
}

export const EMPTY: LinesResult = { lines: [], more: false, totalLines: 0, capped: false, cutLines: 0 };

export interface LinesResult {
  lines: string[];
  /** Whether a line after the last returned one exists. */
  more: boolean;
  /** Lines in the file, when the end was reached. */
  totalLines?: number;
  /** The byte cap stopped the output early. */
  capped: boolean;
  /** Some lines were cut at MAX_LINE_LENGTH. */
  cutLines: number;
}

export function formatLines(r: LinesResult, shown: string, offset: number, limit: number): Tool.Result {
  if (r.totalLines !== undefined && r.lines.length === 0) {
    if (r.totalLines === 0) {
      return {
        title: shown,
        output: `(File ${shown} is empty.)`,
        metadata: { path: shown, lines: 0, truncated: false },
      };
    }
    throw new Error(
      `Offset ${offset} is past the end of ${shown}, which has ${r.totalLines} lines. Use an offset between 1 and ${r.totalLines}.`,
    );
  }
  const last = offset + r.lines.length - 1;
  const body = r.lines.map((l, i) => `${offset + i}: ${l}`).join('\n');
  let footer: string;
  if (r.more) {
    const why = r.capped ? `Output capped at ${MAX_OUTPUT_BYTES / 1024} KB. ` : '';
    footer = `(${why}Showing lines ${offset}-${last} of the file. Use offset=${last + 1} to continue.)`;
  } else {
    footer = `(End of file - ${r.totalLines} line${r.totalLines === 1 ? '' : 's'} total)`;
  }
  return {
    title: shown,
    output: `${body}\n\n${footer}`,
    metadata: {
      path: shown,
      startLine: offset,
      endLine: last,
      totalLines: r.totalLines,
      cutLines: r.cutLines,
      limit,
      truncated: r.more || r.cutLines > 0,
    },
  };
}

/**
 * Streams the file from `start` through one reused buffer: lines before `offset` are only counted (never
 * decoded), a line is kept up to what MAX_LINE_LENGTH can need, and reading stops at the first
 * line after the window, so memory stays flat whatever the file size.
 */
async function readLines(
  reader: SlicedReader,
  size: number,
  start: ReadStart,
  offset: number,
  limit: number,
): Promise<LinesResult> {
  // A read from the end has only the tail left: no need for a full chunk.
  const buf = Buffer.allocUnsafe(Math.max(1, Math.min(CHUNK_BYTES, size - start.position)));
  const keepBytes = MAX_LINE_LENGTH * 4 + 4; // enough UTF-8 for MAX_LINE_LENGTH characters
  const lines: string[] = [];
  let lineNo = start.lineNo; // the line being scanned
  let inLine = false; // bytes of lineNo seen, its newline not yet
  let parts: Buffer[] = [];
  let kept = 0;
  let outBytes = 0;
  let cutLines = 0;
  let position = start.position;
  const more = (capped: boolean): LinesResult => ({ lines, more: true, capped, cutLines });

  /** Adds line lineNo to the output; false when the byte cap leaves no room for it. */
  const finishLine = (): boolean => {
    let text = Buffer.concat(parts, kept).toString('utf8');
    const overflow = kept >= keepBytes;
    parts = [];
    kept = 0;
    if (lineNo === 1 && text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    if (text.endsWith('\r')) text = text.slice(0, -1);
    if (text.length > MAX_LINE_LENGTH || overflow) {
      let cut = text.slice(0, MAX_LINE_LENGTH);
      if (/[\uD800-\uDBFF]$/.test(cut)) cut = cut.slice(0, -1);
      text = cut + LINE_CUT_MARKER;
      cutLines++;
    }
    const cost = Buffer.byteLength(text) + String(lineNo).length + 3;
    if (lines.length > 0 && outBytes + cost > MAX_OUTPUT_BYTES) return false;
    outBytes += cost;
    lines.push(text);
    return true;
  };

  for (;;) {
    const bytesRead = await reader.read(buf, buf.length, position);
    if (bytesRead === 0) break;
    position += bytesRead;
    let start = 0;
    while (start < bytesRead) {
      // A byte of line lineNo exists here: if the window is already full, there is more.
      if (lineNo >= offset && lines.length >= limit) return more(false);
      let nl = buf.indexOf(10, start);
      if (nl >= bytesRead) nl = -1;
      const end = nl === -1 ? bytesRead : nl;
      if (lineNo >= offset && kept < keepBytes && end > start) {
        const take = Math.min(end - start, keepBytes - kept);
        parts.push(Buffer.from(buf.subarray(start, start + take)));
        kept += take;
      }
      if (nl === -1) {
        inLine = true;
        break;
      }
      if (lineNo >= offset && !finishLine()) return more(true);
      lineNo++;
      inLine = false;
      start = nl + 1;
    }
  }
  if (!inLine) return { lines, more: false, totalLines: lineNo - 1, capped: false, cutLines };
  // The last line has no trailing newline.
  if (lineNo >= offset && !finishLine()) return more(true);
  return { lines, more: false, totalLines: lineNo, capped: false, cutLines };
}

/** Why `head` looks binary, or '' when it looks like text. */
export function binaryReason(head: Buffer): string {
  if (head.length === 0) return '';
  if (head.includes(0)) return 'it contains NUL bytes';
  let odd = 0;
  for (const b of head) {
    // Control characters other than tab, newline, vertical tab, form feed, carriage return, escape.
    if (b < 7 || (b > 13 && b < 32 && b !== 27) || b === 127) odd++;
  }
  const ratio = odd / head.length;
  return ratio > NON_PRINTABLE_RATIO
    ? `${Math.round(ratio * 100)}% of its first ${head.length} bytes are not printable`
    : '';
}

async function readAttachment(
  abs: string,
  shown: string,
  size: number,
  kind: { mime: string; type: 'image' | 'file' },
): Promise<Tool.Result> {
  if (size > MAX_ATTACHMENT_BYTES) {
    throw new Error(
      `${shown} is ${formatBytes(size)}, above the ${formatBytes(MAX_ATTACHMENT_BYTES)} limit for images and PDFs. ` +
        'Use a smaller or downscaled copy.',
    );
  }
  const data = await fs.readFile(abs);
  return {
    title: shown,
    output: `${kind.type === 'image' ? 'Image' : 'PDF'} ${shown} (${kind.mime}, ${formatBytes(data.length)}) is attached.`,
    metadata: { path: shown, mime: kind.mime, bytes: data.length, truncated: false },
    attachments: [
      {
        type: kind.type,
        mime: kind.mime,
        data: data.toString('base64'),
        uri: `file://${abs}`,
        filename: path.basename(abs),
      },
    ],
  };
}

async function listDirectory(abs: string, shown: string, offset: number, limit: number): Promise<Tool.Result> {
  const entries = await fs.readdir(abs, { withFileTypes: true });
  return directoryResult(
    entries.map((e) => (e.isDirectory() ? `${e.name}/` : e.name)),
    shown,
    offset,
    limit,
  );
}

/**
 * read's answer for a directory, here or on a backend: `names` (directories end in `/`) sorted
 * directories first, the window from `offset` (1-based; negative counts from the end) of `limit`.
 */
export function directoryResult(names: string[], shown: string, offset: number, limit: number): Tool.Result {
  names.sort((a, b) => Number(b.endsWith('/')) - Number(a.endsWith('/')) || a.localeCompare(b));
  // A negative offset counts from the end, as for files.
  if (offset < 0) offset = Math.max(1, names.length + offset + 1);
  const window = names.slice(offset - 1, offset - 1 + limit);
  const more = offset - 1 + window.length < names.length;
  const footer = more
    ? `(Showing entries ${offset}-${offset + window.length - 1} of ${names.length}. Use offset=${offset + window.length} to continue.)`
    : `(${names.length} entries)`;
  return {
    title: shown,
    output: `Directory ${shown}/:\n${window.join('\n')}${window.length ? '\n' : ''}\n${footer}`,
    metadata: { path: shown, directory: true, entries: names.length, truncated: more },
  };
}

/** "File not found" with up to MAX_SUGGESTIONS similar names from the same directory. */
async function missingFileMessage(abs: string, shown: string, ws: Workspace): Promise<string> {
  const dir = path.dirname(abs);
  const names = await fs.readdir(dir).catch(() => undefined);
  if (!names)
    return `File ${shown} does not exist, and neither does its directory ${ws.display(dir)}. Check the path (list the workspace to find it).`;
  const wanted = path.basename(abs).toLowerCase();
  const scored = names
    .map((n) => ({ n, d: similarity(wanted, n.toLowerCase()) }))
    .filter((s) => s.d >= 0.5)
    .sort((a, b) => b.d - a.d || a.n.localeCompare(b.n))
    .slice(0, MAX_SUGGESTIONS)
    .map((s) => ws.display(path.join(dir, s.n)));
  return scored.length
    ? `File ${shown} does not exist. Did you mean one of these?\n${scored.join('\n')}`
    : `File ${shown} does not exist. Check the path (list ${ws.display(dir)} to see what is there).`;
}

/** 0..1: how alike two names are (substring, else Levenshtein ratio). */
export function similarity(a: string, b: string): number {
  if (a === b) return 1;
  const stemA = a.replace(/\.[^.]*$/, '');
  const stemB = b.replace(/\.[^.]*$/, '');
  if (stemA && stemB && (stemA === stemB || b.includes(stemA) || a.includes(stemB))) return 0.9;
  return levenshteinRatio(a, b, 100);
}
