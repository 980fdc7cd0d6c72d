/**
 * Memory notes kept in a store (`createRegistry({ store })`, a LangGraph run's store, `--store`)
 * instead of files. A note is the fold of its change records: every write, patch and append is
 * its own record under a unique key, so two processes appending at once both land (no
 * read-modify-write of a shared value), and a record lands whole or not at all.
 * Must not touch files (memory.ts keeps the file behaviour) nor decide paths' shape beyond keys.
 */
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { Tool } from '../../authoring/tool.js';
import type { StoreScope } from '../../store/scope.js';
import type { StoreItem } from '../../store/types.js';
import { MAX_MEMORY_FILE_BYTES, MAX_MEMORY_LIST_ENTRIES, assertNoteSize, parseSummary, withSummary } from './store.js';

/** Change records one note may have in a store; memory_write starts the note afresh (one record). */
export const MAX_MEMORY_NOTE_RECORDS = 2_000;

/** The version of a note's change record (`{ v, note, op, ... }`). */
const NOTE_RECORD_VERSION = 1;

type NoteOp =
  | { op: 'write'; content: string }
  | { op: 'append'; entry: string; summary?: string }
  | { op: 'patch'; old: string; new: string };

interface NoteRecord {
  key: string;
  note: string;
  change: NoteOp;
}

let counter = 0;

/** The notes of one store scope. */
export class StoreNotes {
  constructor(private readonly scope: StoreScope) {}

  /** Every note's path, summary and size, in path order (under `dir` when given). */
  async list(dir: string | undefined): Promise<Tool.Result> {
    const prefix = dir?.trim() ? `${notePath(dir.trim().replace(/\/+$/, '') + '/x.md').slice(0, -4)}` : '';
    const byNote = groupItems(await this.scope.all('memory'));
    const paths = [...byNote.keys()].filter((p) => p.startsWith(prefix)).sort();
    const truncated = paths.length > MAX_MEMORY_LIST_ENTRIES;
    const entries: Array<{ path: string; summary: string; size: number }> = paths
      .slice(0, MAX_MEMORY_LIST_ENTRIES)
      .map((p) => {
        let text: string;
        try {
          text = fold(byNote.get(p)!.map((item) => this.scope.parsed('memory', item, (v) => parseRecord(item, v))));
        } catch (err) {
          // One broken record spoils its own note only: the list still shows every other note.
          return { path: p, summary: `(unreadable: ${(err as Error).message})`, size: 0 };
        }
        return { path: p, summary: parseSummary(text), size: Buffer.byteLength(text) };
      });
    const title = `memory: ${entries.length}${truncated ? '+' : ''} note${entries.length === 1 ? '' : 's'}`;
    if (!entries.length) {
      return {
        title: byNote.size ? title : 'memory: empty',
        output: byNote.size
          ? `No memory notes under ${prefix}.`
          : 'No memory notes yet. Create one with memory_write or memory_append.',
        metadata: { entries, count: 0, truncated },
      };
    }
    let output = `[\n${entries.map((e) => JSON.stringify(e)).join(',\n')}\n]`;
    if (truncated) {
      output += `\n(Showing the first ${MAX_MEMORY_LIST_ENTRIES} notes in path order; pass dir to list a subdirectory.)`;
    }
    return { title, output, metadata: { entries, count: entries.length, truncated } };
  }

  /** One note's text; a missing note is an error naming it. */
  async read(requested: string): Promise<Tool.Result> {
    const shown = notePath(requested);
    const records = await this.noteRecords(shown);
    if (!records.length) throw missing(shown);
    let text = fold(records);
    const size = Buffer.byteLength(text);
    if (size > MAX_MEMORY_FILE_BYTES) {
      text =
        Buffer.from(text).subarray(0, MAX_MEMORY_FILE_BYTES).toString('utf8') +
        `\n\n(${shown} is ${size} bytes; only the first ${MAX_MEMORY_FILE_BYTES} are shown. Shorten it with memory_write.)`;
    }
    return {
      title: shown,
      output: text.length ? text : `(${shown} is empty)`,
      metadata: { path: shown, size, summary: parseSummary(text) },
    };
  }

