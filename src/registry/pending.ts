/**
 * Pending calls: the records a registry keeps for calls whose tool returned `Tool.pending`, their
 * late results (`submit`), expiry, and turning settled ones into messages for an agent's next turn.
 * Records live in this process, or in the registry's store (src/store/) when it has one: then any
 * process sharing the store and namespace can submit a result (accepted exactly once, by an atomic
 * claim) and take it.
 * The pipeline only hands calls over (CallEnvironment.recordPending); no tool logic lives here.
 */
import { HumanMessage } from '@langchain/core/messages';
import type { Tool } from '../authoring/tool.js';
import type { PendRequest } from '../pipeline/types.js';
import type { PendingCall, ToolEvent, ToolFinalUpdate } from '../pipeline/types.js';
import { truncateOutput, type TruncateOptions } from '../pipeline/truncate.js';
import type { ScopeContext, StoreScope } from '../store/scope.js';

/** Records a registry keeps at once (waiting ones plus settled ones not yet taken); the oldest settled one goes first. */
export const MAX_PENDING_CALLS = 100;
/** How long a pending call waits for `submitResult` when its tool does not say. */
export const DEFAULT_PENDING_EXPIRY_MS = 15 * 60_000;
/** The longest a pending call may wait; a tool asking for more gets this. */
export const MAX_PENDING_EXPIRY_MS = 24 * 60 * 60_000;

/** What `submitResult` accepts: a full result, a text (the output), or an Error (the call failed). */
export type LateResult = Tool.Result | string | Error;

/** The version of a pending record in a store (`{ v, call }`). */
const PENDING_RECORD_VERSION = 1;

/** The pending-call records of one registry. */
export class PendingCalls {
  private readonly calls = new Map<string, PendingCall>();
  private readonly timers = new Map<string, NodeJS.Timeout>();

  constructor(
    private readonly emit: (event: ToolEvent) => void,
    private readonly truncate: TruncateOptions,
    /** The store scope of a call's context, when the registry has a store. */
    private readonly scopeOf: (ctx: ScopeContext) => StoreScope | undefined = () => undefined,
  ) {}

  /** Records a call; a refusal sentence when MAX_PENDING_CALLS calls are all still waiting. */
  add(req: PendRequest): PendingCall | string | Promise<PendingCall | string> {
    const scope = this.scopeOf(req.ctx ?? { sessionID: req.sessionID });
    if (scope) return this.addToStore(scope, req);
    if (this.calls.has(req.callID)) return alreadyWaiting(req.callID);
    if (this.calls.size >= MAX_PENDING_CALLS && !this.evictSettled()) return tooManyWaiting(req.toolId);
    const call = newCall(req);
    this.calls.set(call.toolCallId, call);
    return this.started(call, () => this.expire(call));
  }

  /** Expires `call` on time (`expire`), tells the listeners it is waiting, and returns a copy of it. */
  private started(call: PendingCall, expire: () => void): PendingCall {
    const timer = setTimeout(expire, call.expiresAt - call.createdAt);
    timer.unref();
    this.timers.set(call.toolCallId, timer);
    this.emit({
      type: 'pending',
      toolId: call.tool,
      callID: call.toolCallId,
      call: { ...call },
      timestamp: call.createdAt,
    });
    return { ...call };
  }

  /** Delivers a late result; throws a sentence when no call with that id is waiting. */
  async submit(toolCallId: string, result: LateResult, ctx: ScopeContext = {}): Promise<PendingCall> {
    const scope = this.scopeOf(ctx);
    if (scope) return this.submitToStore(scope, toolCallId, result);
    const call = this.calls.get(toolCallId);
    if (!call) {
      const waiting = [...this.calls.values()].filter((c) => c.status === 'pending').map((c) => c.toolCallId);
      throw new Error(
        `No call ${JSON.stringify(toolCallId)} is waiting for a result. ` +
          (waiting.length ? `Waiting: ${waiting.slice(0, 10).join(', ')}.` : 'No call is waiting.'),
      );
    }
    if (call.status !== 'pending') throw alreadySettled(call);
    // Settle first (synchronously), so a second submit or the expiry cannot race the capping below.
    call.status = 'resolved';
    this.clearTimer(toolCallId);
    const update = await this.finalUpdate(call, result);
    call.update = update;
    this.emit({
      type: 'resolved',
      toolId: call.tool,
      callID: toolCallId,
      call: { ...call },
      update,
      timestamp: update.timestamp,
    });
    return { ...call };
  }

