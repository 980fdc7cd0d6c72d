/**
 * The guarded backend: every call our tools make to a backend goes through here. A method that
 * throws, never answers (past the call's abort or timeout), answers an `error`, answers a malformed
 * or oversized result, or names a path outside what was asked, becomes one `BackendError` whose
 * sentence names the backend, the operation and its path, and what to do next. Results come back
 * checked and typed.
 * Must not format anything for the model beyond those sentences, nor decide policy.
 */
import posix from 'node:path/posix';
import type { AnyBackendProtocol, ExecuteResponse, FileInfo, GrepMatch } from './protocol.js';
import { liftBackend, isSandboxBackend } from './lift.js';
import { describeThrown } from '../text/describe.js';

/** Largest file (UTF-16 characters of text, or bytes) the tools take from a backend in one answer. */
export const MAX_BACKEND_FILE_CHARS = 50 * 1024 * 1024;
/** Most entries one listing, glob or grep answer may hold; beyond it the answer is refused. */
export const MAX_BACKEND_ENTRIES = 100_000;
/** Most characters of one `execute` answer kept (the bash tool then caps what the model sees). */
export const MAX_BACKEND_OUTPUT_CHARS = 10 * 1024 * 1024;

/** A backend call that failed, said as a sentence for the model. */
export class BackendError extends Error {
  constructor(
    message: string,
    /** `threw`: the method threw; `refused`: it answered an error; the rest: the answer was unusable. */
    readonly kind:
      'threw' | 'refused' | 'stopped' | 'malformed' | 'too-large' | 'outside' | 'missing-method' = 'malformed',
  ) {
    super(message);
    this.name = 'BackendError';
  }
}

/** A stored file as the tools see it: text, or bytes for binary content. */
export interface BackendFile {
  text?: string;
  bytes?: Uint8Array;
  mimeType?: string;
  modifiedAt?: string;
}

type Lifted = ReturnType<typeof liftBackend>;

/** A backend behind checks; one per init context (the tools share it). */
export class GuardedBackend {
  readonly name: string;
  private readonly lifted: Lifted;

  constructor(readonly raw: AnyBackendProtocol) {
    this.lifted = liftBackend(raw);
    this.name = backendName(raw);
  }

  /** Whether the backend runs commands (`execute` and a non-empty `id`). */
  get canExecute(): boolean {
    return isSandboxBackend(this.raw);
  }

  /** Whether the backend deletes (the protocol makes `delete` optional). */
  get canDelete(): boolean {
    return typeof this.lifted.delete === 'function';
  }

  async ls(dir: string, signal: AbortSignal): Promise<FileInfo[]> {
    return this.checked('ls', dir, async () => {
      const r = await this.invoke('ls', dir, signal, () => this.lifted.ls(dir));
      // A listing names what is under the directory, never the directory itself (a file's own path
      // answered for `ls` of it would make the file look like a directory holding itself).
      return this.infos('ls', dir, r.files, dir, true);
    });
  }

  /** The whole file; undefined when the backend answered an error (the caller tells missing from broken). */
  async readRaw(file: string, signal: AbortSignal): Promise<{ file?: BackendFile; error?: string }> {
    return this.checked('readRaw', file, async () => {
      const r = await this.invoke('readRaw', file, signal, () => this.lifted.readRaw(file), true);
      if (typeof r.error === 'string' && r.error) return { error: r.error };
      const data = r.data as Record<string, unknown> | undefined;
      if (!data || typeof data !== 'object') throw this.malformed('readRaw', file, 'it holds no data');
      const content = data.content;
      const out: BackendFile = {};
      if (typeof data.mimeType === 'string') out.mimeType = data.mimeType;
      if (typeof data.modified_at === 'string') out.modifiedAt = data.modified_at;
      if (typeof content === 'string') out.text = content;
      else if (content instanceof Uint8Array) out.bytes = content;
      else if (Array.isArray(content) && content.every((l) => typeof l === 'string')) out.text = content.join('\n');
      else throw this.malformed('readRaw', file, 'its content is neither text, bytes nor lines');
      const size = out.text?.length ?? out.bytes!.length;
      if (size > MAX_BACKEND_FILE_CHARS)
        throw new BackendError(
          `The backend ${this.name} answered readRaw of ${file} with ${size} characters, above the ${MAX_BACKEND_FILE_CHARS}-character limit the tools take from a backend; nothing was changed. Work on a smaller file.`,
          'too-large',
        );
      return { file: out };
    });
  }

