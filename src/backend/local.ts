/**
 * Our workspace as a deepagents backend (`SandboxBackendProtocolV2`): `/` is the workspace root and
 * every path goes through the sandbox (`Workspace.resolve`: symlink escapes refused), writes are
 * atomic and serialised per file, a file must be read before it is overwritten or edited and must not
 * have changed since (the read tracker), answers are capped, and `execute` runs through a registry's
 * bash tool, so its pipeline (policy, timeout, output cap, and any OS sandbox the registry applies)
 * holds. Every failure is an `error` field in a sentence; no method throws.
 * Must not be imported by the tools (they reach backends through guard.ts) nor import deepagents.
 * Over 400 lines: one class implementing the whole protocol; each method is short and they share
 * the workspace, the read tracker and the answer caps.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import posix from 'node:path/posix';
import { randomBytes } from 'node:crypto';
import type FastGlob from 'fast-glob';
import { Workspace, atomicWriteFile, withFileLock, stampOf } from '../workspace/workspace.js';
import { isAtomicTempName } from '../workspace/atomic-write.js';
import { Tenant } from '../workspace/tenant.js';
import { onFirstUse } from '../platform/lazy.js';
import type { Registry } from '../registry/registry.js';
import type { Tool } from '../authoring/tool.js';
import { MAX_BACKEND_ENTRIES, MAX_BACKEND_FILE_CHARS } from './guard.js';
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
  /** Runs `execute` through this registry's `bash` tool; without one the backend has no `execute`. */
  registry?: Registry;
  /** The init context bash runs under (its workspace). */
  initCtx: Tool.InitContext;
  /** The session the backend's reads and writes count for (stale-write checks); default `deepagents`. */
  sessionID: string;
  id: string;
  /** Whether `close()` disposes `registry` (true when the backend made it itself). */
  ownsRegistry?: boolean;
}

/** Our workspace behind deepagents' backend protocol (built by `toDeepAgentsBackend`). */
export class WorkspaceBackend implements SandboxBackendProtocolV2 {
  readonly id: string;
  private readonly ws: Workspace;
  private readonly tenant = new Tenant();

  constructor(private readonly options: WorkspaceBackendOptions) {
    this.ws = options.workspace;
    this.id = options.id;
  }

  /**
   * Releases what the backend made: the registry it runs `execute` through when it made that
   * registry itself (its OS sandbox's private directory, background jobs, saved outputs). A
   * registry handed in stays its owner's to dispose.
   */
  async close(): Promise<void> {
    if (this.options.ownsRegistry) await this.options.registry?.dispose();
  }

