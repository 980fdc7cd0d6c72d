/**
 * The registry: tools with their permissions and descriptions, filtering by a grant, the shared
 * limits (concurrency, timeout, output caps), statistics and events. `Registry` is the class, `defaultRegistry`
 * the process-wide instance; `createRegistry()` makes isolated ones (one per agent or tenant). The
 * names before 1.0 (`ToolRegistryImpl`, `ToolRegistryType`, `ToolRegistry`) stay as deprecated aliases.
 * Must not run a call's steps itself (pipeline/) nor import src/mcp (tool sources are adopted, not imported).
 * Over 400 lines: the registry's public API (registration, filtering, tools(), execute(), stats, events) in one class.
 */
import { randomUUID } from 'node:crypto';
import type { StructuredToolInterface } from '@langchain/core/tools';
import { Tool } from '../authoring/tool.js';
import {
  ALL_PERMISSIONS,
  assertPermissions,
  isAllowed,
  toGrantSet,
  type PermissionGrant,
  type ToolPermissions,
} from '../authoring/permissions.js';
import { loadDescription } from '../authoring/description.js';
import { runCall, failCall, type CallEnvironment } from '../pipeline/call.js';
import { errorText } from '../pipeline/errors.js';
import { Semaphore } from '../pipeline/semaphore.js';
import { DeadlineQueue } from '../pipeline/deadlines.js';
import type {
  McpStatusEvent,
  McpToolsEvent,
  OnToolResult,
  ToolEvent,
  ToolFinalUpdate,
  ToolStats,
} from '../pipeline/types.js';
import type { TruncateOptions } from '../pipeline/truncate.js';
import { toLangChainTool, type ArtifactMode } from './langchain.js';
import { Tenant, bindTenant } from '../workspace/tenant.js';
import { PolicyGate, type GateOptions } from '../policy/gate.js';
import { executeBatch, type BatchCall } from './batch.js';
import type { Policy } from '../policy/policy.js';
import type { CheckEnvironment } from '../policy/checks.js';
import { PendingCalls, type LateResult } from './pending.js';
import { Telemetry, type TelemetryOptions } from '../pipeline/telemetry.js';
import type { PendingCall } from '../pipeline/types.js';
import {
  installSandbox,
  sandboxPolicyFacts,
  type SandboxOptions,
  type SandboxRuntime,
  type SandboxStatus,
} from '../sandbox/index.js';
import type { NamespaceContext, StoreNamespace, ToolStore } from '../store/types.js';
import { storeScope } from '../store/scope.js';
import { storedApprovals } from '../policy/approvals.js';
import { installSkills } from '../skills/catalog.js';
import type { SkillsOptions } from '../skills/types.js';
import { checkOptions } from '../schema/options.js';
import { executeOptionsSchema, initContextSchema, registryOptionsSchema, toolsOptionsSchema } from './options.js';

/** Default number of tool calls a registry runs at once; more wait in a queue. */
export const DEFAULT_CONCURRENCY = 8;
/** Default per-call timeout (ms) for tools that do not manage their own time. */
export const DEFAULT_TIMEOUT_MS = 30_000;

/** Options of `createRegistry`. */
export interface RegistryOptions {
  /** Calls run at once (default 8); excess calls queue. */
  concurrency?: number;
  /** Default per-call timeout in ms (default 30,000). */
  timeoutMs?: number;
  /** Output caps (default 2000 lines / 50 KB) and where full outputs are saved. */
  truncate?: TruncateOptions;
  /** Allow / ask / deny rules every call obeys (see docs/permissions.md); default: none. */
  policy?: Policy;
  /** The repeated-call guard (default: the policy's, else on at 3 identical calls in a row); `false` turns it off. */
  loopGuard?: GateOptions['loopGuard'];
  /** The OS sandbox for bash and the processes built-in tools start (docs/sandbox.md); default mode `off`. */
  sandbox?: SandboxOptions;
  /**
   * Where state that outlives the process lives (todo lists, memory notes, pending calls, undo history): any
   * LangGraph `BaseStore`, or `openStore(url)`. Default: in this process (memory notes as files).
   */
  store?: ToolStore;
  /** The namespace that state lives under (default: this registry's own); see docs/state.md. */
  namespace?: StoreNamespace;
  /** How the store is named in messages (default "the state store"; never put a password here). */
  storeLabel?: string;
  /** OpenTelemetry spans of calls (docs/telemetry.md): on when `@opentelemetry/api` and a provider are there. */
  telemetry?: TelemetryOptions;
  /** Where the `skill` tool finds Agent Skills, its listing budget, and whether `allowed-tools` count (docs/skills.md). */
  skills?: SkillsOptions;
}

