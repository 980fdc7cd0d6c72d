/**
 * The memory directory the memory_* tools share: where it is, how a note's path is confined to it
 * (the workspace sandbox, with the memory root as its only root), and the `> Summary:` line that
 * serves as a note's index entry.
 * Must not hold the tools themselves (memory.ts).
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { Tool } from '../../authoring/tool.js';
import { Workspace, realpathAllowingMissing, workspaceRootFor } from '../../workspace/workspace.js';

declare module '../../authoring/tool.js' {
  namespace Tool {
    interface InitContext {
      /** The memory tools' directory: absolute, or relative to the workspace root; default `.agent-memory`. */
      memoryRoot?: string;
    }
  }
}

/** The memory root when `initCtx.memoryRoot` is not set: this directory in the workspace root. */
export const DEFAULT_MEMORY_DIR = '.agent-memory';
/** Largest memory note, in UTF-8 bytes (a write, patch or append that would pass it is refused). */
export const MAX_MEMORY_FILE_BYTES = 256 * 1024;
/** Most notes memory_list reports in one call. */
export const MAX_MEMORY_LIST_ENTRIES = 500;
/** How far into a note the `> Summary:` line is looked for, in characters. */
export const SUMMARY_SCAN_CHARS = 4 * 1024;
/** Longest summary kept, in characters (longer ones are cut with "..."). */
export const MAX_SUMMARY_CHARS = 300;

/** Tool ids for an agent that may consult memory but not change it (e.g. an orchestrator). */
export const MEMORY_READ_ONLY_TOOLS: readonly string[] = ['memory_list', 'memory_read'];
/** Tool ids for an agent that keeps memory (e.g. a reflection step after a task). */
export const MEMORY_TOOLS: readonly string[] = [
  'memory_list',
  'memory_read',
  'memory_write',
  'memory_patch',
  'memory_append',
];

const SUMMARY_LINE = /^> Summary:[ \t]*(.*)$/m;

/** The memory root of one tool set, and path resolution inside it. */
export class MemoryStore {
  private workspace?: Promise<Workspace>;

  private constructor(
    /** The memory root as configured, absolute (may go through links the host chose). */
    private readonly configured: string,
    /** The memory root's real path at init (its nearest existing ancestor's, when it did not exist yet). */
    readonly root: string,
  ) {}

  /**
   * The store for an init context: `initCtx.memoryRoot` (absolute, or relative to the workspace
   * root), else `.agent-memory/` in the workspace. A relative or default root must stay inside the
   * workspace, symlinks included; an absolute one is the host's choice. Either way its real path
   * is fixed here, and every later use checks it still is that (`checkRoot`).
   */
  static async fromInitContext(initCtx: Tool.InitContext = {}): Promise<MemoryStore> {
    const configured = initCtx.memoryRoot;
    if (configured !== undefined && (typeof configured !== 'string' || !configured.trim())) {
      throw new Error(
        `memoryRoot must be a non-empty path string, got ${JSON.stringify(configured)}. Fix the memory tools' init options.`,
      );
    }
    const raw = typeof configured === 'string' ? configured : DEFAULT_MEMORY_DIR;
    if (path.isAbsolute(raw)) {
      const abs = path.resolve(raw);
      return new MemoryStore(abs, await realpathAllowingMissing(abs));
    }
    const ws = await Workspace.fromInitContext(initCtx);
    const abs = path.join(workspaceRootFor(initCtx), raw);
    return new MemoryStore(abs, await ws.resolve(abs, 'write'));
  }

  /**
   * Throws a sentence unless the memory root still is the directory fixed at init: neither it nor
   * a directory above it was replaced by a link (or moved) since. Run before every use — a root
   * checked once at init could be swapped for a link to anywhere by a later `move` or bash call.
   */
  async checkRoot(): Promise<void> {
    const [viaConfigured, viaRoot] = await Promise.all([
      realpathAllowingMissing(this.configured).catch(() => undefined),
      realpathAllowingMissing(this.root).catch(() => undefined),
    ]);
    const rootStat = await fs.lstat(this.root).catch(() => undefined);
    if (viaConfigured !== this.root || viaRoot !== this.root || (rootStat && !rootStat.isDirectory())) {
      throw new Error(
        `The memory directory ${this.configured} is no longer the directory the memory tools started with (${this.root}): ` +
          'it or a directory above it was moved or replaced by a link, so memory is not read or written there. ' +
          'Ask the user to restore the directory, or restart the memory tools.',
      );
    }
  }

