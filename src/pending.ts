/**
 * Pending calls: the records a registry keeps for calls whose tool returned `Tool.pending`, their
 * late results (`submit`), expiry, and turning settled ones into messages for an agent's next turn.
 * The pipeline only hands calls over (PipelineHost.pend); no tool logic lives here.
 */
import { HumanMessage } from '@langchain/core/messages';
import type { Tool } from './tool.js';
import type { PendRequest } from './pipeline/call.js';
import type { PendingCall, ToolEvent, ToolFinalUpdate } from './pipeline/types.js';
import { truncateOutput, type TruncateOptions } from './truncate.js';

/** Records a registry keeps at once (waiting ones plus settled ones not yet taken); the oldest settled one goes first. */
export const MAX_PENDING_CALLS = 100;
/** How long a pending call waits for `submitResult` when its tool does not say. */
export const DEFAULT_PENDING_EXPIRY_MS = 15 * 60_000;
/** The longest a pending call may wait; a tool asking for more gets this. */
export const MAX_PENDING_EXPIRY_MS = 24 * 60 * 60_000;

/** What `submitResult` accepts: a full result, a text (the output), or an Error (the call failed). */
export type LateResult = Tool.Result | string | Error;

/** The pending-call records of one registry. */
export class PendingCalls {
  private readonly calls = new Map<string, PendingCall>();
  private readonly timers = new Map<string, NodeJS.Timeout>();

  constructor(
    private readonly emit: (event: ToolEvent) => void,
    private readonly truncate: TruncateOptions,
  ) {}

  /** Records a call; a refusal sentence when MAX_PENDING_CALLS calls are all still waiting. */
  add(req: PendRequest): PendingCall | string {
    if (this.calls.has(req.callID))
      return `Call id ${JSON.stringify(req.callID)} is already waiting for a late result. Use a new call id.`;
    if (this.calls.size >= MAX_PENDING_CALLS && !this.evictSettled())
      return (
        `Tool "${req.toolId}" could not wait for a late result: ${MAX_PENDING_CALLS} calls are already waiting. ` +
        'Do not start more such calls; go on without this result, or wait until earlier ones have arrived.'
      );
    const now = Date.now();
    const asked = req.options.expiresInMs;
    const ms =
      typeof asked === 'number' && Number.isFinite(asked) && asked > 0
        ? Math.min(asked, MAX_PENDING_EXPIRY_MS)
        : DEFAULT_PENDING_EXPIRY_MS;
    const call: PendingCall = {
      toolCallId: req.callID,
      tool: req.toolId,
      args: req.args,
      sessionID: req.sessionID,
      status: 'pending',
      message: req.options.message ?? '',
      createdAt: now,
      expiresAt: now + ms,
    };
    this.calls.set(call.toolCallId, call);
    const timer = setTimeout(() => this.expire(call), ms);
    timer.unref();
    this.timers.set(call.toolCallId, timer);
    this.emit({ type: 'pending', toolId: call.tool, callID: call.toolCallId, call: { ...call }, timestamp: now });
    return { ...call };
  }

  /** Delivers a late result; throws a sentence when no call with that id is waiting. */
  async submit(toolCallId: string, result: LateResult): Promise<PendingCall> {
    const call = this.calls.get(toolCallId);
    if (!call) {
      const waiting = [...this.calls.values()].filter((c) => c.status === 'pending').map((c) => c.toolCallId);
      throw new Error(
        `No call ${JSON.stringify(toolCallId)} is waiting for a result. ` +
          (waiting.length ? `Waiting: ${waiting.slice(0, 10).join(', ')}.` : 'No call is waiting.'),
      );
    }
    if (call.status !== 'pending')
      throw new Error(
        `Call ${JSON.stringify(toolCallId)} is already ${call.status}; its result cannot be submitted again.`,
      );
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
  list(filter: { sessionID?: string } = {}): PendingCall[] {
    return [...this.calls.values()]
      .filter((c) => filter.sessionID === undefined || c.sessionID === filter.sessionID)
      .map((c) => ({ ...c }));
  }

  /** Removes and returns the settled records (resolved or expired), optionally only one session's. */
  takeSettled(filter: { sessionID?: string } = {}): PendingCall[] {
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
    call.status = 'expired';
    const message =
      `The late result of tool "${call.tool}" (call ${call.toolCallId}) did not arrive by ` +
      `${new Date(call.expiresAt).toISOString()}, so the call failed. Go on without it, or call the tool again if the result is still needed.`;
    const update = this.update(call, { title: call.tool, metadata: { error: message }, output: message }, message);
    call.update = update;
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