/** How a tool is registered; each field overrides what the tool declared in `Tool.define`. */
export interface RegisterOptions {
  /** Required when the tool declares none. */
  permissions?: ToolPermissions;
  /** A `.txt` whose (templated) text replaces the inline description. */
  descriptionPath?: string;
  danger?: Tool.DangerLevel;
  /** `useless`: identical calls in a row never give anything new (see `Tool.About.repeats`). */
  repeats?: 'useless';
  /** Replace an existing tool with the same id instead of throwing. */
  replace?: boolean;
}

/** A registered tool. */
export interface RegistryEntry {
  info: Tool.Info;
  permissions: ToolPermissions;
  descriptionPath?: string;
  danger?: Tool.DangerLevel;
  repeats?: 'useless';
}

/** A tool that cannot run under an init context, and why (`registry.unavailable()`). */
export interface UnavailableTool {
  id: string;
  /** The tool's own sentence: what is missing and what to configure. */
  reason: string;
}

/** Builds the context of a call made by an agent: who is calling, in which session. */
export type CreateContext = (toolId: string, callID: string) => Partial<Omit<Tool.Context, 'metadata' | 'callID'>>;

/** Options of `tools()`. */
export interface ToolsOptions {
  /** Only these tool ids (intersected with `enabledPermissions` when both are given). */
  ids?: string[];
  /** Only tools whose required permissions are all granted. */
  enabledPermissions?: PermissionGrant;
  /**
   * The model that will call these tools (`openai:gpt-5`, `claude-sonnet-4-5`): with
   * `registerBuiltinTools(registry, { edits: 'auto' })` it decides between apply_patch and edit + write.
   */
  model?: string;
  initCtx?: Tool.InitContext;
  createContext?: CreateContext;
  /** Receives every progress and final update of the calls these tools make. */
  onToolResult?: OnToolResult;
  /** Per-call timeout override (ms) for these tools. */
  timeoutMs?: number;
  /** Aborts every call made through these tools. */
  signal?: AbortSignal;
  /**
   * Shape schemas for OpenAI strict mode: every field required, optional ones nullable (`null`
   * reaches execute as absent). Pair it with `new ChatOpenAI({ supportsStrictToolCalling: true })`
   * or `bindTools(tools, { strict: true })`.
   */
  strict?: boolean;
  /**
   * Fit each description under this many characters, for endpoints that refuse longer ones (Azure
   * OpenAI and several proxies: 1,024): the opening lines stay, lines about a parameter move into its
   * description, the rest is left out with a pointer to `toolbelt run <tool> --help` (docs/providers.md).
   */
  maxDescriptionChars?: number;
  /**
   * What each ToolMessage carries as `artifact`: `'result'` (default) the whole result; `'minimal'`
   * only attachments, structuredContent and `tool_search`'s result (the text already holds the rest).
   * A checkpointer writes and revives every message of a thread at every graph step, so under
   * MemorySaver a history of `'result'` artifacts costs more per step as the thread grows (docs/performance.md).
   */
  artifact?: ArtifactMode;
}

/** Options of `execute()` beyond the contract's four arguments. */
export interface ExecuteOptions {
  /** Refuse the call unless the tool's required permissions are granted. */
  enabledPermissions?: PermissionGrant;
  /** Per-call timeout override (ms). */
  timeoutMs?: number;
  /** Receives every update of this call. */
  onToolResult?: OnToolResult;
  signal?: AbortSignal;
  callID?: string;
  /**
   * The tool set the call is made from, for tools that list other tools (tool_search); default:
   * the tools `enabledPermissions` grants, else every registered tool.
   */
  toolSet?: Tool.ToolSet;
}

/**
 * Something outside the registry that keeps tools registered in it and is owned by it, such as
 * an MCP server connection: its tools live and die with it, and `close()` unregisters them.
 */
export interface ToolSource {
  /** `mcp` for MCP server connections. */
  readonly kind: string;
  readonly name: string;
  close(): Promise<void>;
  /** Called by `tools()` before it picks the tools it hands out (deferral plans its 'auto' set here). */
  prepare?(initCtx: Tool.InitContext): Promise<void>;
  /** The tools this source defers (offered through a search until found); see src/mcp/lazy.ts. */
  deferredTools?(): ReadonlyArray<{ id: string }>;
}

const DEFAULT_INIT_CTX: Tool.InitContext = Object.freeze({});

