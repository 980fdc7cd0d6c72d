/**
 * Which language server serves a file, and the client's limits: the built-in servers (TypeScript and
 * JavaScript through typescript-language-server, Python through pyright-langserver), the ones a user
 * adds with `initCtx.lsp = { servers: { ... } }`, and `initCtx.lsp = false` to switch the feature off.
 * Light on purpose (node:path only): write and edit load it to decide, per call and without awaiting,
 * whether a file is served at all.
 * Must not start processes nor load the LSP library (server.ts does), nor look for executables (locate.ts).
 */
import path from 'node:path';

/** Longest an edit waits for the diagnostics of its change (the server's start included) before it answers without them. */
export const LSP_DIAGNOSTICS_WAIT_MS = 5_000;
/** Diagnostics listed in an edit's answer or by `lsp diagnostics` (errors first); the rest are counted. */
export const LSP_MAX_DIAGNOSTICS = 20;
/** Results the `lsp` tool lists (references, symbols, definitions); the rest are counted. */
export const LSP_MAX_RESULTS = 50;
/** Longest a server may take to answer `initialize`; past it the server is stopped and said to hang. */
export const LSP_START_TIMEOUT_MS = 30_000;
/** Longest the `lsp` tool waits for one answer of a started server. */
export const LSP_REQUEST_TIMEOUT_MS = 15_000;
/** Largest file (UTF-8 bytes) sent to a server; a larger one gets a sentence instead of diagnostics. */
export const LSP_MAX_FILE_BYTES = 4 * 1024 * 1024;
/** Largest single message a server may send; past it the server is stopped (it floods). */
export const LSP_MAX_MESSAGE_BYTES = 32 * 1024 * 1024;
/** Diagnostics kept per file from one server answer; more are dropped (a flooding server). */
export const LSP_MAX_KEPT_DIAGNOSTICS = 1_000;
/** Characters of one diagnostic's message kept; longer ones are cut with a marker. */
export const LSP_MAX_MESSAGE_CHARS = 500;
/** Documents kept open per server; the least recently used one is closed past it. */
export const LSP_MAX_OPEN_DOCUMENTS = 200;
/** Characters of a hover's text the lsp tool shows; the rest is cut with a marker. */
export const LSP_MAX_HOVER_CHARS = 4_000;
/** How long a stopping server gets to exit after `shutdown`/`exit` before its process group is killed. */
export const LSP_STOP_GRACE_MS = 1_000;

/** A language server the client may start (`initCtx.lsp.servers[id]`). */
export interface LspServerConfig {
  /**
   * The executable: an absolute path, or a name looked up in the workspace's `node_modules/.bin`, then
   * on `PATH`.
   */
  command: string;
  /** Its arguments (e.g. `['--stdio']`: the client talks LSP over the process's stdin and stdout). */
  args?: string[];
  /** The file extensions it serves (`'.rs'` or `'rs'`); a user's server wins over a built-in for the same extension. */
  extensions: string[];
  /**
   * Files that mark a project root (`Cargo.toml`): a file's root is the nearest directory above it
   * holding one, within the workspace; else the workspace root. One server runs per root.
   */
  rootMarkers?: string[];
  /** Sent as `initializationOptions` in `initialize`. */
  initializationOptions?: unknown;
  /** How answers name it ("the Rust server"); default the id. */
  name?: string;
  /** The LSP `languageId` per extension (without the dot); default the extension itself. */
  languageIds?: Record<string, string>;
  /** Environment variables the server gets besides PATH, HOME, LANG and TMPDIR (it gets no others of the host). */
  env?: Record<string, string>;
}

/** `initCtx.lsp`: the language servers the tools may use. */
export interface LspOptions {
  /** More servers, by id; `false` for a built-in id (`typescript`, `python`) switches that one off. */
  servers?: Record<string, LspServerConfig | false>;
  /** Longest an edit waits for its diagnostics (default LSP_DIAGNOSTICS_WAIT_MS). */
  diagnosticsWaitMs?: number;
}

declare module '../authoring/tool.js' {
  namespace Tool {
    interface InitContext {
      /**
       * Language servers for diagnostics after write and edit and for the `lsp` tool: more servers or
       * built-ins switched off (`{ servers: { ... } }`), or `false` to switch the feature off. See docs/lsp.md.
       */
      lsp?: LspOptions | false;
    }
  }
}

/** How the client asks a server for a file's diagnostics. */
export type DiagnosticsMode = 'push' | 'tsserver';

