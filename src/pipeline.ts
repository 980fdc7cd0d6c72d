/**
 * The one execution path every caller shares (LangChain, registry.execute, MCP, CLI): validate,
 * limit, run under abort and timeout, stream progress, cap output, report. Behaviour cannot drift
 * between entry points because there is only this one.
 */
import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import type { Tool } from './tool.js';
import { truncateOutput, type TruncateOptions } from './truncate.js';

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
    if (!Number.isInteger(limit) || limit < 1) throw new Error(`Concurrency limit must be a positive integer, got ${limit}.`);
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

  /** Waits for a slot; resolves to its release function. Rejects if `signal` aborts first. */
  acquire(signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    if (this.active < this.limit) {
      this.active++;
      return Promise.resolve(this.releaser());
    }
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
  defaultTimeoutMs: number;
  truncate: TruncateOptions;
  emit(event: ToolEvent): void;
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
    const where = issue.path.length ? issue.path.map((p) => (typeof p === 'number' ? `[${p}]` : String(p))).join('.').replace(/\.\[/g, '[') : '(arguments)';
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
      else if ((expected === 'number' || expected === 'int') && v !== '' && Number.isFinite(Number(v))) next = Number(v);
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
export function effectiveTimeout(tool: Tool.Initialized, registryDefault: number, override?: number): number | undefined {
  const policy = tool.timeout ?? {};
  let ms = override ?? (policy.managed ? undefined : (policy.defaultMs ?? registryDefault));
  if (ms !== undefined && policy.maxMs !== undefined) ms = Math.min(ms, policy.maxMs);
  if (ms === undefined && policy.maxMs !== undefined) ms = policy.maxMs;
  return ms !== undefined && Number.isFinite(ms) && ms > 0 ? ms : undefined;
}

/** Runs one call through every step; never rejects: failures become an `error` final update. */
export async function runCall(host: PipelineHost, req: CallRequest): Promise<ToolFinalUpdate> {
  const { tool } = req;
  const toolId = tool.id;
  const callID = req.callID ?? req.ctx?.callID ?? randomUUID();
  const started = Date.now();
  const listeners = req.listeners ?? [];
  const partial: Tool.Result = { title: '', metadata: {}, output: '' };
  let settled = false;

  const deliver = (update: ToolUpdate) => {
    for (const listener of listeners) {
      try {
        listener(update);
      } catch (err) {
        host.emit({ type: 'warning', toolId, message: `onToolResult listener threw: ${(err as Error).message}`, timestamp: Date.now() });
      }
    }
  };

  const finish = (error: string | undefined, result: Tool.Result): ToolFinalUpdate => {
    settled = true;
    const durationMs = Date.now() - started;
    const update: ToolFinalUpdate = {
      status: error === undefined ? 'completed' : 'error',
      toolId,
      callID,
      result,
      timestamp: Date.now(),
      success: error === undefined,
      durationMs,
      ...(error !== undefined ? { error } : {}),
    };
    host.record(toolId, durationMs, error);
    deliver(update);
    host.emit({ type: error === undefined ? 'completed' : 'failed', toolId, callID, update, timestamp: update.timestamp } as ToolEvent);
    return update;
  };
  const fail = (message: string) =>
    finish(message, { title: partial.title || toolId, metadata: { ...partial.metadata, error: message }, output: message });

  host.emit({ type: 'requested', toolId, callID, args: req.args, timestamp: started });

  let args: unknown;
  try {
    args = parseArguments(toolId, tool.parameters, req.args);
  } catch (err) {
    return fail((err as Error).message);
  }

  const controller = new AbortController();
  let abortMessage = '';
  const onCallerAbort = () => {
    const reason = req.signal?.aborted ? req.signal.reason : req.ctx?.abort?.reason;
    const why = reason instanceof Error ? reason.message : typeof reason === 'string' ? reason : '';
    abortMessage = `Tool "${toolId}" was aborted${why && why !== 'This operation was aborted' ? ` (${why})` : ''} before it finished.`;
    controller.abort(new Error(abortMessage));
  };
  const callerSignals = [req.signal, req.ctx?.abort].filter((s): s is AbortSignal => !!s);
  for (const s of callerSignals) {
    if (s.aborted) {
      onCallerAbort();
      break;
    }
    s.addEventListener('abort', onCallerAbort, { once: true });
  }
  let release: (() => void) | undefined;
  let timer: NodeJS.Timeout | undefined;
  try {
    if (controller.signal.aborted) return fail(abortMessage);
    if (tool.concurrency !== 'exempt') {
      try {
        release = await host.semaphore.acquire(controller.signal);
      } catch {
        return fail(abortMessage || `Tool "${toolId}" was aborted while waiting for a free slot.`);
      }
    }
    const timeoutMs = effectiveTimeout(tool, host.defaultTimeoutMs, req.timeoutMs);
    if (timeoutMs !== undefined) {
      timer = setTimeout(() => {
        abortMessage =
          `Tool "${toolId}" timed out after ${timeoutMs} ms and was stopped. ` +
          'Try a smaller request (narrower path, fewer items) or a larger timeout if the tool accepts one.';
        controller.abort(new Error(abortMessage));
      }, timeoutMs);
    }

    const ctx: Tool.Context = {
      sessionID: req.ctx?.sessionID ?? 'default',
      messageID: req.ctx?.messageID ?? callID,
      agent: req.ctx?.agent ?? 'agent',
      extra: req.ctx?.extra,
      callID,
      abort: controller.signal,
      metadata: (u: Tool.MetadataUpdate) => {
        if (settled || !u) return;
        if (typeof u.title === 'string') partial.title = u.title;
        if (u.metadata) partial.metadata = { ...partial.metadata, ...u.metadata };
        const update: ToolUpdate = { status: 'running', toolId, callID, result: { ...partial, metadata: { ...partial.metadata } }, timestamp: Date.now() };
        deliver(update);
        host.emit({ type: 'progress', toolId, callID, update, timestamp: update.timestamp });
      },
    };

    let result: Tool.Result;
    try {
      const running = Promise.resolve().then(() => tool.execute(args as never, ctx));
      running.catch(() => undefined); // an abandoned (aborted) call may still reject later
      result = await raceAbort(running, controller.signal);
    } catch (err) {
      if (controller.signal.aborted && abortMessage) return fail(abortMessage);
      return fail(errorText(err, toolId));
    }
    if (!result || typeof result !== 'object' || typeof result.output !== 'string') {
      return fail(`Tool "${toolId}" returned an invalid result (expected { title, metadata, output }). This is a bug in the tool.`);
    }
    const metadata = { ...(result.metadata ?? {}) } as Tool.Metadata;
    const final: Tool.Result = { title: result.title ?? partial.title ?? toolId, metadata, output: result.output };
    if (result.attachments?.length) final.attachments = result.attachments;
    if (metadata.error) {
      const message = typeof metadata.error === 'string' ? metadata.error : final.output || `Tool "${toolId}" reported an error.`;
      return finish(message, final);
    }
    if (metadata.truncated === undefined) {
      const capped = await truncateOutput(final.output, toolId, host.truncate);
      if (capped.truncated) {
        final.output = capped.output;
        metadata.truncated = true;
        metadata.outputPath = capped.outputPath;
      }
    }
    return finish(undefined, final);
  } finally {
    if (timer) clearTimeout(timer);
    release?.();
    for (const s of callerSignals) s.removeEventListener('abort', onCallerAbort);
  }
}

function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(abortReason(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortReason(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
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
