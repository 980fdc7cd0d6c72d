/**
 * The one execution path every caller shares (LangChain, registry.execute, MCP, CLI): validate, limit,
 * run under abort and timeout, stream progress, cap output, report. Behaviour cannot drift between
 * entry points because there is only this one. Only the sequencing lives here: limits, deadlines,
 * repair and output caps are called from their own modules, never re-written.
 * Must not import policy/ or the registry: authorization arrives as the host's authorize hook (policy/gate.ts).
 * Over 400 lines: the Call class is one call's lifecycle (settle-once state, listeners, abort/timeout race).
 */
import { randomUUID } from 'node:crypto';
import { Tool } from '../authoring/tool.js';
import {
  capsFor,
  CAPPED_ERROR_MAX_CHARS,
  DEFAULT_MAX_BYTES,
  mayNeedTruncation,
  truncateOutput,
  type TruncateOptions,
} from './truncate.js';
import { parseArgumentsWithRepairs, type ArgumentRepair } from './arguments.js';
import type { Deadline, DeadlineQueue } from './deadlines.js';
import type { Semaphore } from './semaphore.js';
import type {
  AuthorizeCall,
  CallRequest,
  OnToolResult,
  PendingCall,
  PendRequest,
  ToolEvent,
  ToolFinalUpdate,
  ToolUpdate,
} from './types.js';
import { errorText } from './errors.js';
import type { CallSpan, Telemetry } from './telemetry.js';
import { errorMessage } from '../text/describe.js';

/** What the registry hands the pipeline: its shared limits and sinks. */
export interface CallEnvironment {
  semaphore: Semaphore;
  deadlines: DeadlineQueue;
  defaultTimeoutMs: number;
  truncate: TruncateOptions;
  emit(event: ToolEvent): void;
  /** Whether anyone subscribed to events (events are not even built when nobody listens). */
  readonly listening: boolean;
  recordStats(toolId: string, durationMs: number, error?: string): void;
  /**
   * Step 2, policy and loop guard: a refusal the model reads, or undefined to go on. Returns
   * undefined synchronously when there is nothing to wait for, so plain calls stay cheap.
   */
  authorize?(call: AuthorizeCall): Promise<string | undefined> | string | undefined;
  /**
   * The policy's word on a URL a running call is about to reach besides its arguments' (a redirect
   * hop): undefined to go on, else why not. Tools reach it as `ctx.checkUrl`.
   */
  checkUrl?(call: AuthorizeCall, url: string): Promise<string | undefined>;
  /** The policy's filter of the paths a running search walks (`ctx.readFilter`); undefined when nothing can be refused. */
  readFilter?(call: AuthorizeCall): Promise<Tool.ReadFilter | undefined>;
  /**
   * Told the output of every call that ran (before the output cap): the loop guard's record.
   * Returns a refusal that replaces the result (a read-only repeat whose result did not change).
   */
  judgeOutput?(call: AuthorizeCall, output: string): string | undefined;
  /** Records a call whose tool returned `Tool.pending`: the record, or a refusal the model reads (too many waiting). */
  recordPending?(request: PendRequest): PendingCall | string | Promise<PendingCall | string>;
  /** Tracing (src/pipeline/telemetry.ts): each call's span; absent or returning undefined, nothing is traced. */
  telemetry?: Telemetry;
}

/** The timeout a call runs under, or undefined for none. */
function effectiveTimeout(tool: Tool.Initialized, registryDefault: number, override?: number): number | undefined {
  const policy = tool.timeout ?? {};
  let ms = override ?? (policy.managed ? undefined : (policy.defaultMs ?? registryDefault));
  if (ms !== undefined && policy.maxMs !== undefined) ms = Math.min(ms, policy.maxMs);
  if (ms === undefined && policy.maxMs !== undefined) ms = policy.maxMs;
  return ms !== undefined && Number.isFinite(ms) && ms > 0 ? ms : undefined;
}

