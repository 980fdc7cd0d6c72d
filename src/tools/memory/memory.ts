/**
 * memory_list / memory_read / memory_write / memory_patch / memory_append: Markdown notes an agent
 * keeps across sessions in its memory directory (see store.ts). Every change is an atomic
 * write under the note's file lock, so concurrent appends from several agents all land.
 * Must not decide where notes live or how paths are confined (store.ts, store-notes.ts).
 * Over 400 lines: five tools over one note format (front line, sections, size caps); each tool is short.
 */
import { promises as fs, type Dirent } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { Tool } from '../../authoring/tool.js';
import { descriptionBeside } from '../../authoring/description.js';
import { atomicWriteFile, withFileLock, type Workspace } from '../../workspace/workspace.js';
import { statIfExists } from '../../platform/files.js';
import {
  MAX_MEMORY_FILE_BYTES,
  MAX_MEMORY_LIST_ENTRIES,
  SUMMARY_SCAN_CHARS,
  MemoryStore,
  assertNoteSize,
  parseSummary,
  withSummary,
} from './store.js';
import { StoreNotes } from './store-notes.js';
import { storeScope } from '../../store/scope.js';
import { tenantOf } from '../../workspace/tenant.js';

/** memory_list reports progress after every this many notes. */
export const LIST_PROGRESS_EVERY = 100;

/** One note as memory_list reports it. */
export interface MemoryEntry {
  /** Path relative to the memory root. */
  path: string;
  /** The note's `> Summary:` line, or '' when it has none. */
  summary: string;
  /** Size in bytes. */
  size: number;
}

const notePath = z
  .string()
  .describe('Path of the note inside the memory directory, ending in .md (e.g. "project.md" or "people/alice.md").');

const listParameters = z.object({
  dir: z
    .string()
    .optional()
    .describe('Only list notes under this subdirectory of the memory directory. Default: all notes.'),
});
const readParameters = z.object({ path: notePath });
const writeParameters = z.object({
  path: notePath,
  content: z
    .string()
    .describe('The complete new Markdown content of the note. Start it with "> Summary: <one line>" to index it.'),
});
const patchParameters = z.object({
  path: notePath,
  old_str: z.string().describe('Exact text to replace; it must occur exactly once in the note.'),
  new_str: z.string().describe('The text to put in its place (may be empty to delete old_str).'),
});
const appendParameters = z.object({
  path: notePath,
  entry: z.string().describe('Markdown to add at the end of the note (the note is created when missing).'),
  summary: z
    .string()
    .optional()
    .describe('New one-line summary of the whole note; sets or replaces its "> Summary:" line.'),
});

export const MemoryListTool = Tool.define(
  {
    id: 'memory_list',
    permissions: { required: ['memory'] },
    descriptionPath: descriptionBeside(import.meta.url, 'memory_list'),
    danger: 'safe',
  },
  async (initCtx) => {
    const store = await MemoryStore.fromInitContext(initCtx);
    return {
      description: 'List the memory notes with their one-line summaries and sizes.',
      parameters: listParameters,
      async execute(args: z.infer<typeof listParameters>, ctx) {
        const notes = storeNotes(initCtx, ctx);
        if (notes) return notes.list(args.dir);
        if (!(await store.exists())) {
          return {
            title: 'memory: empty',
            output: 'No memory notes yet. Create one with memory_write or memory_append.',
            metadata: { entries: [] as MemoryEntry[], count: 0, truncated: false },
          };
        }
        const ws = await store.sandbox();
        const start = args.dir?.trim() ? await resolveDir(ws, args.dir) : ws.root;
        const found = await listNotes(ws, start, ctx);
        const entries = found.entries;
        const truncated = found.more;
        const title = `memory: ${entries.length}${truncated ? '+' : ''} note${entries.length === 1 ? '' : 's'}`;
        if (!entries.length) {
          return {
            title,
            output: `No memory notes under ${ws.display(start)}.`,
            metadata: { entries, count: 0, truncated },
          };
        }
        const lines = entries.map((e) => JSON.stringify(e));
        let output = `[\n${lines.join(',\n')}\n]`;
        if (truncated) {
          output += `\n(Showing the first ${MAX_MEMORY_LIST_ENTRIES} notes in path order; pass dir to list a subdirectory.)`;
        }
        return { title, output, metadata: { entries, count: entries.length, truncated } };
      },
    };
  },
);