/** A registry of tools. Use the default `ToolRegistry` or make your own with `createRegistry()`. */
export class Registry {
  private readonly entries = new Map<string, RegistryEntry>();
  private readonly statsByTool = new Map<
    string,
    { calls: number; failures: number; totalDurationMs: number; lastError?: string }
  >();
  private readonly subscribers = new Set<(event: ToolEvent) => void>();
  private readonly ownedSources = new Set<ToolSource>();
  private readonly disposers = new Set<() => Promise<void> | void>();
  private initCache = new WeakMap<Tool.InitContext, Map<string, Promise<Tool.Initialized>>>();
  /** Tools declaring `perToolSet`, initialised once per tool set (and init context). */
  private setCache = new WeakMap<Tool.ToolSet, WeakMap<Tool.InitContext, Map<string, Promise<Tool.Initialized>>>>();
  /** The tool set of each permission grant `execute` was given (at most one per subset of the permissions). */
  private readonly grantSets = new Map<string, Tool.ToolSet>();
  /** Which tools `tools({ model })` offers a model (`offerByModel`); none: every selected tool. */
  private modelOffer: ((id: string, model: string | undefined) => boolean) | undefined;
  private readonly semaphore: Semaphore;
  private defaultTimeoutMs: number;
  private readonly truncateOptions: TruncateOptions;
  /** This registry's own state: read tracker, saved outputs, todo lists. Never shared with another registry. */
  readonly tenant: Tenant;
  /** Init contexts bound to this registry's tenant, one per caller-given context. */
  private readonly boundContexts = new WeakMap<Tool.InitContext, Tool.InitContext>();
  /** The host view the pipeline uses; one object, reused by every call. */
  private readonly host: CallEnvironment;
  /** Step 2 of every call: loop guard and policy. */
  private readonly gate: PolicyGate;
  /** Calls whose tools returned `Tool.pending`, until their results are taken. */
  private readonly pendingCalls: PendingCalls;
  /** The sandbox bash and the built-in tools' processes run in (probed once, on first use). */
  private readonly sandboxRuntime: SandboxRuntime;
  /** The spans of this registry's calls (and of `task`'s sub-agents). */
  readonly telemetry: Telemetry;

