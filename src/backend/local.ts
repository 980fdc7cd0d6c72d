/**
 * Our workspace as a deepagents backend (`SandboxBackendProtocolV2`): paths map to the workspace as
 * `virtualMode` says (local-paths.ts) and every one goes through the sandbox (`Workspace.resolve`:
 * symlink escapes refused), every operation is judged by the registry's policy as the matching tool's
 * call would be (local-policy.ts), writes are atomic and serialised per file, a file must be read
 * before it is overwritten or edited and must not have changed since (the read tracker), answers are
 * capped, and `execute` runs through a registry's bash tool, so its pipeline (policy, timeout, output
 * cap, and any OS sandbox the registry applies) holds. Every failure is an `error` field in a
 * sentence; no method throws. What deepagents' own sandboxes answer, this answers too: "not found"
 * for a missing file, "multiple" for an ambiguous edit, an empty listing for a missing directory.
 * Must not be imported by the tools (they reach backends through guard.ts) nor import deepagents.
 * Over 400 lines: one class implementing the whole protocol; each method is short and they share
 * the workspace, the read tracker and the answer caps.
 */
import { WORKSPACE_ROOT } from './workspace-root.js';
import { promises as fs, type Stats } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type FastGlob from 'fast-glob';
import { Workspace, atomicWriteFile, withFileLock, stampOf } from '../workspace/workspace.js';
import { isAtomicTempName } from '../workspace/atomic-write.js';
import { Tenant } from '../workspace/tenant.js';
import { StaleFileError, type FileStamp } from '../workspace/read-tracker.js';
import { describeThrown } from '../text/describe.js';
import { onFirstUse } from '../platform/lazy.js';
import type { Registry } from '../registry/registry.js';
import type { Tool } from '../authoring/tool.js';
import { MAX_BACKEND_ENTRIES, MAX_BACKEND_FILE_CHARS } from './guard.js';
import { BackendPaths } from './local-paths.js';
import { BackendJudge, PolicyRefusal } from './local-policy.js';
import type {
  DeleteResult,
  EditResult,
  ExecuteResponse,
  FileDownloadResponse,
  FileInfo,
  FileOperationError,
  FileUploadResponse,
  GlobResult,
  GrepMatch,
  GrepResult,
  LsResult,
  ReadRawResult,
  ReadResult,
  SandboxBackendProtocolV2,
  WriteResult,
} from './protocol.js';

const fastGlob = onFirstUse<typeof FastGlob>('fast-glob');

/** Lines `read` answers when no limit is given (the protocol's default). */
export const BACKEND_READ_DEFAULT_LIMIT = 500;
/** Directories a glob or grep over the workspace backend never enters. */
const SKIPPED_DIRS = ['**/node_modules/**', '**/.git/**'];

/** MIME types by extension, for binary answers (text is `text/plain`). */
const BINARY_MIME: Readonly<Record<string, string>> = {
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.pdf': 'application/pdf',
};

/** What the workspace backend is built from. */
export interface WorkspaceBackendOptions {
  workspace: Workspace;
  /**
   * The registry whose policy judges every operation and whose `bash` runs `execute`; without one
   * nothing is judged. `execute` is offered only with `execute: true`.
   */
  registry?: Registry;
  /** Whether the backend runs commands (through `registry`'s bash). */
  execute?: boolean;
  /** The init context bash runs under (its workspace). */
  initCtx: Tool.InitContext;
  /** The session the backend's reads and writes count for (stale-write checks); default `deepagents`. */
  sessionID: string;
  id: string;
  /** `true`: `/` is the workspace root; `false`: absolute paths are the host's (local-paths.ts). */
  virtualMode: boolean;
  /** Whether `close()` disposes `registry` (true when the backend made it itself). */
  ownsRegistry?: boolean;
}

/**
 * The tool deepagents' agent reads a file with: the stale-write sentence names it, so the model
 * calls what it has (`read_file`), not our `read`.
 */
const CALLER_READ_TOOL = 'read_file';

/** Our workspace behind deepagents' backend protocol (built by `toDeepAgentsBackend`). */
export class WorkspaceBackend implements SandboxBackendProtocolV2 {
  readonly id: string;
  private readonly ws: Workspace;
  private readonly tenant = new Tenant();
  private readonly paths: BackendPaths;
  private readonly judge: BackendJudge;
  private running = true;

  constructor(private readonly options: WorkspaceBackendOptions) {
    this.ws = options.workspace;
    this.id = options.id;
    this.paths = new BackendPaths(this.ws.root, options.virtualMode);
    this.judge = new BackendJudge(options.registry, options.initCtx, options.sessionID);
  }