  async write(file: string, content: string, signal: AbortSignal): Promise<void> {
    return this.checked('write', file, async () => {
      const r = await this.invoke('write', file, signal, () => this.lifted.write(file, content));
      this.samePath('write', file, r.path);
    });
  }

  /** Replaces `oldString` (which must occur once, or every time with `replaceAll`); the count replaced. */
  async edit(file: string, oldString: string, newString: string, signal: AbortSignal): Promise<number> {
    return this.checked('edit', file, async () => {
      const r = await this.invoke('edit', file, signal, () => this.lifted.edit(file, oldString, newString, false));
      this.samePath('edit', file, r.path);
      if (r.occurrences !== undefined && typeof r.occurrences !== 'number')
        throw this.malformed('edit', file, 'its occurrences is not a number');
      return typeof r.occurrences === 'number' ? r.occurrences : 1;
    });
  }

  async delete(file: string, signal: AbortSignal): Promise<void> {
    return this.checked('delete', file, async () => {
      const lifted = this.lifted;
      if (!lifted.delete)
        throw new BackendError(`The backend ${this.name} cannot delete (it has no delete method).`, 'missing-method');
      const r = await this.invoke('delete', file, signal, () => lifted.delete!(file));
      this.samePath('delete', file, r.path);
    });
  }

  async glob(pattern: string, dir: string, signal: AbortSignal): Promise<{ files: FileInfo[]; truncated: boolean }> {
    return this.checked('glob', dir, async () => {
      const r = await this.invoke('glob', dir, signal, () => this.lifted.glob(pattern, dir));
      return { files: this.infos('glob', dir, r.files, dir), truncated: r.truncated === true };
    });
  }

  /** A literal search (the protocol's grep is not a regex). */
  async grep(
    literal: string,
    dir: string,
    glob: string | null,
    maxCount: number,
    signal: AbortSignal,
  ): Promise<{ matches: GrepMatch[]; truncated: boolean }> {
    return this.checked('grep', dir, async () => {
      const r = await this.invoke('grep', dir, signal, () => this.lifted.grep(literal, dir, glob, maxCount));
      const matches = r.matches;
      if (!Array.isArray(matches)) throw this.malformed('grep', dir, 'it holds no matches list');
      if (matches.length > MAX_BACKEND_ENTRIES) throw this.tooMany('grep', dir, matches.length);
      const base = baseOf(dir);
      for (const m of matches as unknown[]) {
        const g = m as Partial<GrepMatch> | null;
        if (!g || typeof g.path !== 'string' || typeof g.line !== 'number' || typeof g.text !== 'string')
          throw this.malformed('grep', dir, 'a match lacks a string path, a numeric line or a string text');
        this.inside('grep', dir, g.path, base);
      }
      return { matches: matches as GrepMatch[], truncated: r.truncated === true };
    });
  }