/** Runs one call through every step; never rejects: failures become an `error` final update. */
export function runCall(host: CallEnvironment, req: CallRequest): Promise<ToolFinalUpdate> {
  return new Call(host, req).run();
}

/**
 * A call that fails before it can run (unknown tool, refused permission, init error), reported
 * through the same failure path as every other failure: one final update to the listeners, one
 * event, statistics when the tool exists (`recordStats`).
 */
export function failCall(
  host: CallEnvironment,
  toolId: string,
  message: string,
  options: { callID?: string; listeners?: OnToolResult[]; recordStats?: boolean } = {},
): ToolFinalUpdate {
  const call = new Call(host, {
    tool: { id: toolId } as Tool.Initialized,
    args: undefined,
    callID: options.callID,
    listeners: options.listeners,
  });
  return call.failNow(message, options.recordStats ?? true);
}

const ABORT_EVENT_OPTIONS = { once: true } as const;

/**
 * After an abort or timeout, how long a tool that reads `ctx.abort` may take to return its own
 * result (the output so far) before the call is answered without it, in ms.
 */
export const ABORT_GRACE_MS = 3_000;

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
    return this[CALL].toolSignal();
  }

  /** A method, not a per-call closure: plain calls pay nothing for it. */
  checkUrl(url: string): Promise<string | undefined> {
    return this[CALL].checkUrl(url);
  }

  /** A method too: only the search tools call it. */
  readFilter(): Promise<Tool.ReadFilter | undefined> {
    return this[CALL].readFilter();
  }
}

/**
 * One call's state. A class rather than closures: a no-op call then allocates one object, which
 * keeps the adapter's per-call overhead close to a bare DynamicStructuredTool's.
 */
class Call {
  // Fields are declared and assigned in the constructor (see CallContext for why).
  declare private readonly host: CallEnvironment;
  declare private readonly req: CallRequest;
  declare private readonly toolId: string;
  declare private readonly callID: string;
  declare private readonly started: number;
  /** Title and metadata reported so far by `ctx.metadata` (made on the first report). */
  declare private partial?: { title: string; metadata: Tool.Metadata };
  declare private isSettled: boolean;
  /** Made only when someone asks for it (ctx.abort, a wait in the queue): AbortControllers are costly. */
  declare private controller?: AbortController;
  declare private stopped?: Error;
  declare private abortMessage: string;
  /** Set while the tool runs: stopping rejects the race directly (no signal listener per call). */
  declare private interrupt?: (err: Error) => void;
  declare private onCallerAbort?: () => void;
  /** The final update, once there is one (a second failure returns it instead of reporting again). */
  declare private final?: ToolFinalUpdate;
  /** A call that never ran for an unknown tool leaves no statistics. */
  declare private skipStats: boolean;
  /** What argument repair changed, reported as the result's `metadata.repairs`. */
  declare private repairs?: ArgumentRepair[];
  /** The arguments as parsed (a pending call's record keeps them). */
  declare private args: unknown;
  /** The tool read `ctx.abort`, so it may answer an abort with its own (partial) result. */
  declare private abortAware: boolean;
  /** The call's OpenTelemetry span, when something records it. */
  declare private span?: CallSpan;

  constructor(host: CallEnvironment, req: CallRequest) {
    this.host = host;
    this.req = req;
    this.toolId = req.tool.id;
    this.callID = req.callID ?? req.ctx?.callID ?? randomUUID();
    this.started = Date.now();
    this.partial = undefined;
    this.isSettled = false;
    this.controller = undefined;
    this.stopped = undefined;
    this.abortMessage = '';
    this.interrupt = undefined;
    this.onCallerAbort = undefined;
    this.final = undefined;
    this.skipStats = false;
    this.repairs = undefined;
    this.args = undefined;
    this.abortAware = false;
    this.span = undefined;
  }