  constructor(options: RegistryOptions = {}) {
    checkOptions(registryOptionsSchema, options);
    this.semaphore = new Semaphore(options.concurrency ?? DEFAULT_CONCURRENCY);
    this.defaultTimeoutMs = validTimeout(options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    this.tenant = Tenant.forRegistry({
      outputDir: options.truncate?.outputDir,
      store: { store: options.store, namespace: options.namespace, label: options.storeLabel },
    });
    this.truncateOptions = { ...options.truncate, store: this.tenant.outputs };
    // Getters read the registry's current values (the timeout can change, subscribers come and go).
    const timeoutMs = () => this.defaultTimeoutMs;
    const subscribers = this.subscribers;
    this.telemetry = new Telemetry(options.telemetry);
    this.host = {
      semaphore: this.semaphore,
      deadlines: new DeadlineQueue(),
      get defaultTimeoutMs() {
        return timeoutMs();
      },
      truncate: this.truncateOptions,
      emit: (event) => this.emit(event),
      get listening() {
        return subscribers.size > 0;
      },
      recordStats: (toolId, durationMs, error) => this.recordStats(toolId, durationMs, error),
      authorize: (call) => this.gate.authorize(call),
      checkUrl: (call, url) => this.gate.checkUrl(call, url),
      readFilter: (call) => this.gate.readFilter(call),
      judgeOutput: (call, output) => this.gate.settled(call, output),
      recordPending: (request) => this.pendingCalls.add(request),
      telemetry: this.telemetry,
    };
    this.pendingCalls = new PendingCalls(
      (event) => this.emit(event),
      this.truncateOptions,
      (ctx) => storeScope(this.tenant, ctx),
    );
    this.onDispose(() => this.pendingCalls.dispose());
    this.sandboxRuntime = installSandbox(this.tenant, options.sandbox, (sandbox) =>
      this.emit({ type: 'sandbox', sandbox, timestamp: Date.now() }),
    );
    this.onDispose(() => this.sandboxRuntime.close());
    const skills = installSkills(this.tenant, options.skills, (message) => this.warn('skill', message));
    this.gate = new PolicyGate(
      (id) => {
        const entry = this.entries.get(id);
        return entry && { permissions: entry.permissions.required, danger: entry.danger, repeats: entry.repeats };
      },
      {
        policy: options.policy,
        loopGuard: options.loopGuard,
        // sandbox.autoAllow: the policy asks whether a call's commands would run contained.
        sandbox: (initCtx) => sandboxPolicyFacts(this.sandboxRuntime, initCtx),
        skills: (initCtx) => skills.policyGrants(initCtx),
      },
      (ctx) => {
        const scope = storeScope(this.tenant, ctx);
        return scope && storedApprovals(scope);
      },
    );
  }

  /** The policy every call obeys, if any. */
  get policy(): Policy | undefined {
    return this.gate.policy;
  }

  /** Sets (or, with undefined, removes) the policy; the loop guard follows its settings unless given. */
  setPolicy(policy: Policy | undefined, loopGuard?: GateOptions['loopGuard']): void {
    this.gate.configure({ policy, loopGuard });
    // tool_search's listing leaves out what the policy denies: list again under the new one.
    this.clearInitCaches();
  }

  /**
   * Offers tool `id` to a model only when `offer(id, model)` says so: `tools({ model })` and
   * `unavailable` leave the others out (`model` is undefined when the caller names none).
   * registerBuiltinTools' `edits: 'auto'` sets one (apply_patch or edit + write, by model).
   */
  offerByModel(offer: ((id: string, model: string | undefined) => boolean) | undefined): void {
    this.modelOffer = offer;
  }

  /** Where the policy resolves paths for calls made under `initCtx` (for `policyMiddleware`'s `env`). */
  policyEnvironment(initCtx?: Tool.InitContext): CheckEnvironment {
    return this.gate.environment(initCtx);
  }

  /**
   * Whether commands run in the OS sandbox under `initCtx` (its `sandbox` overriding the registry's),
   * and why; the engine is probed once per registry. Also told to subscribers as a `sandbox` event.
   */
  sandboxStatus(initCtx?: Tool.InitContext): Promise<SandboxStatus> {
    return this.sandboxRuntime.status(this.sandboxRuntime.optionsFor(initCtx));
  }

  /** Registers a tool with the permissions, `.txt` description and danger it declared, or those `options` give. */
  register(info: Tool.Info, options: RegisterOptions = {}): this {
    if (!info || typeof info.init !== 'function')
      throw new Error('register() needs a tool made by Tool.define(id, definition).');
    Tool.assertValidId(info.id);
    const permissions = options.permissions ?? info.permissions;
    if (!permissions)
      throw new Error(
        `Tool "${info.id}" declares no permissions: pass them, e.g. register(tool, { permissions: { required: ['read'] } }), or declare them in Tool.define({ id, permissions }, ...).`,
      );
    assertPermissions(permissions, info.id);
    if (this.entries.has(info.id) && !options.replace) {
      throw new Error(
        `A tool named "${info.id}" is already registered. Unregister it first, or pass { replace: true }.`,
      );
    }
    this.entries.set(info.id, {
      info,
      permissions: { required: [...permissions.required], optional: [...(permissions.optional ?? [])] },
      descriptionPath: options.descriptionPath ?? info.descriptionPath,
      danger: options.danger ?? info.danger,
      repeats: options.repeats ?? info.repeats,
    });
    this.clearInitCaches();
    return this;
  }

  /** Removes a tool; returns whether it was registered. */
  unregister(id: string): boolean {
    const had = this.entries.delete(id);
    if (had) this.clearInitCaches();
    return had;
  }

  /** The registered entry for `id`, if any. */
  get(id: string): RegistryEntry | undefined {
    return this.entries.get(id);
  }

  /** Whether `id` is registered. */
  has(id: string): boolean {
    return this.entries.has(id);
  }

  /** Registered ids, in registration order. */
  ids(): string[] {
    return [...this.entries.keys()];
  }

  /** Registered entries, in registration order. */
  all(): RegistryEntry[] {
    return [...this.entries.values()];
  }

  /** The permissions `id` was registered with. */
  permissions(id: string): ToolPermissions | undefined {
    const p = this.entries.get(id)?.permissions;
    return p && { required: [...p.required], optional: [...(p.optional ?? [])] };
  }

  /** How many tools are registered. */
  get size(): number {
    return this.entries.size;
  }

  /** Removes every tool and its statistics. */
  clear(): void {
    this.entries.clear();
    this.statsByTool.clear();
    this.clearInitCaches();
  }

  /** Ids of the tools whose required permissions are all in `granted`. */
  enabled(granted: PermissionGrant): string[] {
    return this.all()
      .filter((e) => isAllowed(e.permissions, granted))
      .map((e) => e.info.id);
  }

  /** Changes the concurrency limit (queued calls start if the new limit allows). */
  setConcurrency(limit: number): void {
    this.semaphore.setLimit(limit);
  }

  /** Changes the default per-call timeout (ms). */
  setDefaultTimeout(ms: number): void {
    this.defaultTimeoutMs = validTimeout(ms);
  }

  /** Calls running and waiting right now. */
  load(): { running: number; queued: number } {
    return { running: this.semaphore.running, queued: this.semaphore.queued };
  }

  /**
   * The initialised tool for `id` under `initCtx`, with its external description loaded. Cached
   * per init-context object: descriptions are read once per init, not per call. A tool declaring
   * `perToolSet` is initialised once per `toolSet` too, and sees it as `initCtx.toolSet`.
   */
  async initialized(
    id: string,
    initCtx: Tool.InitContext = DEFAULT_INIT_CTX,
    toolSet?: Tool.ToolSet,
  ): Promise<Tool.Initialized> {
    const entry = this.entries.get(id);
    if (!entry) throw new Error(this.unknownToolMessage(id));
    const scoped = entry.info.perToolSet === true && toolSet !== undefined;
    let perSet = scoped ? this.setCache.get(toolSet) : this.initCache;
    if (!perSet) this.setCache.set(toolSet!, (perSet = new WeakMap()));
    let perCtx = perSet.get(initCtx);
    if (!perCtx) perSet.set(initCtx, (perCtx = new Map<string, Promise<Tool.Initialized>>()));
    let pending = perCtx.get(id);
    if (!pending) {
      pending = this.initEntry(entry, initCtx, scoped ? toolSet : undefined);
      perCtx.set(id, pending);
      pending.catch(() => perCtx.delete(id));
    }
    return pending;
  }

  /**
   * The tools `ids` and `enabledPermissions` select, as a live `Tool.ToolSet`: what a tool that
   * lists other tools (tool_search) may show a caller holding that grant.
   */
  toolSet(options: Pick<ToolsOptions, 'ids' | 'enabledPermissions'> = {}): Tool.ToolSet {
    const ids = options.ids && new Set(options.ids);
    const grant = options.enabledPermissions && toGrantSet(options.enabledPermissions);
    return {
      has: (id) => {
        const entry = this.entries.get(id);
        return !!entry && (!ids || ids.has(id)) && (!grant || isAllowed(entry.permissions, grant));
      },
    };
  }

  /**
   * LangChain tools for `createAgent`, filtered by ids and/or permissions. A tool that cannot run
   * under `initCtx` (its `unavailable` reason: bash on a backend without `execute`, task without
   * sub-agents) is left out; `unavailable()` says which and why.
   */
  async tools(options: ToolsOptions = {}): Promise<StructuredToolInterface[]> {
    checkOptions(toolsOptionsSchema, options);
    const initCtx = options.initCtx ?? DEFAULT_INIT_CTX;
    for (const source of this.ownedSources) await source.prepare?.(initCtx);
    const selected = this.selectIds(options);
    // Deferred tools carry `extras.defer_loading` (providerToolSearchMiddleware, lazyToolsMiddleware).
    const deferred = new Set([...this.ownedSources].flatMap((s) => s.deferredTools?.().map((t) => t.id) ?? []));
    // The tools handed out here, fixed now (a tool registered later is not among them either); the
    // unavailable ones leave it once initialised, before any call can ask.
    const chosen = new Set(selected);
    const toolSet: Tool.ToolSet = { has: (id) => chosen.has(id) && this.entries.has(id) };
    // Tools that list the set (perToolSet: tool_search) are initialised last, once it has lost the unavailable ones.
    const byId = new Map<string, Tool.Initialized>();
    const listers = selected.filter((id) => this.entries.get(id)!.info.perToolSet === true);
    for (const ids of [selected.filter((id) => !listers.includes(id)), listers]) {
      const tools = await Promise.all(ids.map((id) => this.initialized(id, initCtx, toolSet)));
      tools.forEach((tool, i) => {
        byId.set(ids[i], tool);
        if (tool.unavailable) chosen.delete(ids[i]);
      });
    }
    const offered = selected.map((id) => byId.get(id)!).filter((tool) => !tool.unavailable);
    // One session per tool set unless createContext says otherwise: per-session state
    // (read-before-write, todos) is then scoped to the agent using these tools.
    const sessionID = `session-${randomUUID()}`;
    const given = options.createContext;
    const defaultContext = { sessionID };
    const withSession: CreateContext = given
      ? (toolId, callID) => ({ sessionID, ...given(toolId, callID) })
      : () => defaultContext;
    return offered.map((tool) =>
      toLangChainTool(tool, {
        host: this.host,
        extra: { registry: this, initCtx },
        createContext: withSession,
        onToolResult: options.onToolResult,
        timeoutMs: options.timeoutMs,
        signal: options.signal,
        strict: options.strict,
        maxDescriptionChars: options.maxDescriptionChars,
        artifact: options.artifact,
        ...(deferred.has(tool.id) ? { deferLoading: true } : {}),
      }),
    );
  }

  /**
   * The tools `ids` / `enabledPermissions` select that cannot run under `initCtx`, each with its
   * reason as a sentence (what `tools()`, the AI SDK adapter and the MCP server leave out).
   */
  async unavailable(
    initCtx: Tool.InitContext = DEFAULT_INIT_CTX,
    options: Pick<ToolsOptions, 'ids' | 'enabledPermissions' | 'model'> = {},
  ): Promise<UnavailableTool[]> {
    const selected = this.selectIds(options);
    const toolSet = this.toolSet(options);
    const tools = await Promise.all(selected.map((id) => this.initialized(id, initCtx, toolSet)));
    return tools.flatMap((t) => (t.unavailable ? [{ id: t.id, reason: t.unavailable }] : []));
  }

  /**
   * Runs several calls: read-only ones in parallel, writes to different paths in parallel and to one
   * path in order, bash/task one at a time; results in the given order (see src/registry/batch.ts).
   */
  executeBatch(
    calls: readonly BatchCall[],
    initCtx?: Tool.InitContext,
    options?: Omit<ExecuteOptions, 'callID'>,
  ): Promise<ToolFinalUpdate[]> {
    return executeBatch(this, calls, initCtx, options);
  }

  /**
   * Runs a tool directly through the same pipeline as agent calls. Resolves to the final update;
   * never rejects for tool failures (including an unknown id or a refused permission).
   */
  async execute(
    id: string,
    args: unknown,
    ctx: Partial<Tool.Context> = {},
    initCtx?: Tool.InitContext,
    options: ExecuteOptions = {},
  ): Promise<ToolFinalUpdate> {
    try {
      return await this.executeSteps(id, args, ctx ?? {}, initCtx, options ?? {});
    } catch (err) {
      // A hostile context or options object: still one failed update, never a rejection.
      return failCall(this.host, String(id), errorText(err, String(id)), { recordStats: false });
    }
  }

  private async executeSteps(
    id: string,
    args: unknown,
    ctx: Partial<Tool.Context>,
    initCtx: Tool.InitContext | undefined,
    options: ExecuteOptions,
  ): Promise<ToolFinalUpdate> {
    checkOptions(executeOptionsSchema, options);
    checkOptions(initContextSchema, initCtx);
    const refusal = this.whyRefused(id, options.enabledPermissions);
    let tool: Tool.Initialized | undefined;
    let initError: string | undefined;
    if (!refusal) {
      try {
        tool = await this.initialized(id, initCtx ?? DEFAULT_INIT_CTX, this.callToolSet(options));
      } catch (err) {
        initError = `Tool "${id}" could not be initialised: ${errorText(err, id)}`;
      }
    }
    const listeners: OnToolResult[] = [];
    if (options.onToolResult) listeners.push(options.onToolResult);
    // The caller's own ctx.metadata still hears every progress call.
    if (typeof ctx.metadata === 'function') {
      const callerMetadata = ctx.metadata;
      listeners.push((u) => {
        if (u.status === 'running') callerMetadata({ title: u.result.title, metadata: u.result.metadata });
      });
    }
    if (!tool) return this.failWithout(id, refusal ?? initError!, options.callID ?? ctx.callID, listeners);
    return runCall(this.host, {
      tool,
      args,
      ctx: { ...ctx, extra: { registry: this, initCtx: initCtx ?? DEFAULT_INIT_CTX, ...ctx.extra } },
      callID: options.callID ?? ctx.callID,
      signal: options.signal,
      timeoutMs: options.timeoutMs,
      listeners,
    });
  }

  /**
   * Delivers the late result of a call whose tool returned `Tool.pending` (a text, a result, or an
   * Error for a failure); emits `resolved`. Throws when no call with that id is waiting.
   */
  submitResult(toolCallId: string, result: LateResult, ctx?: NamespaceContext): Promise<PendingCall> {
    return this.pendingCalls.submit(toolCallId, result, ctx);
  }

  /**
   * The pending-call records (waiting and settled, not yet taken), optionally one session's. With a
   * namespace function, `ctx` is what it is called with (default: the filter).
   */
  pending(filter?: { sessionID?: string }, ctx?: NamespaceContext): Promise<PendingCall[]> {
    return this.pendingCalls.list(filter, ctx);
  }

  /** Removes and returns settled pending calls, for `lateResultMessages` on the agent's next turn. */
  takeSettled(filter?: { sessionID?: string }, ctx?: NamespaceContext): Promise<PendingCall[]> {
    return this.pendingCalls.takeSettled(filter, ctx);
  }

  /** Takes ownership of a tool source (an MCP server connection adopts itself when made). */
  adopt(source: ToolSource): void {
    this.ownedSources.add(source);
  }

  /** Gives up ownership of a source without closing it (a source releases itself when it closes). */
  release(source: ToolSource): void {
    this.ownedSources.delete(source);
  }

  /**
   * Runs `fn` when the registry is disposed (bash's background jobs are killed this way); returns a
   * function that cancels it.
   */
  onDispose(fn: () => Promise<void> | void): () => void {
    this.disposers.add(fn);
    return () => this.disposers.delete(fn);
  }

  /**
   * Ends what the registry owns and would outlive it: background jobs are killed (whole process
   * groups), tool sources (MCP connections) closed, then its private directory of saved outputs
   * removed (a host-chosen `truncate.outputDir` is kept). Failures are collected, not thrown one by one.
   */
  async dispose(): Promise<void> {
    const work = [...this.disposers].map((fn) => Promise.resolve().then(fn));
    this.disposers.clear();
    work.push(...[...this.ownedSources].map((s) => s.close()));
    const settled = await Promise.allSettled(work);
    // Last, once background jobs no longer write there: the private directory of saved outputs.
    settled.push(...(await Promise.allSettled([this.tenant.outputs.remove()])));
    const failed = settled.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed.length) {
      throw new Error(
        `dispose(): ${failed.length} part(s) failed: ${failed.map((f) => (f.reason instanceof Error ? f.reason.message : String(f.reason))).join('; ')}`,
      );
    }
  }