  /** Snapshots of the records, optionally only one session's. */
  async list(filter: { sessionID?: string } = {}, ctx: ScopeContext = filter): Promise<PendingCall[]> {
    const scope = this.scopeOf(ctx);
    if (scope) {
      const now = Date.now();
      return (await this.storeCalls(scope))
        .map((c) => (c.status === 'pending' && c.expiresAt <= now ? this.expired(c) : c))
        .filter((c) => filter.sessionID === undefined || c.sessionID === filter.sessionID);
    }
    return [...this.calls.values()]
      .filter((c) => filter.sessionID === undefined || c.sessionID === filter.sessionID)
      .map((c) => ({ ...c }));
  }

  /** Removes and returns the settled records (resolved or expired), optionally only one session's. */
  async takeSettled(filter: { sessionID?: string } = {}, ctx: ScopeContext = filter): Promise<PendingCall[]> {
    const scope = this.scopeOf(ctx);
    if (scope) return this.takeFromStore(scope, filter);
    const taken: PendingCall[] = [];
    for (const c of this.calls.values()) {
      if (c.status === 'pending' || !c.update) continue;
      if (filter.sessionID !== undefined && c.sessionID !== filter.sessionID) continue;
      this.calls.delete(c.toolCallId);
      taken.push(c);
    }
    return taken;
  }

  /** Stops every expiry timer (the registry is being disposed). */
  dispose(): void {
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
  }

  private expire(call: PendingCall): void {
    this.timers.delete(call.toolCallId);
    if (call.status !== 'pending') return;
    const { update } = Object.assign(call, this.expired(call));
    this.emitExpired(call, update!);
  }

  /** The record `call` becomes when its deadline passed without a result. */
  private expired(call: PendingCall): PendingCall {
    const message =
      `The late result of tool "${call.tool}" (call ${call.toolCallId}) did not arrive by ` +
      `${new Date(call.expiresAt).toISOString()}, so the call failed. Go on without it, or call the tool again if the result is still needed.`;
    const update = this.update(call, { title: call.tool, metadata: { error: message }, output: message }, message);
    return { ...call, status: 'expired', update };
  }

  private emitExpired(call: PendingCall, update: ToolFinalUpdate): void {
    this.emit({
      type: 'expired',
      toolId: call.tool,
      callID: call.toolCallId,
      call: { ...call },
      update,
      timestamp: update.timestamp,
    });
  }

  private async finalUpdate(call: PendingCall, result: LateResult): Promise<ToolFinalUpdate> {
    if (result instanceof Error) {
      const message = result.message || `Tool "${call.tool}" reported an error for call ${call.toolCallId}.`;
      return this.update(call, { title: call.tool, metadata: { error: message }, output: message }, message);
    }
    const full: Tool.Result =
      typeof result === 'string'
        ? { title: call.tool, metadata: {}, output: result }
        : { ...result, metadata: { ...result.metadata } };
    if (typeof full.output !== 'string')
      throw new Error(
        'submitResult needs a text, an Error, or a result { title, metadata, output } with a text output.',
      );
    const capped = await truncateOutput(full.output, call.tool, this.truncate);
    if (capped.truncated) full.metadata = { ...full.metadata, truncated: true, outputPath: capped.outputPath };
    full.output = capped.output;
    const error = full.metadata.error;
    return this.update(call, full, error ? (typeof error === 'string' ? error : full.output) : undefined);
  }

