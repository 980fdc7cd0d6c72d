/**
 * One language server process and the client's side of its LSP connection (vscode-jsonrpc's framing
 * and messages, not ours): start and `initialize` within LSP_START_TIMEOUT_MS, the open documents
 * and their versions (didOpen / didChange with the whole text), a file's diagnostics for exactly the
 * text sent, requests with a deadline and cancellation, and a stop that leaves no process behind
 * (`shutdown`, `exit`, then the process group killed). Whatever the server does wrong (exits, hangs,
 * floods, writes what is not LSP) ends it with one sentence, `deadReason`, and never throws into a tool.
 * Must not choose servers or roots (manager.ts) nor word results for a model (diagnostics.ts, the tool).
 * Over 400 lines: one server's life (start, documents, requests, every way it can fail, stop) shares
 * one process, one connection and one dead-or-alive state; split, each part would re-check them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  CancellationTokenSource,
  createProtocolConnection,
  StreamMessageReader,
  StreamMessageWriter,
  type ProtocolConnection,
  type DataCallback,
} from 'vscode-languageserver-protocol/node';
import {
  LSP_MAX_MESSAGE_BYTES,
  LSP_MAX_OPEN_DOCUMENTS,
  LSP_START_TIMEOUT_MS,
  LSP_STOP_GRACE_MS,
  type ServerSpec,
} from './config.js';
import { diagsOf, fromLsp, fromTsserver, type Diag } from './diagnostics.js';
import type { Launch } from './locate.js';

/** Characters of a server's stderr kept to explain why it ended. */
const STDERR_TAIL_CHARS = 1_000;
/** Variables of the host a server gets (it gets no API keys or tokens of the host). */
const PASSED_ENV = [
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'LANG',
  'LC_ALL',
  'LC_CTYPE',
  'TMPDIR',
  'TEMP',
  'TMP',
  'SYSTEMROOT',
];

/** An open document: its version and the text the server has. */
interface Doc {
  version: number;
  text: string;
}

/** What a server published for a file last. */
interface Published {
  version?: number;
  /** Publications for this file so far (to know one came after a change, when the server sends no versions). */
  seq: number;
  diags: Diag[];
}

interface PushWaiter {
  uri: string;
  version: number;
  afterSeq: number;
  resolve(diags: Diag[] | undefined): void;
}

/** Requests a server may send that are answered with null (accepted; nothing to do); others get "method not found". */
const ACCEPTED_REQUESTS = [
  'client/registerCapability',
  'client/unregisterCapability',
  'window/workDoneProgress/create',
  'window/showMessageRequest',
  'workspace/semanticTokens/refresh',
  'workspace/diagnostic/refresh',
  'workspace/inlayHint/refresh',
  'workspace/codeLens/refresh',
];

/** Every started server process of this process, killed at exit whichever registry started it. */
const live = new Set<LspServer>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const s of live) s.killNow();
  });
}

/** The file URI the server knows `abs` by. */
export function uriOf(abs: string): string {
  return pathToFileURL(abs).href;
}

/** A promise that settles with `p`, or rejects with `timeoutError()` after `ms`, or with `abortError` when `signal` fires. */
export function within<T>(p: Promise<T>, ms: number, timeoutError: () => Error, signal?: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(new Error('The call was aborted.'));
    };
    const timer = setTimeout(
      () => {
        signal?.removeEventListener('abort', onAbort);
        reject(timeoutError());
      },
      Math.max(0, ms),
    );
    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}

/** One running (or failed) language server for one root. */
export class LspServer {
  /** Resolves once `initialize` was answered; rejects with the sentence of why the server is not usable. */
  readonly ready: Promise<void>;
  /** Why the server is no longer usable (it exited, hung, flooded...), once it is not. */
  deadReason?: string;
  /** Called once when the server ends by itself (not by `stop`), with the reason. */
  onDeath?: (reason: string) => void;
  /** When it was started (ms since the epoch). */
  readonly startedAt = Date.now();

  private readonly child: ChildProcess;
  private readonly conn: ProtocolConnection;
  private capabilities: Record<string, unknown> = {};
  private readonly docs = new Map<string, Doc>();
  private readonly published = new Map<string, Published>();
  private readonly waiters = new Set<PushWaiter>();
  private readonly queues = new Map<string, Promise<unknown>>();
  private stderrTail = '';
  private stopping = false;
  private settleReady!: { resolve(): void; reject(e: Error): void };
  private readonly tmp: string;