  /** The tool sources this registry owns (MCP server connections), in the order they were adopted. */
  sources(): ToolSource[] {
    return [...this.ownedSources];
  }

  /** Per-tool call statistics (only tools that have been called). */
  stats(): Record<string, ToolStats>;
  stats(id: string): ToolStats | undefined;
  stats(id?: string): Record<string, ToolStats> | ToolStats | undefined {
    const view = (s: { calls: number; failures: number; totalDurationMs: number; lastError?: string }): ToolStats => ({
      ...s,
      averageDurationMs: s.calls ? s.totalDurationMs / s.calls : 0,
    });
    if (id !== undefined) {
      const s = this.statsByTool.get(id);
      return s && view(s);
    }
    return Object.fromEntries([...this.statsByTool].map(([k, s]) => [k, view(s)]));
  }

  /** Tells this registry's subscribers about a tool source's change (MCP connections report theirs here). */
  emitSourceEvent(event: McpStatusEvent | McpToolsEvent): void {
    this.emit(event);
  }

  /**
   * Subscribes to every event (requested, progress, completed, failed, warning, and its MCP
   * connections' mcp-status and mcp-tools); returns an unsubscribe function.
   */
  subscribe(listener: (event: ToolEvent) => void): () => void {
    this.subscribers.add(listener);
    return () => this.subscribers.delete(listener);
  }