  /** Whether the backend serves calls (deepagents' sandbox suites check it): true until `close()`. */
  get isRunning(): boolean {
    return this.running;
  }

  /** The directory `/` stands for on this host (the lsp tool starts its servers there). */
  get workspaceRoot(): string {
    return this.ws.root;
  }

  /** The same, under the symbol tools read it by (workspace-root.ts). */
  get [WORKSPACE_ROOT](): string {
    return this.ws.root;
  }

  /**
   * Releases what the backend made: the registry it runs `execute` through when it made that
   * registry itself (its OS sandbox's private directory, background jobs, saved outputs). A
   * registry handed in stays its owner's to dispose.
   */
  async close(): Promise<void> {
    this.running = false;
    if (this.options.ownsRegistry) await this.options.registry?.dispose();
  }

  /** Writes files a program hands in at creation (not judged by the policy: they are not a model's calls). */
  async seed(files: Record<string, string>): Promise<void> {
    for (const [p, content] of Object.entries(files)) {
      const abs = await this.ws.resolve(this.paths.host(p), 'write');
      await withFileLock(abs, async () => {
        await fs.mkdir(path.dirname(abs), { recursive: true });
        await atomicWriteFile(abs, content);
      });
    }
  }

  async ls(dir: string): Promise<LsResult> {
    return this.guard(`list ${dir}`, async (): Promise<LsResult> => {
      const lexical = this.paths.host(dir, true);
      await this.judge.authorize('list', { path: lexical });
      const abs = await this.ws.resolve(lexical, 'read');
      const st = await fs.stat(abs).catch(() => undefined);
      // deepagents' backends answer an empty list for a missing directory, or a file.
      if (!st?.isDirectory()) return { files: [] };
      const filter = await this.judge.readFilter('list', { path: lexical });
      const base = this.paths.base(dir, true);
      const guard = this.ws.guard();
      const entries = await fs.readdir(abs, { withFileTypes: true });
      guard.listed(abs, entries);
      const files: FileInfo[] = [];
      for (const e of entries) {
        if (isAtomicTempName(e.name)) continue;
        const child = path.join(abs, e.name);
        if (!guard.inside(child)) continue;
        const s = await fs.stat(child).catch(() => undefined);
        if (!s || (!s.isFile() && !s.isDirectory())) continue;
        if (filter?.skips(child, s.isDirectory())) continue;
        files.push(info(BackendPaths.join(base, e.name), s));
        if (files.length >= MAX_BACKEND_ENTRIES) break;
      }
      return { files: files.sort(byPath) };
    });
  }

  async read(filePath: string, offset = 0, limit = BACKEND_READ_DEFAULT_LIMIT): Promise<ReadResult> {
    return this.guard(`read ${filePath}`, async () => {
      const file = await this.load(filePath);
      if ('error' in file) return { error: file.error };
      if (file.bytes) return { content: file.bytes, mimeType: file.mimeType };
      const lines = file.text.split('\n');
      const total = lines[lines.length - 1] === '' ? lines.length - 1 : lines.length;
      const from = Math.max(0, Math.trunc(offset));
      const count = Math.max(0, Math.trunc(limit));
      if (total === 0) return { content: '', mimeType: 'text/plain', totalLines: 0 };
      if (from >= total) return { error: `Line offset ${from} is past the end of ${filePath} (${total} lines).` };
      const end = Math.min(from + count, total);
      const result: ReadResult = {
        content: lines.slice(from, end).join('\n'),
        mimeType: 'text/plain',
        totalLines: total,
        startLine: from + 1,
        endLine: end,
      };
      if (end < total) result.nextOffset = end;
      return result;
    });
  }

  async readRaw(filePath: string): Promise<ReadRawResult> {
    return this.guard(`read ${filePath}`, async () => {
      const file = await this.load(filePath);
      if ('error' in file) return { error: file.error };
      return {
        data: {
          content: file.bytes ?? file.text,
          mimeType: file.mimeType,
          created_at: file.mtime,
          modified_at: file.mtime,
        },
      };
    });
  }

