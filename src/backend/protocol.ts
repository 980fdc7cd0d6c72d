/**
 * The backend protocol: where files live and commands run, as deepagents defines it
 * (`BackendProtocolV2`, `SandboxBackendProtocolV2`, and the deprecated V1 shapes `lift.ts` lifts).
 * Structural types only, spelled to match deepagents' own method names, argument orders and result
 * shapes exactly (a type-level test checks them against the installed `deepagents`), so any
 * deepagents backend is accepted without importing deepagents at run time.
 * Must not hold code: adapters and implementations live one per file beside it.
 */

/** A value or a promise of it: backends may answer synchronously (StateBackend) or not. */
export type MaybePromise<T> = T | Promise<T>;

/** One entry of a listing or a glob. Only `path` is required; directories end in `/`. */
export interface FileInfo {
  path: string;
  is_dir?: boolean;
  /** Size in bytes (approximate). */
  size?: number;
  /** ISO 8601 time of the last change. */
  modified_at?: string;
}

/** One line a grep found (1-based line). */
export interface GrepMatch {
  path: string;
  line: number;
  text: string;
}

/** What `grep` answers: matches, or an error; `truncated` when a match cap stopped it early. */
export interface GrepResult {
  error?: string;
  matches?: GrepMatch[];
  truncated?: boolean;
}

/** Legacy stored file: lines. */
export interface FileDataV1 {
  content: string[];
  created_at: string;
  modified_at: string;
}

/** Stored file: text, or bytes for binary files, with its MIME type. */
export interface FileDataV2 {
  content: string | Uint8Array;
  mimeType: string;
  created_at: string;
  modified_at: string;
}

export type FileData = FileDataV1 | FileDataV2;

/** What `read` answers: a window of text lines (0-based offset), or binary content. */
export interface ReadResult {
  error?: string;
  content?: string | Uint8Array;
  mimeType?: string;
  totalLines?: number;
  startLine?: number;
  endLine?: number;
  nextOffset?: number;
}

/** What `readRaw` answers: the whole stored file. */
export interface ReadRawResult {
  error?: string;
  data?: FileData;
}

export interface LsResult {
  error?: string;
  files?: FileInfo[];
}

export interface GlobResult {
  error?: string;
  files?: FileInfo[];
  truncated?: boolean;
}

export interface WriteResult {
  error?: string;
  path?: string;
  /** Deprecated in deepagents: state updates of legacy checkpoint backends. */
  filesUpdate?: Record<string, FileData> | null;
  metadata?: Record<string, unknown>;
}

export interface EditResult {
  error?: string;
  path?: string;
  filesUpdate?: Record<string, FileData> | null;
  occurrences?: number;
  metadata?: Record<string, unknown>;
}

export interface DeleteResult {
  error?: string;
  path?: string;
  filesUpdate?: Record<string, null> | null;
  metadata?: Record<string, unknown>;
}

/** What `execute` answers: stdout and stderr together, the exit code, whether the backend cut it. */
export interface ExecuteResponse {
  output: string;
  exitCode: number | null;
  truncated: boolean;
}

export type FileOperationError = 'file_not_found' | 'permission_denied' | 'is_directory' | 'invalid_path';

export interface FileDownloadResponse {
  path: string;
  content: Uint8Array | null;
  error: FileOperationError | null;
}

export interface FileUploadResponse {
  path: string;
  error: FileOperationError | null;
}

/**
 * deepagents' `BackendProtocolV2`: every method answers a result object with an `error` field
 * instead of throwing (a backend that throws anyway is caught by `guard.ts`). `grep` is literal.
 */
export interface BackendProtocolV2 {
  ls(path: string): MaybePromise<LsResult>;
  /** `offset` is 0-based (default 0), `limit` defaults to 500 lines. */
  read(filePath: string, offset?: number, limit?: number): MaybePromise<ReadResult>;
  readRaw(filePath: string): MaybePromise<ReadRawResult>;
  write(filePath: string, content: string): MaybePromise<WriteResult>;
  edit(filePath: string, oldString: string, newString: string, replaceAll?: boolean): MaybePromise<EditResult>;
  /** A literal (not regex) search. */
  grep(pattern: string, path?: string | null, glob?: string | null, maxCount?: number | null): MaybePromise<GrepResult>;
  glob(pattern: string, path?: string): MaybePromise<GlobResult>;
  delete?(filePath: string): MaybePromise<DeleteResult>;
  uploadFiles?(files: Array<[string, Uint8Array]>): MaybePromise<FileUploadResponse[]>;
  downloadFiles?(paths: string[]): MaybePromise<FileDownloadResponse[]>;
}

/** deepagents' `SandboxBackendProtocolV2`: a backend that also runs commands. */
export interface SandboxBackendProtocolV2 extends BackendProtocolV2 {
  execute(command: string): MaybePromise<ExecuteResponse>;
  readonly id: string;
}

/** deepagents' deprecated `BackendProtocolV1` (plain returns), accepted and lifted by `lift.ts`. */
export interface BackendProtocolV1 {
  lsInfo(path: string): MaybePromise<FileInfo[]>;
  read(filePath: string, offset?: number, limit?: number): MaybePromise<string>;
  readRaw(filePath: string): MaybePromise<FileData>;
  grepRaw(pattern: string, path?: string | null, glob?: string | null): MaybePromise<GrepMatch[] | string>;
  globInfo(pattern: string, path?: string): MaybePromise<FileInfo[]>;
  write(filePath: string, content: string): MaybePromise<WriteResult>;
  edit(filePath: string, oldString: string, newString: string, replaceAll?: boolean): MaybePromise<EditResult>;
  delete?(filePath: string): MaybePromise<DeleteResult>;
  uploadFiles?(files: Array<[string, Uint8Array]>): MaybePromise<FileUploadResponse[]>;
  downloadFiles?(paths: string[]): MaybePromise<FileDownloadResponse[]>;
}

/** deepagents' deprecated `SandboxBackendProtocolV1`. */
export interface SandboxBackendProtocolV1 extends BackendProtocolV1 {
  execute(command: string): MaybePromise<ExecuteResponse>;
  readonly id: string;
}

/** Any backend `initCtx.backend` accepts: V2 as is, V1 lifted. */
export type AnyBackendProtocol = BackendProtocolV2 | BackendProtocolV1;
