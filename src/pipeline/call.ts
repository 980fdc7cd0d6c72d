/**
 * The one execution path every caller shares (LangChain, registry.execute, MCP, CLI): validate, limit,
 * run under abort and timeout, stream progress, cap output, report. Behaviour cannot drift between
 * entry points because there is only this one. Only the sequencing lives here: limits, deadlines,
 * repair and output caps are called from their own modules, never re-written.
 */
import { randomUUID } from 'node:crypto';
import type { Tool } from '../tool.js';
import { DEFAULT_MAX_BYTES, mayNeedTruncation, truncateOutput, type TruncateOptions } from '../truncate.js';
import { parseArguments } from './arguments.js';
import type { Deadline, DeadlineQueue } from './deadlines.js';
import type { Semaphore } from './semaphore.js';
import type { OnToolResult, ToolEvent, ToolFinalUpdate, ToolUpdate } from './types.js';

/** What the registry hands the pipeline: its shared limits and sinks. */
export interface PipelineHost {
  semaphore: Semaphore;
  deadlines: DeadlineQueue;
  defaultTimeoutMs: number;
  truncate: TruncateOptions;
  emit(event: ToolEvent): void;
  /** Whether anyone subscribed to events (events are not even built when nobody listens). */
  readonly listening: boolean;
  record(toolId: string, durationMs: number, error?: string): void;
}

/** One call's request. */
export interface CallRequest {
  tool: Tool.Initialized;
  args: unknown;
  /** The caller's context; any field left out gets a default. */
  ctx?: Partial<Tool.Context>;
  callID?: string;
  /** Aborts the call (LangChain's `config.signal`, or the caller's). */
  signal?: AbortSignal;
  /** Per-call timeout override (ms), clamped to the tool's `timeout.maxMs`. */
  timeoutMs?: number;
  /** Receivers of every update, in order. */
  listeners?: OnToolResult[];
}

/** The timeout a call runs under, or undefined for none. */
export function effectiveTimeout(
  tool: Tool.Initialized,
  registryDefault: number,
  override?: number,
): number | undefined {
  const policy = tool.timeout ?? {};
  let ms = override ?? (policy.managed ? undefined : (policy.defaultMs ?? registryDefault));
  if (ms !== undefined && policy.maxMs !== undefined) ms = Math.min(ms, policy.maxMs);
  if (ms === undefined && policy.maxMs !== undefined) ms = policy.maxMs;
  return ms !== undefined && Number.isFinite(ms) && ms > 0 ? ms : undefined;
}

/** Runs one call through every step; never rejects: failures become an `error` final update. */
export function runCall(host: PipelineHost, req: CallRequest): Promise<ToolFinalUpdate> {
  return new Call(host, req).run();
}

const ABORT_EVENT_OPTIONS = { once: true } as const;

/** Where a context keeps its call: a symbol, so it stays out of the tool-facing string keys. */
const CALL = Symbol('call');

/** The Tool.Context of one call; a class so that the lazy `abort` getter stays cheap. */
class CallContext implements Tool.Context {
  // Declared, not defined: plain assignments in the constructor keep one hidden class and are
  // cheaper than class-field definitions on this per-call object.
  declare readonly sessionID: string;
  declare readonly messageID: string;
  declare readonly agent: string;
  declare readonly callID: string;
  declare readonly extra?: Record<string, unknown>;
  declare readonly metadata: (update: Tool.MetadataUpdate) => void;
  declare readonly [CALL]: Call;

  constructor(call: Call, given: Partial<Tool.Context> | undefined, callID: string) {
    const self = this as { -readonly [K in keyof CallContext]: CallContext[K] };
    self[CALL] = call;
    self.sessionID = given?.sessionID ?? 'default';
    self.messageID = given?.messageID ?? callID;
    self.agent = given?.agent ?? 'agent';
    self.callID = callID;
    self.extra = given?.extra;
    self.metadata = (update) => call.progress(update);
  }

  get abort(): AbortSignal {
    return this[CALL].signal();
  }
}

/**
 * One call's state. A class rather than closures: a no-op call then allocates one object, which
 * keeps the adapter's per-call overhead close to a bare DynamicStructuredTool's.
 */
class Call {
  // Fields are declared and assigned in the constructor (see CallContext for why).
  declare private readonly host: PipelineHost;
  declare private readonly req: CallRequest;
  declare private readonly toolId: string;
  declare private readonly callID: string;
  declare private readonly started: number;
  /** Title and metadata reported so far by `ctx.metadata` (made on the first report). */
  declare private partial?: { title: string; metadata: Tool.Metadata };
  declare private settled: boolean;
  /** Made only when someone asks for it (ctx.abort, a wait in the queue): AbortControllers are costly. */
  declare private controller?: AbortController;
  declare private stopped?: Error;
  declare private abortMessage: string;
  /** Set while the tool runs: stopping rejects the race directly (no signal listener per call). */
  declare private interrupt?: (err: Error) => void;
  declare private onCallerAbort?: () => void;