  async ls(dir: string): Promise<LsResult> {
    return this.guard(`list ${dir}`, async () => {
      const abs = await this.resolve(dir, 'read');
      const st = await fs.stat(abs).catch(() => undefined);
      if (!st) return { error: `Directory ${dir} does not exist.` };
      if (!st.isDirectory()) return { files: [] };
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
        const v = this.virtual(child);
        files.push(
          s.isDirectory()
            ? { path: `${v}/`, is_dir: true, size: 0, modified_at: s.mtime.toISOString() }
            : { path: v, is_dir: false, size: s.size, modified_at: s.mtime.toISOString() },
        );
        if (files.length >= MAX_BACKEND_ENTRIES) break;
      }
      return { files: files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)) };
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
      const abs = await this.resolve(filePath, 'write');
      return withFileLock(abs, async () => {
        const st = await fs.stat(abs).catch(() => undefined);
        if (st?.isDirectory()) return { error: `${filePath} is a directory; give the path of a file inside it.` };
        if (st) await this.tenant.readTracker.assertFresh(this.options.sessionID, abs, filePath);
        else await fs.mkdir(path.dirname(abs), { recursive: true });
        const { stat } = await atomicWriteFile(abs, content);
        this.tenant.readTracker.record(this.options.sessionID, abs, stat);
        return { path: filePath, filesUpdate: null };
      });
    });
  }

  async edit(filePath: string, oldString: string, newString: string, replaceAll = false): Promise<EditResult> {
    return this.guard(`edit ${filePath}`, async () => {
      const abs = await this.resolve(filePath, 'write');
      return withFileLock(abs, async () => {
        const handle = await fs.open(abs, 'r').catch(() => undefined);
        if (!handle) return { error: `File ${filePath} does not exist.` };
        let text: string;
        let version;
        try {
          version = stampOf(await handle.stat({ bigint: true }));
          if (!(await handle.stat()).isFile()) return { error: `${filePath} is not a regular file.` };
          text = await handle.readFile('utf8');
        } finally {
          await handle.close();
        }
        await this.tenant.readTracker.assertFresh(this.options.sessionID, abs, filePath, version);
        if (oldString === '') return { error: 'oldString is empty: give the text to replace.' };
        const occurrences = text.split(oldString).length - 1;
        if (occurrences === 0)
          return { error: `oldString was not found in ${filePath}. Read the file and copy the exact text.` };
        if (occurrences > 1 && !replaceAll)
          return {
            error: `oldString occurs ${occurrences} times in ${filePath}. Add surrounding lines to make it unique, or set replace_all.`,
          };
        const updated = replaceAll ? text.split(oldString).join(newString) : text.replace(oldString, () => newString);
        const { stat } = await atomicWriteFile(abs, updated, {
          expect: version,
          staleMessage: `File ${filePath} changed on disk during the edit; nothing was written. Read it again.`,
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
    return this.guard(`grep in ${dir ?? '/'}`, async (): Promise<GrepResult> => {
      const cap = Math.min(maxCount ?? MAX_BACKEND_ENTRIES, MAX_BACKEND_ENTRIES);
      const files = await this.walk(dir ?? '/', glob ? (glob.includes('/') ? glob : `**/${glob}`) : '**/*');
      if ('error' in files) return files;
      const matches: GrepMatch[] = [];
      for (const abs of files.paths) {
        const st = await fs.stat(abs).catch(() => undefined);
        if (!st?.isFile() || st.size > MAX_BACKEND_FILE_CHARS) continue;
        const text = await fs.readFile(abs, 'utf8').catch(() => undefined);
        if (text === undefined || text.includes('\0')) continue; // binary: skipped
        const lines = text.split('\n');
        for (let i = 0; i < lines.length; i++) {
          if (!lines[i].includes(pattern)) continue;
          if (matches.length >= cap) return { matches, truncated: true };
          matches.push({ path: this.virtual(abs), line: i + 1, text: lines[i] });
        }
      }
      return { matches };
    });
  }

  async glob(pattern: string, dir = '/'): Promise<GlobResult> {
    return this.guard(`glob in ${dir}`, async (): Promise<GlobResult> => {
      const found = await this.walk(dir, pattern.replace(/^\/+/, ''));
      if ('error' in found) return found;
      const files: FileInfo[] = [];
      for (const abs of found.paths) {
        const st = await fs.stat(abs).catch(() => undefined);
        if (!st?.isFile()) continue;
        files.push({ path: this.virtual(abs), is_dir: false, size: st.size, modified_at: st.mtime.toISOString() });
      }
      return { files, ...(found.truncated ? { truncated: true } : {}) };
    });
  }

  async delete(filePath: string): Promise<DeleteResult> {
    return this.guard(`delete ${filePath}`, async () => {
      const abs = await this.ws.resolveEntry(this.host(filePath), 'write');
      if (this.ws.roots.includes(abs)) return { error: `${filePath} is the workspace root; it cannot be deleted.` };
      return withFileLock(abs, async () => {
        const st = await fs.lstat(abs).catch(() => undefined);
        if (!st) return { error: `${filePath} does not exist; nothing was deleted.` };
        if (st.isFile()) await this.tenant.readTracker.assertFreshIfRead(this.options.sessionID, abs, filePath);
        await fs.rm(abs, { recursive: true, force: false });
        return { path: filePath, filesUpdate: null };
      });
    });
  }

  async uploadFiles(files: Array<[string, Uint8Array]>): Promise<FileUploadResponse[]> {
    const out: FileUploadResponse[] = [];
    for (const [p, content] of files) {
      try {
        const abs = await this.resolve(p, 'write');
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
        const abs = await this.resolve(p, 'read');
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
    if (!registry) return { output: 'This backend runs no commands.', exitCode: 1, truncated: false };
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

  /** A virtual path (`/`-rooted) as the host path under the workspace root (lexically; never above it). */
  private host(virtualPath: string): string {
    if (typeof virtualPath !== 'string') throw new Error('The path must be text.');
    return path.join(this.ws.root, posix.resolve('/', virtualPath));
  }

  private resolve(virtualPath: string, mode: 'read' | 'write'): Promise<string> {
    return this.ws.resolve(this.host(virtualPath), mode);
  }

  /** A host path inside the workspace as the backend's path. */
  private virtual(abs: string): string {
    const rel = path.relative(this.ws.root, abs).split(path.sep).join('/');
    return rel ? `/${rel}` : '/';
  }

  /** A file's content: text, or bytes for images, PDFs and files with NUL bytes; read recorded. */
  private async load(
    filePath: string,
  ): Promise<{ error: string } | { text: string; bytes?: Uint8Array; mimeType: string; mtime: string }> {
    const abs = await this.resolve(filePath, 'read');
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

  /** Files under `dir` matching `pattern`, each checked by real path (a symlink out is left out). */
  private async walk(
    dir: string,
    pattern: string,
  ): Promise<{ error: string } | { paths: string[]; truncated: boolean }> {
    const base = await this.resolve(dir, 'read');
    const st = await fs.stat(base).catch(() => undefined);
    if (!st) return { paths: [], truncated: false };
    if (st.isFile()) return { paths: [base], truncated: false };
    if (pattern.split('/').includes('..')) return { error: `The pattern ${pattern} must not contain "..".` };
    const found = await fastGlob()(pattern, {
      cwd: base,
      absolute: true,
      dot: true,
      onlyFiles: true,
      followSymbolicLinks: false,
      ignore: SKIPPED_DIRS,
    });
    const guard = this.ws.guard();
    const inside = found.filter((p) => !isAtomicTempName(path.basename(p)) && guard.inside(p)).sort();
    return { paths: inside.slice(0, MAX_BACKEND_ENTRIES), truncated: inside.length > MAX_BACKEND_ENTRIES };
  }

  /** Runs `fn`; any throw (sandbox refusal, stale file, I/O error) becomes an `error` sentence. */
  private async guard<T extends { error?: string }>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      return { error: message.includes(' ') ? message : `${what} failed: ${message}` } as T;
    }
  }
}

/** A failed upload or download as the protocol's error codes. */
function operationError(err: unknown): FileOperationError {
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