/** A server config with its id and what the client needs to know about it. */
export interface ServerSpec extends Required<Pick<LspServerConfig, 'command' | 'args' | 'rootMarkers'>> {
  id: string;
  name: string;
  extensions: ReadonlySet<string>;
  languageIds: Readonly<Record<string, string>>;
  initializationOptions?: unknown;
  env: Readonly<Record<string, string>>;
  /** A built-in: found also in this package's own dependencies. */
  builtin: boolean;
  /**
   * `tsserver`: typescript-language-server, asked through its `typescript.tsserverRequest` command
   * (an answer for exactly the text sent, clean files included); `push`: publishDiagnostics (or the
   * LSP 3.17 pull when the server offers it).
   */
  diagnostics: DiagnosticsMode;
}

const TS_LANGUAGE_IDS: Record<string, string> = {
  ts: 'typescript',
  mts: 'typescript',
  cts: 'typescript',
  tsx: 'typescriptreact',
  js: 'javascript',
  mjs: 'javascript',
  cjs: 'javascript',
  jsx: 'javascriptreact',
};

/** The servers known without configuration. */
export const BUILTIN_SERVERS: Readonly<Record<string, LspServerConfig>> = {
  typescript: {
    name: 'TypeScript',
    command: 'typescript-language-server',
    args: ['--stdio'],
    extensions: Object.keys(TS_LANGUAGE_IDS),
    rootMarkers: ['tsconfig.json', 'jsconfig.json', 'package.json'],
    languageIds: TS_LANGUAGE_IDS,
  },
  python: {
    name: 'Python (pyright)',
    command: 'pyright-langserver',
    args: ['--stdio'],
    extensions: ['py', 'pyi'],
    rootMarkers: ['pyrightconfig.json', 'pyproject.toml', 'setup.py', 'setup.cfg', 'requirements.txt'],
    languageIds: { py: 'python', pyi: 'python' },
  },
};

/** The servers one init context may use, by extension (undefined when `initCtx.lsp === false`). */
export class ServerTable {
  private readonly byExtension = new Map<string, ServerSpec>();
  readonly specs: readonly ServerSpec[];
  /** Longest an edit waits for its diagnostics. */
  readonly waitMs: number;

  constructor(options: LspOptions = {}) {
    const specs: ServerSpec[] = [];
    const user = options.servers ?? {};
    for (const [id, config] of Object.entries(user)) if (config) specs.push(specOf(id, config, false));
    for (const [id, config] of Object.entries(BUILTIN_SERVERS)) {
      if (id in user) continue;
      specs.push(specOf(id, config, true));
    }
    // User servers first: theirs win an extension both serve.
    for (const spec of specs)
      for (const ext of spec.extensions) if (!this.byExtension.has(ext)) this.byExtension.set(ext, spec);
    this.specs = specs;
    const wait = options.diagnosticsWaitMs;
    this.waitMs = typeof wait === 'number' && Number.isFinite(wait) && wait >= 0 ? wait : LSP_DIAGNOSTICS_WAIT_MS;
  }

  /** The server for `file`, by its extension; undefined when none serves it. */
  serverFor(file: string): ServerSpec | undefined {
    const ext = path.extname(file).slice(1).toLowerCase();
    return ext ? this.byExtension.get(ext) : undefined;
  }
}

function specOf(id: string, config: LspServerConfig, builtin: boolean): ServerSpec {
  if (typeof config.command !== 'string' || config.command === '') {
    throw new Error(`initCtx.lsp.servers.${id}.command must be the server's executable (a name or an absolute path).`);
  }
  if (!Array.isArray(config.extensions) || config.extensions.length === 0) {
    throw new Error(`initCtx.lsp.servers.${id}.extensions must list the file extensions it serves, e.g. ['.rs'].`);
  }
  const extensions = new Set(config.extensions.map((e) => e.replace(/^\./, '').toLowerCase()));
  const languageIds: Record<string, string> = {};
  for (const ext of extensions) languageIds[ext] = config.languageIds?.[ext] ?? ext;
  return {
    id,
    name: config.name ?? id,
    command: config.command,
    args: config.args ?? [],
    extensions,
    rootMarkers: config.rootMarkers ?? [],
    languageIds,
    initializationOptions: config.initializationOptions,
    env: config.env ?? {},
    builtin,
    diagnostics: builtin && id === 'typescript' ? 'tsserver' : 'push',
  };
}

const tables = new WeakMap<object, ServerTable | null>();

/** The server table of an init context (made once per context), or undefined when `lsp` is `false`. */
export function serverTableOf(initCtx: { lsp?: LspOptions | false } | undefined): ServerTable | undefined {
  const options = initCtx?.lsp;
  if (options === false) return undefined;
  if (!options) return (defaultTable ??= new ServerTable());
  let table = tables.get(options);
  if (table === undefined) tables.set(options, (table = new ServerTable(options)));
  return table ?? undefined;
}
let defaultTable: ServerTable | undefined;