  /** Subscribes to one event type; returns an unsubscribe function. */
  on<T extends ToolEvent['type']>(type: T, listener: (event: Extract<ToolEvent, { type: T }>) => void): () => void {
    return this.subscribe((e) => {
      if (e.type === type) listener(e as Extract<ToolEvent, { type: T }>);
    });
  }

  /** The message for an unknown tool id, naming the known ones. */
  unknownToolMessage(id: string): string {
    const known = this.ids();
    return `Unknown tool "${id}". ${known.length ? `Known tools: ${known.join(', ')}.` : 'No tools are registered.'} Call one of those instead.`;
  }

  private selectIds(options: ToolsOptions): string[] {
    let ids = this.ids();
    if (options.ids) {
      for (const id of options.ids) if (!this.entries.has(id)) throw new Error(this.unknownToolMessage(id));
      const wanted = new Set(options.ids);
      ids = ids.filter((id) => wanted.has(id));
    }
    if (options.enabledPermissions) {
      const allowed = new Set(this.enabled(options.enabledPermissions));
      ids = ids.filter((id) => allowed.has(id));
    }
    const offer = this.modelOffer;
    if (offer) ids = ids.filter((id) => offer(id, options.model));
    return ids;
  }

  /** The tool set `execute` runs a call in: the one given, else its grant's (one object per grant, so inits are cached). */
  private callToolSet(options: ExecuteOptions): Tool.ToolSet | undefined {
    if (options.toolSet || !options.enabledPermissions) return options.toolSet;
    const given = toGrantSet(options.enabledPermissions);
    const grant = ALL_PERMISSIONS.filter((p) => given.has(p));
    const key = grant.join(',');
    let set = this.grantSets.get(key);
    if (!set) this.grantSets.set(key, (set = this.toolSet({ enabledPermissions: grant })));
    return set;
  }