  /**
   * Runs the call; always resolves. Whatever goes wrong anywhere (a tool throwing a hostile value,
   * a result with a throwing getter, a listener that throws) ends in `fail`, the one failure path.
   */
  async run(): Promise<ToolFinalUpdate> {
    const telemetry = this.host.telemetry;
    if (telemetry) {
      let span = telemetry.start(this.req.tool, this.callID, this.req.args);
      if (span instanceof Promise) span = await span;
      // The tool runs with its span active: spans it starts (a sub-agent's calls) nest under it.
      if (span) return (this.span = span).within(() => this.runGuarded());
    }
    return this.runGuarded();
  }

  private async runGuarded(): Promise<ToolFinalUpdate> {
    try {
      return await this.runSteps();
    } catch (err) {
      return this.final ?? this.fail(errorText(err, this.toolId));
    }
  }

  private async runSteps(): Promise<ToolFinalUpdate> {
    const { host, req, toolId } = this;
    const tool = req.tool;
    if (host.listening)
      host.emit({ type: 'requested', toolId, callID: this.callID, args: req.args, timestamp: this.started });

    let args: unknown;
    try {
      const parsed = parseArgumentsWithRepairs(toolId, tool.parameters, req.args);
      args = this.args = parsed.value;
      this.repairs = parsed.repairs;
    } catch (err) {
      return this.fail(errorText(err, toolId));
    }
    const gate = host.authorize?.({ toolId, callID: this.callID, rawArgs: req.args, args, ctx: req.ctx });
    const refusal = gate instanceof Promise ? await gate : gate;
    if (refusal !== undefined) return this.fail(refusal);

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
      let graceTimer: NodeJS.Timeout | undefined;
      try {
        const running = tool.execute(args, this.context());
        result = await new Promise<Tool.Result>((resolve, reject) => {
          // A tool that looked at ctx.abort may be stopping on its own (bash kills its process
          // group and keeps what was printed): wait up to ABORT_GRACE_MS for its own result. One
          // that never looked is answered at once. Past the grace, its late outcome is ignored.
          this.interrupt = (err) => {
            if (!this.abortAware) reject(err);
            else graceTimer ??= setTimeout(() => reject(err), ABORT_GRACE_MS);
          };
          if (this.stopped) this.interrupt(this.stopped);
          Promise.resolve(running).then(resolve, reject);
        });
      } catch (err) {
        if (this.stopped) return this.fail(this.abortMessage);
        const message = errorText(err, toolId);
        const refusal = this.settledRefusal(message);
        if (refusal === undefined && mayNeedTruncation(message, host.truncate)) return this.failCapped(message);
        return this.fail(refusal ?? message);
      } finally {
        if (graceTimer) clearTimeout(graceTimer);
      }
      // Stopped, but the tool answered in time: what it produced so far, with the reason it stopped.
      if (this.stopped) return this.complete(result, this.abortMessage);
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

  /** Tells the host the output of a call that ran; its refusal, if it has one. */
  private settledRefusal(output: string): string | undefined {
    const { toolId, callID, req, host } = this;
    return host.judgeOutput?.({ toolId, callID, rawArgs: req.args, args: this.args, ctx: req.ctx }, output);
  }

  /** Asks the host about a URL this call is about to reach (a redirect hop); allowed when the host judges none. */
  checkUrl(url: string): Promise<string | undefined> {
    const { toolId, callID, req, host } = this;
    if (!host.checkUrl) return Promise.resolve(undefined);
    return host.checkUrl({ toolId, callID, rawArgs: req.args, args: this.args, ctx: req.ctx }, url);
  }

  /** Asks the host which paths this call's walk must leave out; none when the host judges none. */
  readFilter(): Promise<Tool.ReadFilter | undefined> {
    const { toolId, callID, req, host } = this;
    if (!host.readFilter) return Promise.resolve(undefined);
    return host.readFilter({ toolId, callID, rawArgs: req.args, args: this.args, ctx: req.ctx });
  }

  /** The signal handed to the tool: a tool that asked for it is given time to stop on its own. */
  toolSignal(): AbortSignal {
    this.abortAware = true;
    return this.signal();
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
    if (this.isSettled || !u) return;
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
    this.span?.progress(update);
    if (this.host.listening)
      this.host.emit({
        type: 'progress',
        toolId: this.toolId,
        callID: this.callID,
        update,
        timestamp: update.timestamp,
      });
  }

  /** Reports the tool's result; `stoppedBy` (an abort or timeout notice) makes it an error that keeps the output. */
  private complete(result: Tool.Result, stoppedBy?: string): ToolFinalUpdate | Promise<ToolFinalUpdate> {
    const { toolId, host } = this;
    // Each field is read once, into plain values: a result with throwing getters fails here (in
    // run's one failure path), never later in a caller.
    let output: unknown;
    let title: unknown;
    let metadata: Tool.Metadata;
    let attachments: Tool.Attachment[] | undefined;
    try {
      if (!result || typeof result !== 'object') throw new Error('it is not an object');
      const pendingOptions = Tool.pendingOf(result);
      if (pendingOptions) return this.parkAsPending(pendingOptions);
      output = result.output;
      title = result.title;
      const given: unknown = result.metadata;
      metadata = given && typeof given === 'object' ? { ...(given as Tool.Metadata) } : {};
      const att: unknown = result.attachments;
      attachments = Array.isArray(att) && att.length ? [...(att as Tool.Attachment[])] : undefined;
    } catch (err) {
      return this.fail(
        stoppedBy ??
          `Tool "${toolId}" returned a result that could not be read (${errorText(err, toolId)}). This is a bug in the tool.`,
      );
    }
    if (typeof output !== 'string') {
      return this.fail(
        stoppedBy ??
          `Tool "${toolId}" returned an invalid result (expected { title, metadata, output }). This is a bug in the tool.`,
      );
    }
    const final: Tool.Result = {
      title: typeof title === 'string' ? title : (this.partial?.title ?? toolId),
      metadata,
      output,
    };
    if (attachments) final.attachments = attachments;
    if (result.structuredContent !== undefined) final.structuredContent = result.structuredContent;
    if (stoppedBy !== undefined) metadata.error = stoppedBy;
    else {
      const loop = this.settledRefusal(final.output);
      if (loop !== undefined) return this.fail(loop);
    }
    let error: string | undefined;
    if (metadata.error) {
      // The model reads `output`; make sure it carries the error, whatever else the tool wrote.
      error =
        typeof metadata.error === 'string' ? metadata.error : final.output || `Tool "${toolId}" reported an error.`;
      if (!final.output) final.output = error;
      else if (!final.output.includes(error)) final.output = `${final.output}\n\nError: ${error}`;
    }
    // What a tool says about its own output never switches the cap off (truncate.ts capsFor); a
    // failed call's output is capped too.
    const caps = capsFor(metadata.truncated, host.truncate);
    if (mayNeedTruncation(final.output, caps)) {
      // A cut keeps the head: the tool's own error sentence is put back after it.
      const keepError = (): void => {
        const said = metadata.error;
        if (typeof said === 'string' && said.length <= CAPPED_ERROR_MAX_CHARS && !final.output.includes(said))
          final.output += `\n\nError: ${said}`;
      };
      return truncateOutput(final.output, toolId, caps).then(
        (capped) => {
          if (capped.truncated) {
            final.output = capped.output;
            final.metadata = { ...metadata, truncated: true, outputPath: capped.outputPath };
            keepError();
          }
          return this.finish(error, final);
        },
        (err: Error) => {
          // Saving the full output failed (disk full?): cut without the file rather than lose the call.
          host.emit({
            type: 'warning',
            toolId,
            message: `Could not save the full output: ${err.message}`,
            timestamp: Date.now(),
          });
          const cut = final.output.slice(0, caps.maxBytes ?? DEFAULT_MAX_BYTES);
          final.output = `${cut}\n\n... output truncated (the full output could not be saved: ${err.message}).`;
          final.metadata = { ...metadata, truncated: true };
          keepError();
          return this.finish(error, final);
        },
      );
    }
    return this.finish(error, final);
  }

  /** The tool returned `Tool.pending`: the registry records the call and the model is told to go on. */
  private parkAsPending(options: Tool.PendingOptions): ToolFinalUpdate | Promise<ToolFinalUpdate> {
    const { toolId } = this;
    let record: PendingCall | string | Promise<PendingCall | string> | undefined;
    try {
      record = this.host.recordPending?.({
        toolId,
        callID: this.callID,
        args: this.args,
        sessionID: this.req.ctx?.sessionID ?? 'default',
        options,
        ctx: this.req.ctx,
      });
    } catch (err) {
      return this.fail(errorMessage(err));
    }
    // A store keeps the record: the call answers once it is written (or fails with the store's sentence).
    if (record instanceof Promise)
      return record.then(
        (r) => this.pended(r),
        (err: unknown) => this.fail(errorMessage(err)),
      );
    return this.pended(record);
  }

  private pended(record: PendingCall | string | undefined): ToolFinalUpdate {
    const { toolId, callID } = this;
    if (this.final) return this.final;
    if (record === undefined)
      return this.fail(`Tool "${toolId}" returned a pending result, but this host does not keep pending calls.`);
    if (typeof record === 'string') return this.fail(record);
    const lead = record.message ? `${record.message.trim()}\n\n` : '';
    return this.finish(undefined, {
      title: `${toolId}: waiting for the result`,
      output:
        `${lead}The result of this call (${callID}) will arrive later, in a later message, ` +
        `or as an error if it has not arrived by ${new Date(record.expiresAt).toISOString()}. ` +
        'Do not call the tool again for it; go on with other work, or end your turn if nothing else can be done without it.',
      metadata: { pending: true, expiresAt: record.expiresAt },
    });
  }

  /** Fails a call that never ran (see `failCall`). */
  failNow(message: string, recordStats: boolean): ToolFinalUpdate {
    this.skipStats = !recordStats;
    return this.fail(message);
  }

  /**
   * A thrown error whose text is over the output cap (a tool that put a whole response in its
   * message): cut and saved like any output, the cut text is the error the caller reads.
   */
  private failCapped(message: string): Promise<ToolFinalUpdate> {
    const { toolId, host } = this;
    return truncateOutput(message, toolId, host.truncate).then(
      (capped) => {
        if (!capped.truncated || this.final) return this.fail(message);
        const { partial } = this;
        return this.finish(capped.output, {
          title: partial?.title || toolId,
          metadata: { ...partial?.metadata, error: capped.output, truncated: true, outputPath: capped.outputPath },
          output: capped.output,
        });
      },
      () => this.fail(message.slice(0, host.truncate.maxBytes ?? DEFAULT_MAX_BYTES)),
    );
  }

  private fail(message: string): ToolFinalUpdate {
    if (this.final) return this.final;
    const { partial } = this;
    return this.finish(message, {
      title: partial?.title || this.toolId,
      metadata: { ...partial?.metadata, error: message },
      output: message,
    });
  }

  private finish(error: string | undefined, result: Tool.Result): ToolFinalUpdate {
    this.isSettled = true;
    if (this.repairs) result.metadata = { ...result.metadata, repairs: this.repairs };
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
    this.final = update;
    if (!this.skipStats) this.host.recordStats(this.toolId, durationMs, error);
    this.span?.end(update);
    this.deliver(update);
    if (this.host.listening) {
      this.host.emit({
        type: error === undefined ? 'completed' : 'failed',
        toolId: this.toolId,
        callID: this.callID,
        update,
        timestamp: now,
      });
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
          message: `onToolResult listener threw: ${errorText(err, this.toolId)}`,
          timestamp: Date.now(),
        });
      }
    }
  }
}