  /** Runs `command` on the backend (only when `canExecute`). */
  async execute(command: string, signal: AbortSignal): Promise<ExecuteResponse> {
    return this.checked('execute', 'the command', async () => {
      const exec = this.lifted.execute;
      if (!exec)
        throw new BackendError(
          `The backend ${this.name} cannot run commands (it has no execute method).`,
          'missing-method',
        );
      const r = await this.invoke('execute', 'the command', signal, () => exec(command), true);
      if (typeof r.output !== 'string') throw this.malformed('execute', 'the command', 'its output is not text');
      if (r.exitCode !== null && typeof r.exitCode !== 'number')
        throw this.malformed('execute', 'the command', 'its exitCode is neither a number nor null');
      const cut = r.output.length > MAX_BACKEND_OUTPUT_CHARS;
      return {
        output: cut ? r.output.slice(0, MAX_BACKEND_OUTPUT_CHARS) : r.output,
        exitCode: r.exitCode,
        truncated: r.truncated === true || cut,
      };
    });
  }

  /**
   * Runs one method's call and checks: anything thrown while the answer is read (a getter or a proxy
   * trap of the backend's own object) becomes a malformed-answer sentence, described safely.
   */
  private async checked<T>(op: string, target: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (isBackendError(err)) throw err;
      throw this.malformed(op, target, `reading it threw: ${errorText(err)}`);
    }
  }

  /**
   * Calls `fn` with every failure turned into a sentence: a throw, no answer before `signal`
   * aborts, a non-object answer, or (unless `keepError`) an answer with an `error`.
   */
  private async invoke(
    op: string,
    target: string,
    signal: AbortSignal,
    fn: () => unknown,
    keepError = false,
  ): Promise<Record<string, unknown>> {
    if (signal.aborted) throw this.stopped(op, target);
    let answer: unknown;
    try {
      answer = await raceAbort(Promise.resolve().then(fn), signal);
    } catch (err) {
      if (err === ABORTED) throw this.stopped(op, target);
      throw new BackendError(
        `The backend ${this.name} failed at ${op} of ${target}: ${errorText(err)}. Nothing more was done; check the backend, or retry.`,
        'threw',
      );
    }
    if (answer === null || typeof answer !== 'object' || Array.isArray(answer))
      throw this.malformed(
        op,
        target,
        `it is ${answer === null ? 'null' : Array.isArray(answer) ? 'a list' : typeof answer}, not a result object`,
      );
    const r = answer as Record<string, unknown>;
    if (!keepError && r.error !== undefined && r.error !== null && r.error !== '') {
      throw new BackendError(
        `The backend ${this.name} refused ${op} of ${target}: ${oneLine(describeThrown(r.error))}`,
        'refused',
      );
    }
    return r;
  }

  private infos(op: string, target: string, files: unknown, dir: string, under = false): FileInfo[] {
    if (!Array.isArray(files)) throw this.malformed(op, target, 'it holds no files list');
    if (files.length > MAX_BACKEND_ENTRIES) throw this.tooMany(op, target, files.length);
    const base = baseOf(dir);
    for (const f of files as unknown[]) {
      const info = f as Partial<FileInfo> | null;
      if (!info || typeof info.path !== 'string') throw this.malformed(op, target, 'an entry lacks a string path');
      this.inside(op, dir, info.path, base, under);
    }
    return files as FileInfo[];
  }

  /**
   * A returned path must lie inside the directory asked about (a backend must not answer for
   * elsewhere); with `under`, strictly below it. `base` is `baseOf(dir)`, computed once per answer.
   */
  private inside(op: string, dir: string, returned: string, base = baseOf(dir), under = false): void {
    const rooted = returned.startsWith('/') ? returned : `/${returned}`;
    // Already normal (no empty, `.` or `..` segment, no trailing slash): normalising changes nothing.
    const p = (NOT_NORMAL.test(rooted) ? posix.normalize(rooted) : rooted).replace(/(.)\/$/, '$1');
    const self = p === base.slice(0, -1) || p === base;
    if (self ? !under : p.startsWith(base)) {
      if (!p.split('/').includes('..')) return;
    }
    const where = self ? 'the directory itself, not an entry under it' : 'which is outside what was asked';
    throw new BackendError(
      `The backend ${this.name} answered ${op} of ${dir} with the path ${JSON.stringify(returned)}, ${where}; the answer was discarded. Check the backend's path handling.`,
      'outside',
    );
  }

  private samePath(op: string, file: string, answered: unknown): void {
    if (answered === undefined || answered === null || answered === file) return;
    if (typeof answered !== 'string') throw this.malformed(op, file, 'its path is not text');
    const a = posix.normalize(`/${answered}`);
    const f = posix.normalize(`/${file}`);
    // deepagents' CompositeBackend answers the routed backend's path, its route prefix stripped.
    if (a !== f && !(a !== '/' && f.endsWith(a)))
      throw new BackendError(
        `The backend ${this.name} answered ${op} of ${file} for another path, ${JSON.stringify(answered)}; check that file, and the backend's path handling.`,
        'outside',
      );
  }

  private malformed(op: string, target: string, why: string): BackendError {
    return new BackendError(
      `The backend ${this.name} answered ${op} of ${target} with a malformed result (${why}); it was discarded. Check the backend's implementation of ${op}.`,
    );
  }

  private tooMany(op: string, target: string, n: number): BackendError {
    return new BackendError(
      `The backend ${this.name} answered ${op} of ${target} with ${n} entries, above the limit of ${MAX_BACKEND_ENTRIES}; the answer was discarded. Narrow the path or pattern.`,
      'too-large',
    );
  }

  private stopped(op: string, target: string): BackendError {
    return new BackendError(
      `The backend ${this.name} did not answer ${op} of ${target} before the call was stopped (timeout or abort). Retry later, or check the backend.`,
      'stopped',
    );
  }
}