  private whyRefused(id: string, granted?: PermissionGrant): string | undefined {
    const entry = this.entries.get(id);
    if (!entry) return this.unknownToolMessage(id);
    if (granted && !isAllowed(entry.permissions, granted)) {
      const set = toGrantSet(granted);
      const missing = entry.permissions.required.filter((p) => !set.has(p));
      return `Tool "${id}" needs the ${missing.join(', ')} permission${missing.length > 1 ? 's' : ''}, which ${missing.length > 1 ? 'are' : 'is'} not granted. Use a tool that the granted permissions allow.`;
    }
    return undefined;
  }

  private failWithout(
    id: string,
    message: string,
    callID: string | undefined,
    listeners: OnToolResult[],
  ): ToolFinalUpdate {
    // The pipeline's one failure path; an unknown tool leaves no statistics.
    return failCall(this.host, id, message, { callID, listeners, recordStats: this.entries.has(id) });
  }

  private async initEntry(
    entry: RegistryEntry,
    initCtx: Tool.InitContext,
    toolSet?: Tool.ToolSet,
  ): Promise<Tool.Initialized> {
    let bound = this.boundContexts.get(initCtx);
    if (!bound) this.boundContexts.set(initCtx, (bound = bindTenant(initCtx, this.tenant)));
    const tool = await entry.info.init(toolSet ? { ...bound, toolSet } : bound);
    const loaded = await loadDescription(
      entry.info.id,
      entry.descriptionPath,
      tool.description,
      initCtx,
      tool.descriptionVariables,
    );
    if (loaded.warning) this.warn(entry.info.id, loaded.warning);
    return { ...tool, description: loaded.text };
  }