  /** Replaces a note whole; the records it supersedes are then removed. */
  async write(requested: string, content: string): Promise<Tool.Result> {
    const shown = notePath(requested);
    const bytes = assertNoteSize(content, shown, 'This write');
    const before = await this.noteRecords(shown);
    await this.add(shown, { op: 'write', content });
    // Everything before this write is superseded by it (the fold starts at the last write anyway).
    for (const r of before) await this.scope.delete('memory', r.key).catch(() => undefined);
    return {
      title: shown,
      output: `${before.length ? 'Replaced' : 'Created'} memory note ${shown} (${bytes} bytes).`,
      metadata: { path: shown, created: !before.length, size: bytes, summary: parseSummary(content), truncated: false },
    };
  }

  /** Replaces one exact, unique passage; recorded as a patch, so an append made meanwhile is kept. */
  async patch(requested: string, oldStr: string, newStr: string): Promise<Tool.Result> {
    const shown = notePath(requested);
    const records = await this.noteRecords(shown);
    if (!records.length) throw missing(shown);
    const text = fold(records);
    const count = occurrences(text, oldStr);
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
    const at = text.indexOf(oldStr);
    const updated = text.slice(0, at) + newStr + text.slice(at + oldStr.length);
    const size = assertNoteSize(updated, shown, 'This patch');
    this.assertRoom(shown, records.length);
    await this.add(shown, { op: 'patch', old: oldStr, new: newStr });
    const line = text.slice(0, at).split('\n').length;
    return {
      title: shown,
      output: `Patched ${shown} at line ${line} (${size} bytes now).`,
      metadata: { path: shown, line, size, summary: parseSummary(updated), truncated: false },
    };
  }

  /** Adds an entry (and/or a summary) as its own record. */
  async append(requested: string, entry: string, summary: string | undefined): Promise<Tool.Result> {
    const shown = notePath(requested);
    const records = await this.noteRecords(shown);
    const change: NoteOp = { op: 'append', entry, ...(summary !== undefined ? { summary } : {}) };
    const text = apply(fold(records), change);
    const size = assertNoteSize(text, shown, 'This append');
    this.assertRoom(shown, records.length);
    await this.add(shown, change);
    const now = parseSummary(text);
    return {
      title: shown,
      output:
        `${records.length ? 'Appended to' : 'Created'} ${shown} (${size} bytes now)` +
        (summary !== undefined ? `; summary: ${now}` : '') +
        '.',
      metadata: { path: shown, created: !records.length, size, summary: now, truncated: false },
    };
  }

  /** Puts one change record under a key no other writer can choose (time, random id, counter). */
  private add(note: string, change: NoteOp): Promise<void> {
    const key = `${note}#${Date.now().toString(36).padStart(9, '0')}-${randomUUID()}-${(counter++).toString(36)}`;
    return this.scope.put('memory', key, { v: NOTE_RECORD_VERSION, note, ...change });
  }

  private assertRoom(shown: string, count: number): void {
    if (count >= MAX_MEMORY_NOTE_RECORDS) {
      throw new Error(
        `${shown} has ${count} changes in the store, the most one note keeps (${MAX_MEMORY_NOTE_RECORDS}). ` +
          'Rewrite it whole with memory_write (read it first), which keeps one record, then append again.',
      );
    }
  }

  private async records(filter?: Record<string, unknown>): Promise<NoteRecord[]> {
    const items = await this.scope.all('memory', filter);
    return items.map((item) => this.scope.parsed('memory', item, (v) => parseRecord(item, v)));
  }

  private async noteRecords(note: string): Promise<NoteRecord[]> {
    return (await this.records({ note })).filter((r) => r.note === note);
  }
}