  constructor(host: PipelineHost, req: CallRequest) {
    this.host = host;
    this.req = req;
    this.toolId = req.tool.id;
    this.callID = req.callID ?? req.ctx?.callID ?? randomUUID();
    this.started = Date.now();
    this.partial = undefined;
    this.settled = false;
    this.controller = undefined;
    this.stopped = undefined;
    this.abortMessage = '';
    this.interrupt = undefined;
    this.onCallerAbort = undefined;
  }

  async run(): Promise<ToolFinalUpdate> {
    const { host, req, toolId } = this;
    const tool = req.tool;
    if (host.listening)
      host.emit({ type: 'requested', toolId, callID: this.callID, args: req.args, timestamp: this.started });

    let args: unknown;
    try {
      args = parseArguments(toolId, tool.parameters, req.args);
    } catch (err) {
      return this.fail((err as Error).message);
    }

    const signals = this.watchCallerSignals();
    let release: (() => void) | undefined;
    let deadline: Deadline | undefined;
    try {
      if (this.stopped) return this.fail(this.abortMessage);
      if (tool.concurrency !== 'exempt') {
        try {
          release = host.semaphore.tryAcquire() ?? (await host.semaphore.acquire(this.signal()));
        } catch {
          return this.fail(this.abortMessage || `Tool "${toolId}" was aborted while waiting for a free slot.`);
        }
      }
      const timeoutMs = effectiveTimeout(tool, host.defaultTimeoutMs, req.timeoutMs);
      if (timeoutMs !== undefined) deadline = host.deadlines.add(timeoutMs, () => this.timedOut(timeoutMs));

      let result: Tool.Result;
      try {
        const running = tool.execute(args as never, this.context());
        result = await new Promise<Tool.Result>((resolve, reject) => {
          this.interrupt = reject;
          if (this.stopped) reject(this.stopped);
          // An abandoned (stopped) call may still settle later; its outcome is ignored.
          Promise.resolve(running).then(resolve, reject);
        });
      } catch (err) {
        return this.fail(this.stopped ? this.abortMessage : errorText(err, toolId));
      }
      return this.complete(result);
    } finally {
      deadline?.cancel();
      release?.();
      if (signals) for (const s of signals) s.removeEventListener('abort', this.onCallerAbort!);
    }
  }

  /** The context handed to the tool. */
  private context(): Tool.Context {
    return new CallContext(this, this.req.ctx, this.callID);
  }