  async write(filePath: string, content: string): Promise<WriteResult> {
    return this.guard(`write ${filePath}`, async () => {
      if (typeof content !== 'string') return { error: 'content must be text.' };
      if (content.length > MAX_BACKEND_FILE_CHARS)
        return { error: `content is ${content.length} characters, above the limit of ${MAX_BACKEND_FILE_CHARS}.` };
      const lexical = this.paths.host(filePath);
      await this.judge.authorize('write', { filePath: lexical, content });
      const abs = await this.ws.resolve(lexical, 'write');
      return withFileLock(abs, async () => {
        const st = await fs.stat(abs).catch(() => undefined);
        if (st?.isDirectory()) return { error: `${filePath} is a directory; give the path of a file inside it.` };
        if (st) await this.assertFresh(abs, filePath);
        else await fs.mkdir(path.dirname(abs), { recursive: true });
        const { stat } = await atomicWriteFile(abs, content);
        this.tenant.readTracker.record(this.options.sessionID, abs, stat);
        return { path: filePath, filesUpdate: null };
      });
    });
  }

  async edit(filePath: string, oldString: string, newString: string, replaceAll = false): Promise<EditResult> {
    return this.guard(`edit ${filePath}`, async () => {
      const lexical = this.paths.host(filePath);
      await this.judge.authorize('edit', { filePath: lexical, oldString, newString, replaceAll });
      const abs = await this.ws.resolve(lexical, 'write');
      return withFileLock(abs, async () => {
        const handle = await fs.open(abs, 'r').catch(() => undefined);
        if (!handle) return { error: `File '${filePath}' not found. Check the path (ls its directory).` };
        let text: string;
        let version;
        try {
          version = stampOf(await handle.stat({ bigint: true }));
          if (!(await handle.stat()).isFile()) return { error: `${filePath} is not a regular file.` };
          text = await handle.readFile('utf8');
        } finally {
          await handle.close();
        }
        await this.assertFresh(abs, filePath, version);
        if (oldString === '') return { error: 'oldString is empty: give the text to replace.' };
        const occurrences = text.split(oldString).length - 1;
        if (occurrences === 0)
          return { error: `oldString was not found in ${filePath}. Read the file and copy the exact text.` };
        if (occurrences > 1 && !replaceAll)
          return {
            error: `oldString occurs multiple times (${occurrences}) in ${filePath}. Add surrounding lines to make it unique, or set replace_all.`,
          };
        const updated = replaceAll ? text.split(oldString).join(newString) : text.replace(oldString, () => newString);
        const { stat } = await atomicWriteFile(abs, updated, {
          expect: version,
          staleMessage: `File ${filePath} changed on disk during the edit; nothing was written. Read it again with ${CALLER_READ_TOOL}.`,
        });
        this.tenant.readTracker.record(this.options.sessionID, abs, stat);
        return { path: filePath, filesUpdate: null, occurrences: replaceAll ? occurrences : 1 };
      });
    });
  }

  async grep(
    pattern: string,
    dir?: string | null,
    glob?: string | null,
    maxCount?: number | null,
  ): Promise<GrepResult> {
    const where = dir ?? '/';
    return this.guard(`grep in ${where}`, async (): Promise<GrepResult> => {
      const cap = Math.min(maxCount ?? MAX_BACKEND_ENTRIES, MAX_BACKEND_ENTRIES);
      const lexical = this.paths.host(where, true);
      const args = { pattern, path: lexical, ...(glob ? { include: glob } : {}) };
      await this.judge.authorize('grep', args);
      const files = await this.walk(lexical, glob ? (glob.includes('/') ? glob : `**/${glob}`) : '**/*', true);
      if ('error' in files) return files;
      const filter = await this.judge.readFilter('grep', args);
      const base = this.paths.base(where, true);
      const matches: GrepMatch[] = [];
      for (const found of files.found) {
        if (found.dir || filter?.skips(found.abs, false)) continue;
        const st = await fs.stat(found.abs).catch(() => undefined);
        if (!st?.isFile() || st.size > MAX_BACKEND_FILE_CHARS) continue;
        const text = await fs.readFile(found.abs, 'utf8').catch(() => undefined);
        if (text === undefined || text.includes('\0')) continue; // binary: skipped
        const lines = text.split('\n');
        for (let i = 0; i < lines.length; i++) {
          if (!lines[i].includes(pattern)) continue;
          if (matches.length >= cap) return { matches, truncated: true };
          matches.push({ path: found.rel ? BackendPaths.join(base, found.rel) : where, line: i + 1, text: lines[i] });
        }
      }
      return { matches };
    });
  }