/** A path segment that `posix.normalize` would change: empty (`//`, trailing `/`), `.` or `..`. */
const NOT_NORMAL = /\/(\.{1,2})?(\/|$)/;

/** `dir` normalised with one trailing slash: what a path inside it starts with. */
function baseOf(dir: string): string {
  return dir === '/' ? '/' : `${posix.normalize(dir).replace(/\/+$/, '')}/`;
}

/**
 * The race's rejection when the signal won: compared by identity, since `instanceof` on what a
 * backend threw may itself throw (a proxy's trap).
 */
const ABORTED: unique symbol = Symbol('aborted');

/**
 * `p`, or a rejection with ABORTED as soon as `signal` aborts. What `p` rejects with is passed on
 * untouched: turning a foreign value into text here (`String(e)`) could throw inside the handler,
 * leaving an unhandled rejection and this promise never settled.
 */
function raceAbort<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- a sentinel, never shown
    const onAbort = () => reject(ABORTED);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- described by the caller (describeThrown)
        reject(e);
      },
    );
  });
}

/** Whether `err` is ours (`instanceof` on a foreign proxy may throw: then it is not). */
function isBackendError(err: unknown): err is BackendError {
  try {
    return err instanceof BackendError;
  } catch {
    return false;
  }
}

/** How the model reads a backend's name: its class, and its id when it has one. */
function backendName(b: AnyBackendProtocol): string {
  // Read defensively: a getter of a hostile backend may throw, and naming it must not.
  const read = (f: () => unknown): unknown => {
    try {
      return f();
    } catch {
      return undefined;
    }
  };
  const ctor = read(() => (b as { constructor?: { name?: unknown } }).constructor?.name);
  const cls = typeof ctor === 'string' && ctor && ctor !== 'Object' ? ctor : 'backend';
  const id = read(() => (b as { id?: unknown }).id);
  return typeof id === 'string' && id ? `${cls} (${id})` : cls;
}

/** What a backend threw, as a clause: described safely (any value, even one whose `String()` throws). */
function errorText(err: unknown): string {
  return oneLine(describeThrown(err)).replace(/\.$/, '') || 'no reason given';
}

/** One line, bounded: a backend's error must not flood the model or carry a stack. */
function oneLine(s: string): string {
  const first = s.split('\n').find((l) => l.trim()) ?? '';
  return first.length > 500 ? `${first.slice(0, 500)}...` : first;
}