export const MemoryReadTool = Tool.define(
  {
    id: 'memory_read',
    permissions: { required: ['memory'] },
    descriptionPath: descriptionBeside(import.meta.url, 'memory_read'),
    danger: 'safe',
  },
  async (initCtx) => {
    const store = await MemoryStore.fromInitContext(initCtx);
    return {
      description: 'Read one memory note.',
      parameters: readParameters,
      async execute(args: z.infer<typeof readParameters>, ctx) {
        const notes = storeNotes(initCtx, ctx);
        if (notes) return notes.read(args.path);
        const { abs, shown } = await store.resolve(args.path, 'read');
        const text = await readNote(abs, shown, true);
        const size = Buffer.byteLength(text);
        return {
          title: shown,
          output: text.length ? text : `(${shown} is empty)`,
          // No `truncated` key: a note may be MAX_MEMORY_FILE_BYTES, past the registry's output cap,
          // which then cuts it and saves the whole note (a key, even false, would switch that off).
          metadata: { path: shown, size, summary: parseSummary(text) },
        };
      },
    };
  },
);

export const MemoryWriteTool = Tool.define(
  {
    id: 'memory_write',
    permissions: { required: ['memory'] },
    descriptionPath: descriptionBeside(import.meta.url, 'memory_write'),
    danger: 'moderate',
  },
  async (initCtx) => {
    const store = await MemoryStore.fromInitContext(initCtx);
    return {
      description: 'Create a memory note or replace its whole content.',
      parameters: writeParameters,
      async execute(args: z.infer<typeof writeParameters>, ctx) {
        const notes = storeNotes(initCtx, ctx);
        if (notes) return notes.write(args.path, args.content);
        const { abs, shown } = await store.resolve(args.path, 'write');
        const bytes = assertNoteSize(args.content, shown, 'This write');
        return withFileLock(abs, async () => {
          await fs.mkdir(path.dirname(abs), { recursive: true });
          const { created } = await atomicWriteFile(abs, args.content, { signal: ctx.abort });
          return {
            title: shown,
            output: `${created ? 'Created' : 'Replaced'} memory note ${shown} (${bytes} bytes).`,
            metadata: { path: shown, created, size: bytes, summary: parseSummary(args.content), truncated: false },
          };
        });
      },
    };
  },
);

export const MemoryPatchTool = Tool.define(
  {
    id: 'memory_patch',
    permissions: { required: ['memory'] },
    descriptionPath: descriptionBeside(import.meta.url, 'memory_patch'),
    danger: 'moderate',
  },
  async (initCtx) => {
    const store = await MemoryStore.fromInitContext(initCtx);
    return {
      description: 'Replace one exact, unique passage of a memory note.',
      parameters: patchParameters,
      async execute(args: z.infer<typeof patchParameters>, ctx) {
        if (!args.old_str) {
          throw new Error(
            'old_str is empty. Copy the exact passage to replace from the note (memory_read shows it); to add text use memory_append.',
          );
        }
        if (args.old_str === args.new_str) throw new Error('old_str and new_str are identical: nothing would change.');
        const notes = storeNotes(initCtx, ctx);
        if (notes) return notes.patch(args.path, args.old_str, args.new_str);
        const { abs, shown } = await store.resolve(args.path, 'write');
        return withFileLock(abs, async () => {
          const text = await readNote(abs, shown, false);
          const count = occurrences(text, args.old_str);
          if (count === 0) {
            throw new Error(
              `old_str was not found in ${shown}. Read the note with memory_read and copy the passage exactly (whitespace included).`,
            );
          }
          if (count > 1) {
            throw new Error(
              `old_str occurs ${count} times in ${shown}; it must occur exactly once. Add surrounding text to old_str so it matches only the passage you mean.`,
            );
          }
          const at = text.indexOf(args.old_str);
          const updated = text.slice(0, at) + args.new_str + text.slice(at + args.old_str.length);
          const size = assertNoteSize(updated, shown, 'This patch');
          await atomicWriteFile(abs, updated, { signal: ctx.abort });
          const line = text.slice(0, at).split('\n').length;
          return {
            title: shown,
            output: `Patched ${shown} at line ${line} (${size} bytes now).`,
            metadata: { path: shown, line, size, summary: parseSummary(updated), truncated: false },
          };
        });
      },
    };
  },
);