/** A note path as a store key: relative, `/`-separated, normalised, ending in `.md`, never leaving the root. */
export function notePath(requested: string): string {
  const trimmed = requested.trim();
  if (!trimmed) throw new Error('path is empty. Give the note\'s path inside the memory directory, e.g. "project.md".');
  if (!trimmed.toLowerCase().endsWith('.md')) {
    throw new Error(
      `Memory notes are Markdown files: ${JSON.stringify(requested)} does not end in ".md". Use a path like "${trimmed.replace(/\.[A-Za-z0-9]{1,8}$/, '') || 'note'}.md".`,
    );
  }
  const normal = path.posix.normalize(trimmed.replace(/\\/g, '/'));
  if (
    path.posix.isAbsolute(normal) ||
    normal === '..' ||
    normal.startsWith('../') ||
    normal.includes('\0') ||
    normal.includes('#')
  ) {
    throw new Error(
      `Memory path ${JSON.stringify(requested)} is outside the memory directory. ` +
        'Use a path relative to it, like "notes/topic.md", without "..", "#" or a leading "/".',
    );
  }
  return normal;
}

function parseRecord(item: StoreItem, v: Record<string, unknown>): NoteRecord | undefined {
  if (v.v !== NOTE_RECORD_VERSION || typeof v.note !== 'string') return undefined;
  let change: NoteOp | undefined;
  if (v.op === 'write' && typeof v.content === 'string') change = { op: 'write', content: v.content };
  else if (
    v.op === 'append' &&
    typeof v.entry === 'string' &&
    (v.summary === undefined || typeof v.summary === 'string')
  )
    change = { op: 'append', entry: v.entry, ...(typeof v.summary === 'string' ? { summary: v.summary } : {}) };
  else if (v.op === 'patch' && typeof v.old === 'string' && typeof v.new === 'string')
    change = { op: 'patch', old: v.old, new: v.new };
  return change && { key: item.key, note: v.note, change };
}

/** Raw records grouped by note (the `note` field, else the key before `#`), each group oldest first. */
function groupItems(items: readonly StoreItem[]): Map<string, StoreItem[]> {
  const byNote = new Map<string, StoreItem[]>();
  for (const item of items) {
    const note = typeof item.value?.note === 'string' ? item.value.note : item.key.split('#')[0];
    let list = byNote.get(note);
    if (!list) byNote.set(note, (list = []));
    list.push(item);
  }
  return byNote;
}

/** The note's text: its records applied in order (oldest first), starting at the last write. */
function fold(records: readonly NoteRecord[]): string {
  let start = 0;
  for (let i = records.length - 1; i >= 0; i--) {
    if (records[i].change.op === 'write') {
      start = i;
      break;
    }
  }
  let text = '';
  for (let i = start; i < records.length; i++) text = apply(text, records[i].change);
  return text;
}

function apply(text: string, change: NoteOp): string {
  switch (change.op) {
    case 'write':
      return change.content;
    case 'append': {
      let out = text;
      if (change.entry.trim()) {
        if (out && !out.endsWith('\n')) out += '\n';
        out += change.entry.endsWith('\n') ? change.entry : `${change.entry}\n`;
      }
      return change.summary !== undefined ? withSummary(out, change.summary) : out;
    }
    case 'patch': {
      // A patch whose passage a concurrent change removed or duplicated is skipped, never half-applied.
      if (occurrences(text, change.old) !== 1) return text;
      const at = text.indexOf(change.old);
      return text.slice(0, at) + change.new + text.slice(at + change.old.length);
    }
  }
}

function missing(shown: string): Error {
  return new Error(
    `Memory note ${shown} does not exist. Call memory_list to see the notes, or create it with memory_write.`,
  );
}

function occurrences(text: string, needle: string): number {
  let n = 0;
  for (let i = text.indexOf(needle); i !== -1; i = text.indexOf(needle, i + needle.length)) n++;
  return n;
}