  /** Whether the memory root exists yet (it is created by the first write). Checks the root first. */
  async exists(): Promise<boolean> {
    await this.checkRoot();
    return (await fs.lstat(this.root).catch(() => undefined))?.isDirectory() ?? false;
  }

  /** The sandbox rooted at the memory root, creating the root on first use. Checks the root first, every call. */
  async sandbox(): Promise<Workspace> {
    await this.checkRoot();
    if (!this.workspace) {
      this.workspace = fs.mkdir(this.root, { recursive: true }).then(() => Workspace.create({ root: this.root }));
      this.workspace.catch(() => (this.workspace = undefined));
    }
    const ws = await this.workspace;
    // The root was created just now, or the check above held: one more check closes the window
    // between a first check and the mkdir.
    await this.checkRoot();
    return ws;
  }

  /**
   * Resolves a note's path (relative to the memory root) to its real absolute path, or throws a
   * sentence saying what is wrong: not `.md`, outside the memory root (also through symlinks).
   */
  async resolve(requested: string, mode: 'read' | 'write'): Promise<{ abs: string; shown: string }> {
    const trimmed = requested.trim();
    if (!trimmed)
      throw new Error('path is empty. Give the note\'s path inside the memory directory, e.g. "project.md".');
    if (!trimmed.toLowerCase().endsWith('.md')) {
      throw new Error(
        `Memory notes are Markdown files: ${JSON.stringify(requested)} does not end in ".md". Use a path like "${suggestMd(trimmed)}".`,
      );
    }
    const ws = await this.sandbox();
    let abs: string;
    try {
      abs = await ws.resolve(trimmed, mode);
    } catch (err) {
      if ((err as Error).name === 'PathOutsideWorkspaceError') {
        throw new Error(
          `Memory path ${JSON.stringify(requested)} is outside the memory directory ${this.root}. ` +
            'Use a path relative to it, like "notes/topic.md", without ".." or links leading out.',
          { cause: err },
        );
      }
      throw err;
    }
    return { abs, shown: ws.display(abs) };
  }
}

/** The text of a note's `> Summary:` line (in its first SUMMARY_SCAN_CHARS characters), or '' when it has none. */
export function parseSummary(text: string): string {
  const m = SUMMARY_LINE.exec(text.slice(0, SUMMARY_SCAN_CHARS));
  return m ? m[1].trim() : '';
}

/** One line, trimmed and capped, so a summary cannot break the note's structure. */
function cleanSummary(summary: string): string {
  const one = summary.replace(/\s+/g, ' ').trim();
  return one.length > MAX_SUMMARY_CHARS ? `${one.slice(0, MAX_SUMMARY_CHARS - 3)}...` : one;
}

/** `text` with its `> Summary:` line replaced, or a new one added at the top. */
export function withSummary(text: string, summary: string): string {
  const line = `> Summary: ${cleanSummary(summary)}`;
  const head = text.slice(0, SUMMARY_SCAN_CHARS);
  if (SUMMARY_LINE.test(head)) return head.replace(SUMMARY_LINE, () => line) + text.slice(SUMMARY_SCAN_CHARS);
  return text ? `${line}\n\n${text}` : `${line}\n`;
}

/** Throws when `text` is above the note size cap. */
export function assertNoteSize(text: string, shown: string, action: string): number {
  const bytes = Buffer.byteLength(text);
  if (bytes > MAX_MEMORY_FILE_BYTES) {
    throw new Error(
      `${action} would make ${shown} ${bytes} bytes, above the ${MAX_MEMORY_FILE_BYTES}-byte limit of a memory note. ` +
        'Keep notes short: summarise or split the note into several files.',
    );
  }
  return bytes;
}

function suggestMd(p: string): string {
  const base = p.replace(/\.[A-Za-z0-9]{1,8}$/, '');
  return `${base || 'note'}.md`;
}