export const MemoryAppendTool = Tool.define(
  {
    id: 'memory_append',
    permissions: { required: ['memory'] },
    descriptionPath: descriptionBeside(import.meta.url, 'memory_append'),
    danger: 'moderate',
  },
  async (initCtx) => {
    const store = await MemoryStore.fromInitContext(initCtx);
    return {
      description: 'Append an entry to a memory note (creating it), optionally updating its summary line.',
      parameters: appendParameters,
      async execute(args: z.infer<typeof appendParameters>, ctx) {
        if (!args.entry.trim() && args.summary === undefined) {
          throw new Error('entry is empty. Pass the Markdown to add in "entry" (and/or a new "summary").');
        }
        const notes = storeNotes(initCtx, ctx);
        if (notes) return notes.append(args.path, args.entry, args.summary);
        const { abs, shown } = await store.resolve(args.path, 'write');
        return withFileLock(abs, async () => {
          const existing = await readNoteIfExists(abs, shown);
          let text = existing ?? '';
          if (args.entry.trim()) {
            if (text && !text.endsWith('\n')) text += '\n';
            text += args.entry.endsWith('\n') ? args.entry : `${args.entry}\n`;
          }
          if (args.summary !== undefined) text = withSummary(text, args.summary);
          const size = assertNoteSize(text, shown, 'This append');
          await fs.mkdir(path.dirname(abs), { recursive: true });
          await atomicWriteFile(abs, text, { signal: ctx.abort });
          const summary = parseSummary(text);
          return {
            title: shown,
            output:
              `${existing === undefined ? 'Created' : 'Appended to'} ${shown} (${size} bytes now)` +
              (args.summary !== undefined ? `; summary: ${summary}` : '') +
              '.',
            metadata: { path: shown, created: existing === undefined, size, summary, truncated: false },
          };
        });
      },
    };
  },
);

// ---------------------------------------------------------------------------------------------

/** The notes in the store of this call (the run's or the registry's), or undefined: then the memory directory's files. */
function storeNotes(initCtx: Tool.InitContext, ctx: Tool.Context): StoreNotes | undefined {
  const scope = storeScope(tenantOf(initCtx), ctx);
  return scope && new StoreNotes(scope);
}

async function resolveDir(ws: Workspace, dir: string): Promise<string> {
  let abs: string;
  try {
    abs = await ws.resolve(dir.trim(), 'read');
  } catch {
    throw new Error(
      `dir ${JSON.stringify(dir)} is outside the memory directory. Give a subdirectory relative to it, or omit dir.`,
    );
  }
  const stat = await fs.stat(abs).catch(() => undefined);
  if (!stat?.isDirectory()) {
    throw new Error(
      `dir ${JSON.stringify(dir)} is not a directory in the memory directory. Omit dir to list every note.`,
    );
  }
  return abs;
}