  private update(call: PendingCall, result: Tool.Result, error: string | undefined): ToolFinalUpdate {
    const now = Date.now();
    const update: ToolFinalUpdate = {
      status: error === undefined ? 'completed' : 'error',
      toolId: call.tool,
      callID: call.toolCallId,
      result,
      timestamp: now,
      success: error === undefined,
      durationMs: now - call.createdAt,
    };
    if (error !== undefined) update.error = error;
    return update;
  }

  private evictSettled(): boolean {
    for (const c of this.calls.values()) {
      if (c.status !== 'pending') {
        this.calls.delete(c.toolCallId);
        return true;
      }
    }
    return false;
  }

  private clearTimer(id: string): void {
    const t = this.timers.get(id);
    if (t) clearTimeout(t);
    this.timers.delete(id);
  }

  // --- records in a store --------------------------------------------------------------------

  private async addToStore(scope: StoreScope, req: PendRequest): Promise<PendingCall | string> {
    const existing = await scope.get('pending', req.callID, parsePending);
    if (existing) return alreadyWaiting(req.callID);
    const waiting = (await this.storeCalls(scope)).filter((c) => c.status === 'pending').length;
    if (waiting >= MAX_PENDING_CALLS) return tooManyWaiting(req.toolId);
    const call = newCall(req);
    // Created only if no other process took this call id meanwhile (an atomic create on the engine).
    if (!(await scope.claim('pending', call.toolCallId, 'status', null, record(call))))
      return alreadyWaiting(req.callID);
    // This process expires the call on time; any process reading it after its deadline treats it as expired too.
    return this.started(call, () => {
      this.timers.delete(call.toolCallId);
      const expired = this.expired(call);
      void scope
        .claim('pending', call.toolCallId, 'status', 'pending', record(expired))
        .then((won) => won && this.emitExpired(expired, expired.update!))
        .catch(() => undefined);
    });
  }

  private async submitToStore(scope: StoreScope, toolCallId: string, result: LateResult): Promise<PendingCall> {
    const call = await scope.get('pending', toolCallId, parsePending);
    if (!call) {
      const waiting = (await this.storeCalls(scope)).filter((c) => c.status === 'pending').map((c) => c.toolCallId);
      throw new Error(
        `No call ${JSON.stringify(toolCallId)} is waiting for a result. ` +
          (waiting.length ? `Waiting: ${waiting.slice(0, 10).join(', ')}.` : 'No call is waiting.'),
      );
    }
    if (call.status === 'pending' && call.expiresAt <= Date.now()) {
      await scope.claim('pending', toolCallId, 'status', 'pending', record(this.expired(call)));
      throw alreadySettled({ ...call, status: 'expired' });
    }
    if (call.status !== 'pending') throw alreadySettled(call);
    const update = await this.finalUpdate(call, result);
    const resolved: PendingCall = { ...call, status: 'resolved', update };
    // The claim is the one atomic step: of two processes submitting at once, exactly one wins.
    if (!(await scope.claim('pending', toolCallId, 'status', 'pending', record(resolved)))) {
      const now = await scope.get('pending', toolCallId, parsePending);
      throw alreadySettled(now ?? { ...call, status: 'resolved' });
    }
    this.clearTimer(toolCallId);
    this.emit({
      type: 'resolved',
      toolId: call.tool,
      callID: toolCallId,
      call: { ...resolved },
      update,
      timestamp: update.timestamp,
    });
    return { ...resolved };
  }

  private async takeFromStore(scope: StoreScope, filter: { sessionID?: string }): Promise<PendingCall[]> {
    const now = Date.now();
    const taken: PendingCall[] = [];
    for (const c of await this.storeCalls(scope)) {
      if (filter.sessionID !== undefined && c.sessionID !== filter.sessionID) continue;
      const settled = c.status === 'pending' && c.expiresAt <= now ? this.expired(c) : c;
      if (settled.status === 'pending' || !settled.update) continue;
      // Claimed before it is handed out: two processes taking at once never both deliver it.
      if (!(await scope.claim('pending', c.toolCallId, 'status', c.status, { ...record(settled), status: 'taken' })))
        continue;
      await scope.delete('pending', c.toolCallId);
      this.clearTimer(c.toolCallId);
      taken.push(settled);
    }
    return taken;
  }

