/**
 * Lifting: any backend `initCtx.backend` may hold (deepagents' V2, or the deprecated V1 with plain
 * returns: `lsInfo`, `grepRaw`, `globInfo`, a `read` that answers a string, a `readRaw` that answers
 * the FileData itself) -> the V2 shape, method by method, the way deepagents' `adaptBackendProtocol`
 * reads them. Also `isSandboxBackend`: the same test deepagents makes (an `execute` function and a
 * non-empty string `id`).
 * Must not check results for sense (guard.ts does) nor know any particular backend.
 */
import type {
  AnyBackendProtocol,
  BackendProtocolV1,
  BackendProtocolV2,
  ExecuteResponse,
  FileInfo,
  GrepMatch,
  MaybePromise,
  SandboxBackendProtocolV2,
} from './protocol.js';

/** Whether `backend` runs commands: an `execute` function and a non-empty `id`, as deepagents checks. */
export function isSandboxBackend(backend: unknown): backend is SandboxBackendProtocolV2 {
  if (backend === null || typeof backend !== 'object') return false;
  const b = backend as { execute?: unknown; id?: unknown };
  return typeof b.execute === 'function' && typeof b.id === 'string' && b.id !== '';
}

/** Loose view of a backend of either version: each method may be missing. */
type Either = Partial<BackendProtocolV2> & Partial<Omit<BackendProtocolV1, 'read' | 'readRaw'>>;

/** `backend` as a V2 backend (a V2 backend's answers pass through unchanged; V1 answers are wrapped). */
export function liftBackend(
  backend: AnyBackendProtocol,
): BackendProtocolV2 & { execute?: (command: string) => MaybePromise<ExecuteResponse>; id?: string } {
  const b = backend as Either;
  const call = <K extends keyof Either>(name: K): ((...args: unknown[]) => unknown) => {
    const fn = b[name];
    if (typeof fn !== 'function') throw new TypeError(`the backend has no ${String(name)} method`);
    return (...args: unknown[]) => (fn as (...a: unknown[]) => unknown).apply(backend, args);
  };
  const lifted: BackendProtocolV2 & { execute?: (command: string) => MaybePromise<ExecuteResponse>; id?: string } = {
    async ls(path) {
      const r = await (typeof b.ls === 'function' ? call('ls')(path) : call('lsInfo')(path));
      return Array.isArray(r) ? { files: r as FileInfo[] } : (r as never);
    },
    async read(filePath, offset, limit) {
      const r = await call('read')(filePath, offset, limit);
      return typeof r === 'string' ? { content: r } : (r as never);
    },
    async readRaw(filePath) {
      const r = await call('readRaw')(filePath);
      if (r !== null && typeof r === 'object' && ('data' in r || 'error' in r)) return r as never;
      return { data: r as never };
    },
    write: (filePath, content) => call('write')(filePath, content) as never,
    edit: (filePath, oldString, newString, replaceAll) =>
      call('edit')(filePath, oldString, newString, replaceAll) as never,
    async grep(pattern, path, glob, maxCount) {
      const r = await (typeof b.grep === 'function'
        ? call('grep')(pattern, path, glob, maxCount)
        : call('grepRaw')(pattern, path, glob));
      if (typeof r === 'string') return { error: r };
      if (Array.isArray(r)) {
        const matches = r as GrepMatch[];
        return maxCount != null && matches.length > maxCount
          ? { matches: matches.slice(0, maxCount), truncated: true }
          : { matches };
      }
      return r as never;
    },
    async glob(pattern, path) {
      const r = await (typeof b.glob === 'function' ? call('glob')(pattern, path) : call('globInfo')(pattern, path));
      return Array.isArray(r) ? { files: r as FileInfo[] } : (r as never);
    },
  };
  if (typeof b.delete === 'function') lifted.delete = (p) => call('delete')(p) as never;
  if (typeof b.uploadFiles === 'function') lifted.uploadFiles = (f) => call('uploadFiles')(f) as never;
  if (typeof b.downloadFiles === 'function') lifted.downloadFiles = (p) => call('downloadFiles')(p) as never;
  if (isSandboxBackend(backend)) {
    lifted.execute = (command) => backend.execute(command);
    lifted.id = backend.id;
  }
  return lifted;
}
