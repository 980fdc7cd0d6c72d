/**
 * The one execution path every caller shares (LangChain, registry.execute, MCP, CLI): validate,
 * limit, run under abort and timeout, stream progress, cap output, report. Behaviour cannot drift
 * between entry points because there is only this one.
 */
import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import type { Tool } from './tool.js';
import { DEFAULT_MAX_BYTES, mayNeedTruncation, truncateOutput, type TruncateOptions } from './truncate.js';

/** One update about a call: progress while running, then exactly one final update. */
export interface ToolUpdate {
  status: 'running' | 'completed' | 'error';
  toolId: string;
  /** The call's id: the LangChain tool_call_id when an agent made the call. */
  callID: string;
  /** The result so far (partial while running). */
  result: Tool.Result;
  /** Milliseconds since the epoch. */
  timestamp: number;
  /** Final updates only. */
  success?: boolean;
  /** Final updates only, when the call failed: the message the model sees. */
  error?: string;
  /** Final updates only. */
  durationMs?: number;
}

/** A final update (`status` is `completed` or `error`). */
export type ToolFinalUpdate = ToolUpdate & { status: 'completed' | 'error'; success: boolean; durationMs: number };

/** Receives every update of a call. */
export type OnToolResult = (update: ToolUpdate) => void;

/** Events a registry emits; subscribe with `registry.subscribe`. */
export type ToolEvent =
  | { type: 'requested'; toolId: string; callID: string; args: unknown; timestamp: number }
  | { type: 'progress'; toolId: string; callID: string; update: ToolUpdate; timestamp: number }
  | { type: 'completed'; toolId: string; callID: string; update: ToolFinalUpdate; timestamp: number }
  | { type: 'failed'; toolId: string; callID: string; update: ToolFinalUpdate; timestamp: number }
  | { type: 'warning'; toolId: string; message: string; timestamp: number };

/** A FIFO counting semaphore whose waiters can give up when their signal aborts. */
export class Semaphore {
  private active = 0;
  private readonly waiters: Array<() => void> = [];

  constructor(private limit: number) {
    Semaphore.check(limit);
  }

  private static check(limit: number): void {
    if (!Number.isInteger(limit) || limit < 1)
      throw new Error(`Concurrency limit must be a positive integer, got ${limit}.`);
  }

  /** Calls holding a slot now. */
  get running(): number {
    return this.active;
  }

  /** Calls waiting for a slot. */
  get queued(): number {
    return this.waiters.length;
  }

  /** Changes the limit; waiters are let in if the new limit allows. */
  setLimit(limit: number): void {
    Semaphore.check(limit);
    this.limit = limit;
    this.drain();
  }

  /** Takes a free slot now and returns its release function, or undefined when all are taken. */
  tryAcquire(): (() => void) | undefined {
    if (this.active >= this.limit || this.waiters.length) return undefined;
    this.active++;
    return this.releaser();
  }

  /** Waits for a slot; resolves to its release function. Rejects if `signal` aborts first. */
  acquire(signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    const now = this.tryAcquire();
    if (now) return Promise.resolve(now);
    return new Promise((resolve, reject) => {
      const grant = () => {
        signal?.removeEventListener('abort', onAbort);
        this.active++;
        resolve(this.releaser());
      };
      const onAbort = () => {
        const i = this.waiters.indexOf(grant);
        if (i !== -1) this.waiters.splice(i, 1);
        reject(abortReason(signal!));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(grant);
    });
  }

  private releaser(): () => void {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.active--;
      this.drain();
    };
  }

  private drain(): void {
    while (this.active < this.limit && this.waiters.length) this.waiters.shift()!();
  }
}

function abortReason(signal: AbortSignal): Error {
  const r: unknown = signal.reason;
  return r instanceof Error ? r : new Error(typeof r === 'string' ? r : 'The operation was aborted.');
}

/** A pending deadline; `cancel()` it when the call ends first. */
export interface Deadline {
  cancel(): void;
}

/** One pending deadline: its own cancel handle, so adding one allocates a single object. */
class DeadlineEntry implements Deadline {
  constructor(
    readonly at: number,
    public fire: (() => void) | undefined,
    private readonly queue: DeadlineQueue,
    private readonly lane: DeadlineLane,
    private readonly ms: number,
  ) {}

  cancel(): void {
    if (!this.fire) return;
    this.fire = undefined;
    this.queue.tidy(this.ms, this.lane);
  }
}

interface DeadlineLane {
  entries: DeadlineEntry[];
  head: number;
  timer?: NodeJS.Timeout;
}

/** Entries a lane lets pile up at its front before it compacts the array. */
const LANE_COMPACT_AT = 1024;

/**
 * Call timeouts with one timer per distinct duration instead of one per call: calls of the same
 * duration expire in the order they started, so each duration is a FIFO lane whose timer is armed
 * for its oldest live entry. A cancelled entry drops its callback at once (nothing is retained).
 */
export class DeadlineQueue {
  private readonly lanes = new Map<number, DeadlineLane>();

  /** Calls `fire` after `ms` unless cancelled first. */
  add(ms: number, fire: () => void): Deadline {
    let lane = this.lanes.get(ms);
    if (!lane) this.lanes.set(ms, (lane = { entries: [], head: 0 }));
    const entry = new DeadlineEntry(Date.now() + ms, fire, this, lane, ms);
    lane.entries.push(entry);
    if (!lane.timer) this.arm(ms, lane);
    else if (lane.entries.length - lane.head === 1) lane.timer.ref();
    return entry;
  }