  private async storeCalls(scope: StoreScope): Promise<PendingCall[]> {
    const items = await scope.all('pending');
    return items
      .map((item) => scope.parsed('pending', item, parsePending))
      .filter((c) => (c.status as string) !== 'taken');
  }
}

function newCall(req: PendRequest): PendingCall {
  const now = Date.now();
  const asked = req.options.expiresInMs;
  const ms =
    typeof asked === 'number' && Number.isFinite(asked) && asked > 0
      ? Math.min(asked, MAX_PENDING_EXPIRY_MS)
      : DEFAULT_PENDING_EXPIRY_MS;
  return {
    toolCallId: req.callID,
    tool: req.toolId,
    args: req.args,
    sessionID: req.sessionID,
    status: 'pending',
    message: req.options.message ?? '',
    createdAt: now,
    expiresAt: now + ms,
  };
}

/** A store record of a call; `status` is a top-level field, so a claim can compare it. */
function record(call: PendingCall): Record<string, unknown> {
  return { v: PENDING_RECORD_VERSION, status: call.status, call: { ...call, args: call.args ?? null } };
}

function parsePending(value: Record<string, unknown>): PendingCall | undefined {
  const c = value.call as Record<string, unknown> | undefined;
  if (value.v !== PENDING_RECORD_VERSION || !c || typeof c !== 'object') return undefined;
  const status = value.status;
  if (
    typeof c.toolCallId !== 'string' ||
    typeof c.tool !== 'string' ||
    typeof c.sessionID !== 'string' ||
    typeof c.message !== 'string' ||
    typeof c.createdAt !== 'number' ||
    typeof c.expiresAt !== 'number' ||
    !['pending', 'resolved', 'expired', 'taken'].includes(status as string) ||
    (status !== 'pending' && (!c.update || typeof c.update !== 'object'))
  )
    return undefined;
  return { ...(c as unknown as PendingCall), status: status as PendingCall['status'] };
}

/** The refusal of a second result: the call already completed (or expired). */
function alreadySettled(call: PendingCall): Error {
  const when = call.update ? ` at ${new Date(call.update.timestamp).toISOString()}` : '';
  return new Error(
    call.status === 'expired'
      ? `Call ${JSON.stringify(call.toolCallId)} is already expired${when}: its deadline passed, so its result cannot be submitted. Start the call again if the result is still needed.`
      : `Call ${JSON.stringify(call.toolCallId)} already completed${when} (already resolved): its result was accepted once and cannot be submitted again; this one was not used.`,
  );
}

/**
 * Messages that bring settled pending calls (from `registry.takeSettled()`) to an agent's next turn.
 * They are human messages, not ToolMessages: the turn that made the call has ended, and providers
 * refuse a tool message that answers no tool call of the message before it.
 */
export function lateResultMessages(calls: readonly PendingCall[]): HumanMessage[] {
  return calls
    .filter((c) => c.update)
    .map((c) => {
      const u = c.update!;
      const head = u.success
        ? `The late result of your earlier call to ${c.tool} (call ${c.toolCallId}) has arrived:`
        : `Your earlier call to ${c.tool} (call ${c.toolCallId}) failed:`;
      return new HumanMessage({
        content: `${head}\n\n${u.success ? u.result.output : (u.error ?? u.result.output)}`,
        additional_kwargs: { toolbelt_late_result: { toolCallId: c.toolCallId, tool: c.tool, status: c.status } },
      });
    });
}

/** The refusal of a second call with an id that is already waiting. */
function alreadyWaiting(callID: string): string {
  return `Call id ${JSON.stringify(callID)} is already waiting for a late result. Use a new call id.`;
}

/** The refusal past MAX_PENDING_CALLS waiting calls. */
function tooManyWaiting(toolId: string): string {
  return (
    `Tool "${toolId}" could not wait for a late result: ${MAX_PENDING_CALLS} calls are already waiting. ` +
    'Do not start more such calls; go on without this result, or wait until earlier ones have arrived.'
  );
}