  constructor(
    readonly spec: ServerSpec,
    readonly root: string,
    readonly launch: Launch,
  ) {
    this.ready = new Promise<void>((resolve, reject) => (this.settleReady = { resolve, reject }));
    // Nobody may be waiting yet; the reason stays in deadReason.
    this.ready.catch(() => undefined);
    installExitHook();
    const env: Record<string, string> = {};
    for (const k of PASSED_ENV) if (process.env[k] !== undefined) env[k] = process.env[k];
    // Its own temp dir, removed when it ends: servers leave files there (tsserver's pipes) when killed.
    this.tmp = mkdtempSync(path.join(os.tmpdir(), 'toolbelt-lsp-'));
    Object.assign(env, { TMPDIR: this.tmp, TMP: this.tmp, TEMP: this.tmp });
    // Its own process group: stopping it ends the processes it started too (tsserver, workers).
    this.child = spawn(launch.file, launch.args, {
      cwd: root,
      env: { ...env, ...spec.env },
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    live.add(this);
    // A server does not keep the host alive: a program that never disposes its registry still
    // exits (and the exit hook ends the server); a pending request's timer keeps it alive meanwhile.
    this.child.unref();
    for (const stream of [this.child.stdin, this.child.stdout, this.child.stderr]) {
      (stream as unknown as { unref?: () => void } | null)?.unref?.();
    }
    this.child.on('error', (err) => this.fail(`could not be started (${err.message})`));
    // 'close' comes after the process exited and its output was read: the reason has its last words.
    this.child.on('close', (code, signal) =>
      this.fail(`exited (${signal ? `signal ${signal}` : `code ${code}`})${this.stderrNote()}`),
    );
    this.child.stderr!.setEncoding('utf8');
    this.child.stderr!.on('data', (s: string) => {
      this.stderrTail = (this.stderrTail + s).slice(-STDERR_TAIL_CHARS);
    });
    this.child.stdin!.on('error', () => undefined);
    this.conn = createProtocolConnection(this.boundedReader(), new StreamMessageWriter(this.child.stdin!));
    this.conn.onError(([err]) => this.fail(`answered with something that is not LSP (${err.message})`));
    this.conn.onNotification('textDocument/publishDiagnostics', (p: unknown) => this.onPublish(p));
    // Requests a server may send: configuration (none of ours), registrations and progress (accepted).
    this.conn.onRequest('workspace/configuration', (p: { items?: unknown[] }) =>
      Array.isArray(p?.items) ? p.items.map(() => null) : [],
    );
    for (const method of ACCEPTED_REQUESTS) this.conn.onRequest(method, () => null);
    this.conn.onRequest('workspace/workspaceFolders', () => [{ uri: uriOf(root), name: path.basename(root) || root }]);
    this.conn.onRequest('workspace/applyEdit', () => ({
      applied: false,
      failureReason: 'this client does not apply edits',
    }));
    this.conn.listen();
    void this.initialize();
  }

  /** The server's process id (its process group's too). */
  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Whether the server may still answer. */
  get alive(): boolean {
    return this.deadReason === undefined;
  }

  /**
   * The reader of the server's stdout, stopping the server when one message grows past
   * LSP_MAX_MESSAGE_BYTES (the bytes since the last whole message are counted).
   */
  private boundedReader(): StreamMessageReader {
    const stdout = this.child.stdout!;
    let pending = 0;
    stdout.on('data', (chunk: Buffer) => {
      pending += chunk.length;
      if (pending > LSP_MAX_MESSAGE_BYTES) {
        this.fail(`sent a message larger than ${LSP_MAX_MESSAGE_BYTES} bytes (it floods the client)`);
      }
    });
    const reader = new StreamMessageReader(stdout);
    const listen = reader.listen.bind(reader);
    reader.listen = (callback: DataCallback) =>
      listen((message) => {
        pending = 0;
        callback(message);
      });
    return reader;
  }

  private async initialize(): Promise<void> {
    const rootUri = uriOf(this.root);
    try {
      const result = await within(
        this.conn.sendRequest('initialize', {
          processId: process.pid,
          clientInfo: { name: 'agent-toolbelt' },
          rootUri,
          rootPath: this.root,
          workspaceFolders: [{ uri: rootUri, name: path.basename(this.root) || this.root }],
          initializationOptions: this.launch.initializationOptions,
          capabilities: {
            general: { positionEncodings: ['utf-16'] },
            workspace: { configuration: true, workspaceFolders: true },
            textDocument: {
              synchronization: { didSave: false, willSave: false },
              publishDiagnostics: { versionSupport: true },
              diagnostic: { dynamicRegistration: false },
              definition: { linkSupport: false },
              references: {},
              hover: { contentFormat: ['plaintext', 'markdown'] },
              documentSymbol: { hierarchicalDocumentSymbolSupport: true },
            },
          },
        }),
        LSP_START_TIMEOUT_MS,
        () => new Error(`did not answer initialize within ${LSP_START_TIMEOUT_MS} ms (it hangs)`),
      );
      if (!this.alive) return;
      const caps = (result as { capabilities?: unknown } | null)?.capabilities;
      if (typeof caps !== 'object' || caps === null) throw new Error('answered initialize without its capabilities');
      this.capabilities = caps as Record<string, unknown>;
      await this.conn.sendNotification('initialized', {});
      this.settleReady.resolve();
    } catch (err) {
      this.fail(err instanceof Error ? err.message : String(err));
    }
  }

  private stderrNote(): string {
    const tail = this.stderrTail.trim().split('\n').slice(-3).join(' | ');
    return tail ? `; its last output: ${tail}` : '';
  }

  /** Ends the server for `reason` (the first reason wins): waiters answered, process group killed. */
  private fail(reason: string): void {
    if (this.deadReason !== undefined) return;
    this.deadReason = reason;
    this.settleReady.reject(new Error(reason));
    for (const w of this.waiters) w.resolve(undefined);
    this.waiters.clear();
    this.killNow();
    this.conn.dispose();
    if (!this.stopping) this.onDeath?.(reason);
  }

  /** Kills the server's process group at once (the host is exiting, or the server failed). */
  killNow(): void {
    live.delete(this);
    const pid = this.child.pid;
    if (pid !== undefined) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        try {
          this.child.kill('SIGKILL');
        } catch {
          // already gone
        }
      }
    }
    rmSync(this.tmp, { recursive: true, force: true });
  }