  private warn(toolId: string, message: string): void {
    if (this.subscribers.size === 0) process.emitWarning(message, 'ToolDescriptionWarning');
    this.emit({ type: 'warning', toolId, message, timestamp: Date.now() });
  }

  private emit(event: ToolEvent): void {
    for (const s of this.subscribers) {
      try {
        s(event);
      } catch {
        // A broken subscriber must not break tool calls.
      }
    }
  }

  private recordStats(toolId: string, durationMs: number, error?: string): void {
    let s = this.statsByTool.get(toolId);
    if (!s) this.statsByTool.set(toolId, (s = { calls: 0, failures: 0, totalDurationMs: 0 }));
    s.calls++;
    s.totalDurationMs += durationMs;
    if (error !== undefined) {
      s.failures++;
      s.lastError = error;
    }
  }

  private clearInitCaches(): void {
    this.initCache = new WeakMap();
    this.setCache = new WeakMap();
  }
}

function validTimeout(ms: number): number {
  if (!Number.isFinite(ms) || ms <= 0) throw new Error(`Timeout must be a positive number of milliseconds, got ${ms}.`);
  return ms;
}

/** Makes an isolated registry: its own tools, limits, statistics and events. */
export function createRegistry(options: RegistryOptions = {}): Registry {
  return new Registry(options);
}

/** The default, process-wide registry (most programs make their own with `createRegistry()`). */
export const defaultRegistry: Registry = createRegistry();

/** @deprecated Use `defaultRegistry` (the same instance); this name goes in 1.0. */
export const ToolRegistry: Registry = defaultRegistry;
/** @deprecated Use `Registry` (the same class); this name goes in 1.0. */
export const ToolRegistryImpl = Registry;
/** @deprecated Use `Registry`; this name goes in 1.0. */
export type ToolRegistryImpl = Registry;
/** @deprecated Use `Registry`; this name goes in 1.0. */
export type ToolRegistryType = Registry;