  private arm(ms: number, lane: DeadlineLane): void {
    const next = lane.entries[lane.head];
    lane.timer = setTimeout(() => this.expire(ms, lane), Math.max(0, next.at - Date.now()));
  }

  private expire(ms: number, lane: DeadlineLane): void {
    lane.timer = undefined;
    const now = Date.now();
    while (lane.head < lane.entries.length) {
      const entry = lane.entries[lane.head];
      if (entry.fire && entry.at > now) break;
      lane.head++;
      const fire = entry.fire;
      entry.fire = undefined;
      fire?.();
    }
    this.tidy(ms, lane);
  }

  /** Drops dead entries at the front; disarms an empty lane, re-arms a lane that has work. */
  tidy(ms: number, lane: DeadlineLane): void {
    while (lane.head < lane.entries.length && !lane.entries[lane.head].fire) lane.head++;
    if (lane.head === lane.entries.length) {
      lane.entries = [];
      lane.head = 0;
      // An empty lane keeps its timer until it fires, so calls that follow one another reuse it
      // instead of arming and clearing a timer each; unref'd, it holds no idle process open.
      // While a call is pending the timer is ref'd: a tool waiting on nothing but its abort
      // signal must still be woken by its timeout.
      if (lane.timer) lane.timer.unref();
      else this.lanes.delete(ms);
      return;
    }
    if (lane.head >= LANE_COMPACT_AT && lane.head * 2 >= lane.entries.length) {
      lane.entries = lane.entries.slice(lane.head);
      lane.head = 0;
    }
    if (!lane.timer) this.arm(ms, lane);
  }
}

/** Statistics of one tool. */
export interface ToolStats {
  calls: number;
  failures: number;
  totalDurationMs: number;
  averageDurationMs: number;
  lastError?: string;
}

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

/** Error thrown by validation; carries the message the model should see. */
export class ToolInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ToolInputError';
  }
}

const MAX_COERCION_ROUNDS = 4;

/**
 * Parses `args` with the tool's schema. Weak models send `"true"` for booleans, `"5"` for numbers,
 * JSON-in-a-string for arrays and objects, and `null` for optional fields: those are repaired
 * where the schema says what was expected. Anything else fails with a message naming each field.
 */
export function parseArguments(toolId: string, schema: z.ZodType, args: unknown): unknown {
  let input: unknown = args ?? {};
  if (typeof input === 'string') {
    const parsed = tryJson(input);
    if (parsed !== undefined && typeof parsed === 'object') input = parsed;
  }
  const first = schema.safeParse(input);
  if (first.success) return first.data;
  let issues = first.error.issues;
  for (let round = 0; round < MAX_COERCION_ROUNDS; round++) {
    const repaired = repair(input, issues);
    if (repaired === undefined) break;
    input = repaired;
    const again = schema.safeParse(input);
    if (again.success) return again.data;
    issues = again.error.issues;
  }
  throw new ToolInputError(formatIssues(toolId, first.error.issues));
}

type Issue = z.core.$ZodIssue;

function formatIssues(toolId: string, issues: readonly Issue[]): string {
  const lines = issues.slice(0, 10).map((issue) => {
    const where = issue.path.length
      ? issue.path
          .map((p) => (typeof p === 'number' ? `[${p}]` : String(p)))
          .join('.')
          .replace(/\.\[/g, '[')
      : '(arguments)';
    return `- ${where}: ${issue.message}`;
  });
  if (issues.length > 10) lines.push(`- ... and ${issues.length - 10} more problems`);
  return `Invalid arguments for tool "${toolId}":\n${lines.join('\n')}\nRewrite the input so it satisfies the tool's schema, then call the tool again.`;
}

function tryJson(text: string): unknown {
  const t = text.trim();
  if (!t || !'[{'.includes(t[0])) return undefined;
  try {
    return JSON.parse(t);
  } catch {
    return undefined;
  }
}

/** Applies one round of repairs at the issues' paths; undefined when nothing could be repaired. */
function repair(input: unknown, issues: readonly Issue[]): unknown {
  const root = structuredClone(input);
  let changed = false;
  for (const issue of issues) {
    if (issue.code !== 'invalid_type' || issue.path.length === 0) continue;
    const parentPath = issue.path.slice(0, -1);
    const key = issue.path[issue.path.length - 1] as string | number;
    const parent = getAt(root, parentPath);
    if (!parent || typeof parent !== 'object') continue;
    const container = parent as Record<string | number, unknown>;
    const value = container[key];
    const expected = issue.expected as string;
    let next: unknown = NO_CHANGE;
    if (value === null && !Array.isArray(parent)) next = REMOVE;
    else if (typeof value === 'string') {
      const v = value.trim();
      if (expected === 'boolean' && /^(true|false)$/i.test(v)) next = v.toLowerCase() === 'true';
      else if ((expected === 'number' || expected === 'int') && v !== '' && Number.isFinite(Number(v)))
        next = Number(v);
      else if (expected === 'array' || expected === 'object') {
        const parsed = tryJson(v);
        if (parsed !== undefined && (expected === 'array') === Array.isArray(parsed)) next = parsed;
      }
    }
    if (next === NO_CHANGE) continue;
    if (next === REMOVE) delete container[key];
    else container[key] = next;
    changed = true;
  }
  return changed ? root : undefined;
}

const NO_CHANGE = Symbol('no-change');
const REMOVE = Symbol('remove');

function getAt(root: unknown, p: readonly PropertyKey[]): unknown {
  let cur = root;
  for (const k of p) {
    if (!cur || typeof cur !== 'object') return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[k];
  }
  return cur;
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