  /** Asks the server to shut down, gives it LSP_STOP_GRACE_MS, then kills its process group. */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    if (this.alive && this.child.exitCode === null) {
      const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
      try {
        await within(this.conn.sendRequest('shutdown'), LSP_STOP_GRACE_MS / 2, () => new Error('shutdown'));
        await this.conn.sendNotification('exit');
      } catch {
        // it will be killed below
      }
      await within(exited, LSP_STOP_GRACE_MS, () => new Error('exit')).catch(() => undefined);
    }
    this.fail('was stopped');
    this.killNow();
  }

  /** Runs `fn` after the work already queued for `uri`, so a file's versions reach the server in order. */
  private serial<T>(uri: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.queues.get(uri) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const tail = next.catch(() => undefined);
    this.queues.set(uri, tail);
    void tail.then(() => {
      if (this.queues.get(uri) === tail) this.queues.delete(uri);
    });
    return next;
  }

  /** Tells the server `abs` holds `text` (didOpen the first time, didChange with the whole text after); returns its version. */
  private async sync(abs: string, text: string): Promise<{ uri: string; version: number; changed: boolean }> {
    const uri = uriOf(abs);
    const doc = this.docs.get(uri);
    if (doc && doc.text === text) return { uri, version: doc.version, changed: false };
    if (doc) {
      doc.version += 1;
      doc.text = text;
      // Most recently used last.
      this.docs.delete(uri);
      this.docs.set(uri, doc);
      await this.conn.sendNotification('textDocument/didChange', {
        textDocument: { uri, version: doc.version },
        contentChanges: [{ text }],
      });
      return { uri, version: doc.version, changed: true };
    }
    if (this.docs.size >= LSP_MAX_OPEN_DOCUMENTS) await this.closeOldest();
    const ext = path.extname(abs).slice(1).toLowerCase();
    this.docs.set(uri, { version: 1, text });
    await this.conn.sendNotification('textDocument/didOpen', {
      textDocument: { uri, languageId: this.spec.languageIds[ext] ?? ext, version: 1, text },
    });
    return { uri, version: 1, changed: true };
  }

  private async closeOldest(): Promise<void> {
    const oldest = this.docs.keys().next().value;
    if (oldest === undefined) return;
    this.docs.delete(oldest);
    this.published.delete(oldest);
    await this.conn.sendNotification('textDocument/didClose', { textDocument: { uri: oldest } });
  }

  /**
   * The server's diagnostics for `abs` holding `text` (sent first when the server has another text),
   * or undefined when they did not come by `deadline` (ms since the epoch) or the server ended.
   */
  diagnostics(abs: string, text: string, deadline: number, signal?: AbortSignal): Promise<Diag[] | undefined> {
    return this.serial(uriOf(abs), async () => {
      await within(this.ready, deadline - Date.now(), () => new Error('start'), signal);
      const published = this.published.get(uriOf(abs));
      const afterSeq = published?.seq ?? 0;
      const { uri, version, changed } = await this.sync(abs, text);
      if (this.spec.diagnostics === 'tsserver') return this.pullTsserver(uri, deadline, signal);
      if (this.capabilities.diagnosticProvider) return this.pull(uri, deadline, signal);
      return this.pushed(uri, version, changed ? afterSeq : -1, deadline, signal);
    }).catch(() => undefined);
  }

  /** typescript-language-server: tsserver's own diagnostics of the file as it is now (syntax, then types). */
  private async pullTsserver(uri: string, deadline: number, signal?: AbortSignal): Promise<Diag[] | undefined> {
    const out: Diag[] = [];
    for (const command of ['syntacticDiagnosticsSync', 'semanticDiagnosticsSync']) {
      const answer = await this.request(
        'workspace/executeCommand',
        { command: 'typescript.tsserverRequest', arguments: [command, { file: uri }] },
        deadline - Date.now(),
        signal,
      );
      const body = (answer as { body?: unknown } | null)?.body ?? answer;
      const diags = diagsOf(body, fromTsserver);
      if (!diags) throw new Error(`answered ${command} with something that is not a list of diagnostics`);
      out.push(...diags);
    }
    return out;
  }

  /** LSP 3.17's pull (`textDocument/diagnostic`), for servers that offer it. */
  private async pull(uri: string, deadline: number, signal?: AbortSignal): Promise<Diag[] | undefined> {
    const answer = await this.request(
      'textDocument/diagnostic',
      { textDocument: { uri } },
      deadline - Date.now(),
      signal,
    );
    return diagsOf((answer as { items?: unknown } | null)?.items, (d) => fromLsp(d));
  }

  /**
   * The server's next publication for `uri` at `version` (or, from a server that sends no versions,
   * its first after `afterSeq`; -1: the text did not change, so the last one stands).
   */
  private pushed(
    uri: string,
    version: number,
    afterSeq: number,
    deadline: number,
    signal?: AbortSignal,
  ): Promise<Diag[] | undefined> {
    const last = this.published.get(uri);
    if (last && (last.version === undefined ? afterSeq === -1 || last.seq > afterSeq : last.version === version)) {
      return Promise.resolve(last.diags);
    }
    return new Promise<Diag[] | undefined>((resolve) => {
      const waiter: PushWaiter = {
        uri,
        version,
        afterSeq: Math.max(afterSeq, 0),
        resolve: (d) => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          this.waiters.delete(waiter);
          resolve(d);
        },
      };
      const onAbort = () => waiter.resolve(undefined);
      const timer = setTimeout(onAbort, Math.max(0, deadline - Date.now()));
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.add(waiter);
    });
  }

  private onPublish(params: unknown): void {
    const p = params as { uri?: unknown; version?: unknown; diagnostics?: unknown } | null;
    if (typeof p?.uri !== 'string') return;
    // Only files the client has open are kept: a server publishing for thousands of files costs nothing.
    if (!this.docs.has(p.uri)) return;
    const diags = diagsOf(p.diagnostics, (d) => fromLsp(d));
    if (!diags) return;
    const prev = this.published.get(p.uri);
    const version = typeof p.version === 'number' ? p.version : undefined;
    const entry: Published = { version, seq: (prev?.seq ?? 0) + 1, diags };
    this.published.set(p.uri, entry);
    for (const w of this.waiters) {
      if (w.uri !== p.uri) continue;
      if (version === undefined ? entry.seq > w.afterSeq : version === w.version) w.resolve(diags);
    }
  }

  /**
   * Sends `method` once the server is ready; rejects with a sentence after `ms` (the request is
   * cancelled), when `signal` fires, or when the server ends.
   */
  async request(method: string, params: unknown, ms: number, signal?: AbortSignal): Promise<unknown> {
    const started = Date.now();
    await within(this.ready, ms, () => new Error(`did not finish starting within ${ms} ms`), signal);
    const left = ms - (Date.now() - started);
    const cancel = new CancellationTokenSource();
    try {
      return await within(
        this.conn.sendRequest(method, params, cancel.token),
        left,
        () => new Error(`did not answer ${method} within ${ms} ms`),
        signal,
      );
    } catch (err) {
      cancel.cancel();
      if (!this.alive) throw new Error(this.deadReason, { cause: err });
      throw err;
    } finally {
      cancel.dispose();
    }
  }

  /** Like `request`, for a file: its text is sent first, so positions are the ones in `text`. */
  requestOn(
    abs: string,
    text: string,
    method: string,
    params: unknown,
    ms: number,
    signal?: AbortSignal,
  ): Promise<unknown> {
    return this.serial(uriOf(abs), async () => {
      const started = Date.now();
      await within(this.ready, ms, () => new Error(`did not finish starting within ${ms} ms`), signal);
      await this.sync(abs, text);
      return this.request(method, params, ms - (Date.now() - started), signal);
    });
  }
}
