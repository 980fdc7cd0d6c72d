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
import { describeThrown } from '../../text/describe.js';

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
          return { path: p, summary: `(unreadable: ${describeThrown(err)})`, size: 0 };
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
    const change: NoteOp = { op: 'write', content };
    let before = await this.noteRecords(shown);
    const created = !before.length && (await this.create(shown, change));
    if (!created) {
      // Another writer created the note since it was read: it is replaced like any existing note.
      if (!before.length) before = await this.noteRecords(shown);
      await this.add(shown, change);
      await this.remove(before);
    }
    return {
      title: shown,
      output: `${created ? 'Created' : 'Replaced'} memory note ${shown} (${bytes} bytes).`,
      metadata: { path: shown, created, size: bytes, summary: parseSummary(content), truncated: false },
    };
  }

  /**
   * `toolbelt memory import`: puts a file's text in as the note `requested` without losing a
   * note. A note that is not in the store is created (once, even against a writer creating it at
   * the same moment); one holding other text is left alone (`skipped`) unless `overwrite`, and then replaced
   * only if no change landed between reading it and replacing it (else the replacement is taken
   * back: `changed`). Says when the store's copy last changed, for the caller to report.
   */
  async import(requested: string, content: string, overwrite: boolean): Promise<NoteImport> {
    const shown = notePath(requested);
    assertNoteSize(content, shown, 'This note');
    const change: NoteOp = { op: 'write', content };
    let before = await this.noteItems(shown);
    if (!before.length) {
      if (await this.create(shown, change)) return { path: shown, outcome: 'created' };
      before = await this.noteItems(shown);
    }
    const changedAt = lastChange(before);
    if (this.textOf(before) === content) return { path: shown, outcome: 'unchanged', changedAt };
    if (!overwrite) return { path: shown, outcome: 'skipped', changedAt };
    const key = await this.add(shown, change);
    // A change another writer made after the read above would be hidden by this write unseen:
    // then the write is taken back and the note left as that writer made it.
    const seen = new Set(before.map((i) => i.key));
    const after = await this.noteItems(shown);
    const mine = after.findIndex((i) => i.key === key);
    if (after.slice(0, mine).some((i) => !seen.has(i.key))) {
      await this.scope.delete('memory', key);
      return { path: shown, outcome: 'changed', changedAt: lastChange(after.filter((i) => i.key !== key)) };
    }
    await this.remove(before.map((i) => ({ key: i.key })));
    return { path: shown, outcome: 'replaced', changedAt };
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
    const change: NoteOp = { op: 'append', entry, ...(summary !== undefined ? { summary } : {}) };
    let records = await this.noteRecords(shown);
    let text = apply(fold(records), change);
    let size = assertNoteSize(text, shown, 'This append');
    const created = !records.length && (await this.create(shown, change));
    if (!created) {
      // Another writer created the note since it was read: this entry goes after what it wrote.
      if (!records.length) {
        records = await this.noteRecords(shown);
        text = apply(fold(records), change);
        size = assertNoteSize(text, shown, 'This append');
      }
      this.assertRoom(shown, records.length);
      await this.add(shown, change);
    }
    const now = parseSummary(text);
    return {
      title: shown,
      output:
        `${created ? 'Created' : 'Appended to'} ${shown} (${size} bytes now)` +
        (summary !== undefined ? `; summary: ${now}` : '') +
        '.',
      metadata: { path: shown, created, size, summary: now, truncated: false },
    };
  }

  /**
   * Creates a note that has no record yet: its first record goes under the one key every creator
   * of that note names (`firstKey`), with a claim that only creates, so of two writers creating
   * one note at once exactly one does (and says "Created"); false when another writer did.
   */
  private create(note: string, change: NoteOp): Promise<boolean> {
    return this.scope.claim('memory', firstKey(note), 'note', null, { v: NOTE_RECORD_VERSION, note, ...change });
  }

  /** Puts one change record under a key no other writer can choose (time, random id, counter); returns the key. */
  private async add(note: string, change: NoteOp): Promise<string> {
    const key = `${note}#${Date.now().toString(36).padStart(9, '0')}-${randomUUID()}-${(counter++).toString(36)}`;
    await this.scope.put('memory', key, { v: NOTE_RECORD_VERSION, note, ...change });
    return key;
  }

  /** Removes records a write superseded (best effort: a leftover is folded away anyway). */
  private async remove(records: ReadonlyArray<{ key: string }>): Promise<void> {
    for (const r of records) await this.scope.delete('memory', r.key).catch(() => undefined);
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

  /** The text `items` (one note's records) fold to; undefined when one of them is unreadable. */
  private textOf(items: readonly StoreItem[]): string | undefined {
    try {
      return fold(items.map((item) => this.scope.parsed('memory', item, (v) => parseRecord(item, v))));
    } catch {
      return undefined;
    }
  }

  /** The note's raw records, oldest first (with the store's times). */
  private async noteItems(note: string): Promise<StoreItem[]> {
    return (await this.scope.all('memory', { note })).filter((i) => i.value?.note === note);
  }
}

/** What `StoreNotes.import` did with one note. */
export interface NoteImport {
  /** The note's path in the store. */
  path: string;
  /**
   * created: it was not there; unchanged: the store already holds this text; skipped: it holds
   * another (not overwritten); replaced: overwritten; changed: another writer changed it while it
   * was being replaced, so it was left as that writer made it.
   */
  outcome: 'created' | 'unchanged' | 'skipped' | 'replaced' | 'changed';
  /** When the store's copy last changed (the newest of its records), when the store says. */
  changedAt?: Date;
}

/**
 * The key of a note's first record: the same for every writer creating that note, so creating it
 * is a claim that only one can win. `0` before the time sorts it first among equal creation times.
 */
function firstKey(note: string): string {
  return `${note}#000000000-first`;
}

/** When the newest of `items` was last written, if the store keeps times. */
function lastChange(items: readonly StoreItem[]): Date | undefined {
  let last: number | undefined;
  for (const i of items) {
    const t = i.updatedAt ?? i.createdAt;
    const ms = t === undefined ? NaN : new Date(t).getTime();
    if (Number.isFinite(ms) && (last === undefined || ms > last)) last = ms;
  }
  return last === undefined ? undefined : new Date(last);
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