/** Walks `start` depth-first in path order for `.md` notes; links are followed only when they stay inside. */
async function listNotes(
  ws: Workspace,
  start: string,
  ctx: Tool.Context,
): Promise<{ entries: MemoryEntry[]; more: boolean }> {
  const entries: MemoryEntry[] = [];
  const seenDirs = new Set<string>();
  let more = false;
  const walk = async (dir: string): Promise<void> => {
    if (seenDirs.has(dir)) return;
    seenDirs.add(dir);
    const items = await fs.readdir(dir, { withFileTypes: true }).catch(() => [] as Dirent[]);
    items.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const item of items) {
      if (more) return;
      if (ctx.abort.aborted) throw new Error('memory_list was aborted.');
      // Dot-names include the atomic writer's temp files.
      if (item.name.startsWith('.')) continue;
      const listed = path.join(dir, item.name);
      let real = listed;
      let isDir = item.isDirectory();
      let isFile = item.isFile();
      if (item.isSymbolicLink()) {
        const resolved = await ws.resolve(listed, 'read').catch(() => undefined);
        const st = resolved ? await fs.stat(resolved).catch(() => undefined) : undefined;
        if (!resolved || !st) continue;
        real = resolved;
        isDir = st.isDirectory();
        isFile = st.isFile();
      }
      if (isDir) await walk(real);
      else if (isFile && item.name.toLowerCase().endsWith('.md')) {
        if (entries.length === MAX_MEMORY_LIST_ENTRIES) {
          more = true;
          return;
        }
        entries.push(await describeNote(ws, listed, real));
        if (entries.length % LIST_PROGRESS_EVERY === 0) {
          ctx.metadata({ title: `memory: ${entries.length} notes so far`, metadata: { count: entries.length } });
        }
      }
    }
  };
  await walk(start);
  return { entries, more };
}

async function describeNote(ws: Workspace, listed: string, real: string): Promise<MemoryEntry> {
  const handle = await fs.open(real, 'r');
  try {
    const st = await handle.stat();
    const buf = Buffer.alloc(Math.min(st.size, SUMMARY_SCAN_CHARS * 4));
    const { bytesRead } = await handle.read(buf, 0, buf.length, 0);
    return {
      path: ws.display(listed),
      summary: parseSummary(buf.subarray(0, bytesRead).toString('utf8')),
      size: st.size,
    };
  } finally {
    await handle.close();
  }
}

/** A note's text; a missing note is an error naming it (and memory_list). Big notes are cut when `forDisplay`. */
async function readNote(abs: string, shown: string, forDisplay: boolean): Promise<string> {
  const text = await readNoteIfExists(abs, shown, forDisplay);
  if (text === undefined) {
    throw new Error(
      `Memory note ${shown} does not exist. Call memory_list to see the notes, or create it with memory_write.`,
    );
  }
  return text;
}

async function readNoteIfExists(abs: string, shown: string, forDisplay = false): Promise<string | undefined> {
  const stat = await statIfExists(abs);
  if (!stat) return undefined;
  if (stat.isDirectory()) {
    throw new Error(`${shown} is a directory in the memory directory, not a note. Give the path of a .md file.`);
  }
  if (stat.size > MAX_MEMORY_FILE_BYTES) {
    if (!forDisplay) {
      throw new Error(
        `${shown} is ${stat.size} bytes, above the ${MAX_MEMORY_FILE_BYTES}-byte limit of a memory note, so it cannot be changed here. ` +
          'Replace it with a shorter note using memory_write.',
      );
    }
    const handle = await fs.open(abs, 'r');
    try {
      const buf = Buffer.alloc(MAX_MEMORY_FILE_BYTES);
      const { bytesRead } = await handle.read(buf, 0, buf.length, 0);
      return (
        buf.subarray(0, bytesRead).toString('utf8') +
        `\n\n(${shown} is ${stat.size} bytes; only the first ${MAX_MEMORY_FILE_BYTES} are shown. Shorten it with memory_write.)`
      );
    } finally {
      await handle.close();
    }
  }
  return fs.readFile(abs, 'utf8');
}

function occurrences(text: string, needle: string): number {
  let n = 0;
  for (let i = text.indexOf(needle); i !== -1; i = text.indexOf(needle, i + needle.length)) n++;
  return n;
}