  /** The call's AbortSignal, made on first use. */
  signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.stopped) this.controller.abort(this.stopped);
    }
    return this.controller.signal;
  }

  private watchCallerSignals(): AbortSignal[] | undefined {
    const { req } = this;
    if (!req.signal && !req.ctx?.abort) return undefined;
    const signals = [req.signal, req.ctx?.abort].filter((s): s is AbortSignal => !!s);
    this.onCallerAbort = () => this.callerAborted();
    for (const s of signals) {
      if (s.aborted) {
        this.callerAborted();
        break;
      }
      s.addEventListener('abort', this.onCallerAbort, ABORT_EVENT_OPTIONS);
    }
    return signals;
  }

  private callerAborted(): void {
    const { req } = this;
    const reason: unknown = req.signal?.aborted ? req.signal.reason : req.ctx?.abort?.reason;
    const why = reason instanceof Error ? reason.message : typeof reason === 'string' ? reason : '';
    this.stop(
      `Tool "${this.toolId}" was aborted${why && why !== 'This operation was aborted' ? ` (${why})` : ''} before it finished.`,
    );
  }

  private timedOut(timeoutMs: number): void {
    this.stop(
      `Tool "${this.toolId}" timed out after ${timeoutMs} ms and was stopped. ` +
        'Try a smaller request (narrower path, fewer items) or a larger timeout if the tool accepts one.',
    );
  }

  private stop(message: string): void {
    if (this.stopped) return;
    this.abortMessage = message;
    this.stopped = new Error(message);
    this.controller?.abort(this.stopped);
    this.interrupt?.(this.stopped);
  }

  /** Handles one `ctx.metadata` call. */
  progress(u: Tool.MetadataUpdate): void {
    if (this.settled || !u) return;
    const partial = (this.partial ??= { title: '', metadata: {} });
    if (typeof u.title === 'string') partial.title = u.title;
    if (u.metadata) partial.metadata = { ...partial.metadata, ...u.metadata };
    const update: ToolUpdate = {
      status: 'running',
      toolId: this.toolId,
      callID: this.callID,
      result: { title: partial.title, metadata: { ...partial.metadata }, output: '' },
      timestamp: Date.now(),
    };
    this.deliver(update);
    if (this.host.listening)
      this.host.emit({
        type: 'progress',
        toolId: this.toolId,
        callID: this.callID,
        update,
        timestamp: update.timestamp,
      });
  }

  private complete(result: Tool.Result): ToolFinalUpdate | Promise<ToolFinalUpdate> {
    const { toolId, host } = this;
    if (!result || typeof result !== 'object' || typeof result.output !== 'string') {
      return this.fail(
        `Tool "${toolId}" returned an invalid result (expected { title, metadata, output }). This is a bug in the tool.`,
      );
    }
    // The tool's metadata object is shared, not copied: the pipeline only adds to it when it
    // truncates or reports an error, and copies it then.
    const metadata = (result.metadata ?? {}) as Tool.Metadata;
    const final: Tool.Result = {
      title: result.title ?? this.partial?.title ?? toolId,
      metadata,
      output: result.output,
    };
    if (result.attachments?.length) final.attachments = result.attachments;
    if (result.structuredContent !== undefined) final.structuredContent = result.structuredContent;
    if (metadata.error) {
      // The model reads `output`; make sure it carries the error, whatever else the tool wrote.
      const message =
        typeof metadata.error === 'string' ? metadata.error : final.output || `Tool "${toolId}" reported an error.`;
      if (!final.output) final.output = message;
      else if (!final.output.includes(message)) final.output = `${final.output}\n\nError: ${message}`;
      return this.finish(message, final);
    }
    if (metadata.truncated === undefined && mayNeedTruncation(final.output, host.truncate)) {
      return truncateOutput(final.output, toolId, host.truncate).then(
        (capped) => {
          if (capped.truncated) {
            final.output = capped.output;
            final.metadata = { ...metadata, truncated: true, outputPath: capped.outputPath };
          }
          return this.finish(undefined, final);
        },
        (err: Error) => {
          // Saving the full output failed (disk full?): cut without the file rather than lose the call.
          host.emit({
            type: 'warning',
            toolId,
            message: `Could not save the full output: ${err.message}`,
            timestamp: Date.now(),
          });
          const cut = final.output.slice(0, host.truncate.maxBytes ?? DEFAULT_MAX_BYTES);
          final.output = `${cut}\n\n... output truncated (the full output could not be saved: ${err.message}).`;
          final.metadata = { ...metadata, truncated: true };
          return this.finish(undefined, final);
        },
      );
    }
    return this.finish(undefined, final);
  }

  private fail(message: string): ToolFinalUpdate {
    const { partial } = this;
    return this.finish(message, {
      title: partial?.title || this.toolId,
      metadata: { ...partial?.metadata, error: message },
      output: message,
    });
  }

  private finish(error: string | undefined, result: Tool.Result): ToolFinalUpdate {
    this.settled = true;
    const now = Date.now();
    const durationMs = now - this.started;
    const update = {
      status: error === undefined ? 'completed' : 'error',
      toolId: this.toolId,
      callID: this.callID,
      result,
      timestamp: now,
      success: error === undefined,
      durationMs,
    } as ToolFinalUpdate;
    if (error !== undefined) update.error = error;
    this.host.record(this.toolId, durationMs, error);
    this.deliver(update);
    if (this.host.listening) {
      this.host.emit({
        type: error === undefined ? 'completed' : 'failed',
        toolId: this.toolId,
        callID: this.callID,
        update,
        timestamp: now,
      } as ToolEvent);
    }
    return update;
  }

  private deliver(update: ToolUpdate): void {
    const listeners = this.req.listeners;
    if (!listeners) return;
    for (const listener of listeners) {
      try {
        listener(update);
      } catch (err) {
        this.host.emit({
          type: 'warning',
          toolId: this.toolId,
          message: `onToolResult listener threw: ${(err as Error).message}`,
          timestamp: Date.now(),
        });
      }
    }
  }
}

function errorText(err: unknown, toolId: string): string {
  if (err instanceof Error) return err.message || `Tool "${toolId}" failed with ${err.name}.`;
  if (typeof err === 'string') return err;
  try {
    return `Tool "${toolId}" failed: ${JSON.stringify(err)}`;
  } catch {
    return `Tool "${toolId}" failed.`;
  }
}