  async glob(pattern: string, dir = '/'): Promise<GlobResult> {
    return this.guard(`glob in ${dir}`, async (): Promise<GlobResult> => {
      const lexical = this.paths.host(dir, true);
      await this.judge.authorize('glob', { pattern, path: lexical });
      const found = await this.walk(lexical, pattern.replace(/^\/+/, ''), false);
      if ('error' in found) return found;
      const filter = await this.judge.readFilter('glob', { pattern, path: lexical });
      // Relative in, relative out: relative to the directory searched, as deepagents' sandboxes answer.
      const base = dir.startsWith('/') ? this.paths.base(dir, true) : '.';
      const files: FileInfo[] = [];
      for (const f of found.found) {
        if (!f.rel) continue;
        const st = await fs.stat(f.abs).catch(() => undefined);
        if (!st || (!st.isFile() && !st.isDirectory())) continue;
        if (filter?.skips(f.abs, st.isDirectory())) continue;
        // A directory is named without the trailing slash, as deepagents' LocalShellBackend names it.
        files.push(info(BackendPaths.join(base, f.rel), st, false));
      }
      return { files, ...(found.truncated ? { truncated: true } : {}) };
    });
  }

  async delete(filePath: string): Promise<DeleteResult> {
    return this.guard(`delete ${filePath}`, async () => {
      const lexical = this.paths.host(filePath);
      await this.judge.authorize('delete', { path: lexical, recursive: true });
      const abs = await this.ws.resolveEntry(lexical, 'write');
      if (this.ws.roots.includes(abs)) return { error: `${filePath} is the workspace root; it cannot be deleted.` };
      return withFileLock(abs, async () => {
        const st = await fs.lstat(abs).catch(() => undefined);
        if (!st) return { error: `'${filePath}' not found; nothing was deleted.` };
        if (st.isFile()) await this.assertFresh(abs, filePath, undefined, true);
        await fs.rm(abs, { recursive: true, force: false });
        return { path: filePath, filesUpdate: null };
      });
    });
  }

  async uploadFiles(files: Array<[string, Uint8Array]>): Promise<FileUploadResponse[]> {
    const out: FileUploadResponse[] = [];
    for (const [p, content] of files) {
      try {
        const lexical = this.paths.host(p);
        await this.judge.authorize('write', { filePath: lexical });
        const abs = await this.ws.resolve(lexical, 'write');
        await withFileLock(abs, async () => {
          await fs.mkdir(path.dirname(abs), { recursive: true });
          await atomicWriteFile(abs, content);
        });
        out.push({ path: p, error: null });
      } catch (err) {
        out.push({ path: p, error: operationError(err) });
      }
    }
    return out;
  }

  async downloadFiles(paths: string[]): Promise<FileDownloadResponse[]> {
    const out: FileDownloadResponse[] = [];
    for (const p of paths) {
      try {
        const lexical = this.paths.host(p);
        await this.judge.authorize('read', { filePath: lexical });
        const abs = await this.ws.resolve(lexical, 'read');
        out.push({ path: p, content: new Uint8Array(await fs.readFile(abs)), error: null });
      } catch (err) {
        out.push({ path: p, content: null, error: operationError(err) });
      }
    }
    return out;
  }

  /** Runs `command` through the registry's bash tool (its policy, timeout, caps, and OS sandbox if any). */
  async execute(command: string): Promise<ExecuteResponse> {
    const registry = this.options.registry;
    if (!registry || this.options.execute === false)
      return { output: 'This backend runs no commands.', exitCode: 1, truncated: false };
    const u = await registry.execute(
      'bash',
      { command, description: 'deepagents execute' },
      { sessionID: this.options.sessionID },
      this.options.initCtx,
    );
    const meta = u.result.metadata as { exitCode?: unknown; truncated?: unknown };
    const exitCode = typeof meta.exitCode === 'number' || meta.exitCode === null ? meta.exitCode : u.success ? 0 : 1;
    return {
      output: u.success ? u.result.output : (u.error ?? u.result.output),
      exitCode,
      truncated: meta.truncated === true,
    };
  }

  /**
   * The read tracker's check, in deepagents' words: a file never read is to be read with
   * `read_file` (the caller's tool), not our `read`. `ifRead`: a file never read passes (delete).
   */
  private async assertFresh(abs: string, shown: string, current?: FileStamp, ifRead = false): Promise<void> {
    const tracker = this.tenant.readTracker;
    if (ifRead && !tracker.lastRead(this.options.sessionID, abs)) return;
    try {
      await tracker.assertFresh(this.options.sessionID, abs, shown, current);
    } catch (err) {
      if (err instanceof StaleFileError && err.reason === 'not-read')
        throw new Error(
          `File ${shown} has not been read in this session. Read it first with ${CALLER_READ_TOOL}, then retry the change.`,
          { cause: err },
        );
      if (err instanceof StaleFileError)
        throw new Error(
          err.message.replace(
            /Read it again before editing\.$/,
            `Read it again with ${CALLER_READ_TOOL} before changing it.`,
          ),
          { cause: err },
        );
      throw err;
    }
  }

  /** A file's content: text, or bytes for images, PDFs and files with NUL bytes; read recorded. */
  private async load(
    filePath: string,
  ): Promise<{ error: string } | { text: string; bytes?: Uint8Array; mimeType: string; mtime: string }> {
    const lexical = this.paths.host(filePath);
    await this.judge.authorize('read', { filePath: lexical });
    const abs = await this.ws.resolve(lexical, 'read');
    const handle = await fs.open(abs, 'r').catch(() => undefined);
    if (!handle) return { error: `File '${filePath}' not found` };
    try {
      const st = await handle.stat({ bigint: true });
      if (!st.isFile()) return { error: `${filePath} is not a regular file.` };
      if (Number(st.size) > MAX_BACKEND_FILE_CHARS)
        return {
          error: `${filePath} is ${st.size} bytes, above the ${MAX_BACKEND_FILE_CHARS}-byte limit of one read.`,
        };
      const buf = await handle.readFile();
      this.tenant.readTracker.record(this.options.sessionID, abs, stampOf(st));
      const mtime = new Date(Number(st.mtimeMs)).toISOString();
      const mime = BINARY_MIME[path.extname(abs).toLowerCase()];
      if (mime || buf.includes(0))
        return { text: '', bytes: new Uint8Array(buf), mimeType: mime ?? 'application/octet-stream', mtime };
      return { text: buf.toString('utf8'), mimeType: 'text/plain', mtime };
    } finally {
      await handle.close();
    }
  }

  /**
   * What `pattern` matches under `lexical` (files, and directories unless `onlyFiles`), each
   * checked by real path (a symlink out is left out), with its path relative to the directory
   * searched (`''` when `lexical` is a file: grep of one file).
   */
  private async walk(
    lexical: string,
    pattern: string,
    onlyFiles: boolean,
  ): Promise<{ error: string } | { found: Array<{ abs: string; rel: string; dir: boolean }>; truncated: boolean }> {
    const base = await this.ws.resolve(lexical, 'read');
    const st = await fs.stat(base).catch(() => undefined);
    if (!st) return { found: [], truncated: false };
    if (st.isFile()) return { found: onlyFiles ? [{ abs: base, rel: '', dir: false }] : [], truncated: false };
    if (pattern.split('/').includes('..')) return { error: `The pattern ${pattern} must not contain "..".` };
    const entries = await fastGlob()(pattern, {
      cwd: base,
      dot: true,
      onlyFiles,
      markDirectories: false,
      objectMode: true,
      followSymbolicLinks: false,
      ignore: SKIPPED_DIRS,
    });
    const guard = this.ws.guard();
    const found = entries
      .map((e) => ({ abs: path.join(base, e.path), rel: e.path, dir: e.dirent.isDirectory() }))
      .filter((f) => !isAtomicTempName(path.basename(f.abs)) && guard.inside(f.abs))
      .sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0));
    return { found: found.slice(0, MAX_BACKEND_ENTRIES), truncated: found.length > MAX_BACKEND_ENTRIES };
  }

  /** Runs `fn`; any throw (policy refusal, sandbox refusal, stale file, I/O error) becomes an `error` sentence. */
  private async guard<T extends { error?: string }>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      const message = describeThrown(err);
      return { error: message.includes(' ') ? message : `${what} failed: ${message}` } as T;
    }
  }
}

/** A listing's or a glob's entry for `p` (a listing's directories end in `/`). */
function info(p: string, s: Stats, slash = true): FileInfo {
  return s.isDirectory()
    ? { path: slash ? `${p}/` : p, is_dir: true, size: 0, modified_at: s.mtime.toISOString() }
    : { path: p, is_dir: false, size: s.size, modified_at: s.mtime.toISOString() };
}

function byPath(a: FileInfo, b: FileInfo): number {
  return a.path < b.path ? -1 : a.path > b.path ? 1 : 0;
}

/** A failed upload or download as the protocol's error codes. */
function operationError(err: unknown): FileOperationError {
  if (err instanceof PolicyRefusal) return 'permission_denied';
  const code = (err as { code?: unknown } | null)?.code;
  if (code === 'ENOENT') return 'file_not_found';
  if (code === 'EACCES' || code === 'EPERM') return 'permission_denied';
  if (code === 'EISDIR') return 'is_directory';
  return 'invalid_path';
}

/** A fresh backend id. */
export function newBackendId(): string {
  return `toolbelt-${randomBytes(4).toString('hex')}`;
}
