/**
 * The Tool namespace: how a tool is authored (`Tool.define`) and the shapes that flow through a
 * call (context, result, progress).
 * Must not import the registry, the pipeline, LangChain or MCP: they depend on it, never the reverse.
 */
import type { z } from 'zod';
import type { ToolPermissions } from './permissions.js';
import type { AnyBackendProtocol } from '../backend/protocol.js';
import { assertRepresentable, toolJsonSchema } from '../schema/zod.js';

// eslint-disable-next-line @typescript-eslint/no-namespace -- `Tool` (Tool.define, Tool.Context, ...) is the public contract's namespace
export namespace Tool {
  /** Free-form structured data a tool reports alongside its text output. */
  export type Metadata = Record<string, unknown>;

  /** A binary or rich payload returned next to the text output (images, PDFs, MCP resources). */
  export interface Attachment {
    /** `image`, `file` (any other binary) or `resource` (an MCP resource, possibly text). */
    type: 'image' | 'file' | 'resource';
    /** MIME type, e.g. `image/png`. */
    mime: string;
    /** Base64-encoded bytes, when the payload is binary. */
    data?: string;
    /** Text content, when the payload is a text resource. */
    text?: string;
    /** Where the payload came from (a file path, `file://` or `https://` URL, or an MCP resource URI). */
    uri?: string;
    /** A human-readable name. */
    filename?: string;
  }

  /** What a tool returns. `output` is what the model reads; the rest rides along as structure. */
  export interface Result<M extends Metadata = Metadata> {
    title: string;
    metadata: M;
    output: string;
    attachments?: Attachment[];
    /**
     * A JSON value matching the tool's `outputSchema`: served over MCP as `structuredContent`,
     * and on LangChain's `ToolMessage.artifact` with the rest of the result.
     */
    structuredContent?: Record<string, unknown>;
  }

  /** One progress report from a running tool: a new title and/or metadata to merge. */
  export interface MetadataUpdate<M extends Metadata = Metadata> {
    title?: string;
    metadata?: Partial<M> & Metadata;
  }

  /** Everything a running tool may know about its call. */
  export interface Context<M extends Metadata = Metadata> {
    /** The agent session (conversation) this call belongs to; per-session state is keyed by it. */
    sessionID: string;
    /**
     * The message (model turn) that asked for this call. In a LangChain agent the adapter sets it to
     * the id of the AIMessage holding the tool call, so parallel calls of one turn share it; a
     * direct call without one gets its call id (each call its own turn).
     */
    messageID: string;
    /** The agent's name. */
    agent: string;
    /** Fires when the caller aborts or the call times out; long work must stop promptly. */
    abort: AbortSignal;
    /** The call's id (the LangChain tool_call_id when called by an agent). */
    callID?: string;
    /** Report progress; streamed to `onToolResult`, the registry's events and LangChain's stream. */
    metadata(update: MetadataUpdate<M>): void;
    /** Extra, host-defined values (e.g. the registry itself for tools that run sub-agents). */
    extra?: Record<string, unknown>;
    /**
     * Asks the registry's policy about a URL the call is about to reach besides its arguments' (a
     * redirect hop): resolves to undefined when it may go on, else a clause saying why not. Absent
     * when the call runs outside a registry.
     */
    checkUrl?(url: string): Promise<string | undefined>;
    /**
     * What the registry's policy lets this call read among the paths a walk finds (grep, glob and
     * list over a directory): undefined when no rule can refuse a path under it, else a filter the
     * walk asks about every entry. Absent when the call runs outside a registry.
     */
    readFilter?(): Promise<ReadFilter | undefined>;
  }

  /**
   * The policy's word on each path a search tool's walk finds (`ctx.readFilter()`): the tool leaves
   * out what `skips` refuses and ends its result with `notice()`, which counts them and never names them.
   */
  export interface ReadFilter {
    /**
     * Whether `abs` (an absolute path the walk found) must be left out; for a directory, whether
     * every path under it is refused (the walk does not enter it). `isDir` only for a real directory
     * (a link to one is not). `real` is its real path when the caller knows it differs (a symlink);
     * otherwise its directory's real path is looked up. Counts what it refuses.
     */
    skips(abs: string, isDir: boolean, real?: string): boolean;
    /**
     * `skips(dir + sep + name, isDir)` for an entry of a directory the walk just listed, with the
     * directory's forms worked out once for all its entries (optional: walks fall back to `skips`).
     */
    skipsIn?(dir: string, name: string, isDir: boolean): boolean;
    /** Paths left out so far (a directory left out counts once). */
    readonly skipped: number;
    /** One sentence saying how many paths were left out and why, or '' when none was. */
    notice(): string;
  }

  /**
   * What a tool may learn when it is initialised (once per agent/tool set, not per call). Only the
   * workspace fields are common; each tool declares its own options in its own file by augmenting
   * this interface (`declare module '../tool.js' { namespace Tool { interface InitContext { ... } } }`),
   * so an option nobody declared is a compile error, not a value silently ignored.
   */
  export interface InitContext {
    /** The directory `${directory}` / `${cwd}` expand to; default `process.cwd()`. */
    workingDir?: string;
    /** The workspace root the file tools are sandboxed to; default `AGENT_WORKSPACE_ROOT`, else `workingDir`. */
    workspaceRoot?: string;
    /** More roots the sandbox accepts besides the workspace root. */
    additionalRoots?: string[];
    /**
     * Where the file tools' files live and bash's commands run instead of the local workspace: any
     * deepagents backend (`BackendProtocolV2`; V1 is lifted; `SandboxBackendProtocolV2` for bash).
     * Paths are then the backend's paths, never the host's. See docs/backends.md.
     */
    backend?: AnyBackendProtocol;
    /**
     * The tool set this tool is handed out in; the registry sets it, only for tools that declare
     * `perToolSet` (absent: no tool set, e.g. a program's own `registry.execute` without a grant).
     */
    toolSet?: ToolSet;
  }

  /**
   * The tools one tool set holds: one `registry.tools()` call (its `ids` and `enabledPermissions`),
   * one MCP server (its grant), one `registry.execute` grant. A tool that lists other tools
   * (tool_search) lists only those its set holds, so a model never learns of a tool its grant excludes.
   */
  export interface ToolSet {
    /** Whether the tool `id` is handed out in this set. */
    has(id: string): boolean;
  }

  /** How much harm a call can do at worst: read-only, changes that stay in the workspace, or anything. */
  export type DangerLevel = 'safe' | 'moderate' | 'dangerous';

  /**
   * What a tool says about itself besides its definition: its id, the permissions it needs, its
   * external `.txt` description and its danger level. The registry uses these unless `register`
   * overrides them.
   */
  export interface About {
    id: string;
    permissions?: ToolPermissions;
    /** Absolute path of a `.txt` description (see `descriptionBeside`). */
    descriptionPath?: string;
    danger?: DangerLevel;
    /**
     * `useless`: an identical call right after another never gives anything new (the loop guard
     * refuses the `threshold`-th in a row on count alone, without looking at results).
     */
    repeats?: 'useless';
    /**
     * The definition depends on which other tools its tool set holds (tool_search lists them): the
     * registry initialises it once per tool set, with `initCtx.toolSet`, instead of once per init context.
     */
    perToolSet?: boolean;
  }

  /** How the registry's timeout applies to a tool. */
  export interface TimeoutPolicy {
    /** The tool's own default, used instead of the registry default. */
    defaultMs?: number;
    /** A per-call override above this is clamped to it. */
    maxMs?: number;
    /**
     * The tool enforces its own time limit (bash, webfetch, task): the registry default does not
     * apply; only an explicit per-call override or `maxMs` does.
     */
    managed?: boolean;
  }

  /** The description of a tool: what `Tool.define` receives, directly or from an init function. */
  export interface Definition<P extends z.ZodType = z.ZodType, M extends Metadata = Metadata> {
    /** Shown to the model. Replaced by the registry's `.txt` file when one is given. */
    description: string;
    /** The arguments' zod schema; also becomes the JSON Schema the model sees. */
    parameters: P;
    /**
     * Runs the tool with parsed arguments (defaults applied). Throw to report failure. An async
     * generator (`async *execute`) reports progress by yielding (each yield goes where
     * `ctx.metadata` goes) and returns the result. Return `Tool.pending(...)` when the result will
     * arrive later (`registry.submitResult`).
     */
    execute(args: z.infer<P>, ctx: Context<M>): Promise<Result<M>> | ProgressGenerator<M>;
    /**
     * Values for `${name}` placeholders in the tool's external `.txt` description, computed at
     * init (e.g. task lists its configured sub-agents as `${subagents}`).
     */
    descriptionVariables?: Record<string, string>;
    /** Timeout behaviour; default: the registry's default applies. */
    timeout?: TimeoutPolicy;
    /**
     * `exempt`: the call does not take a slot of the registry's concurrency limit. For tools that
     * mostly wait on other tool calls (task), so that they cannot starve them.
     */
    concurrency?: 'limited' | 'exempt';
    /** MCP-style hints; derived from permissions when absent. */
    annotations?: {
      readOnlyHint?: boolean;
      destructiveHint?: boolean;
      idempotentHint?: boolean;
      openWorldHint?: boolean;
      title?: string;
    };
    /**
     * A JSON Schema to show clients instead of the one derived from `parameters` (used by tools
     * imported from MCP servers, whose schema arrives as JSON Schema).
     */
    jsonSchema?: Record<string, unknown>;
    /** A human-readable name shown by MCP clients (served as the tool's `title`). */
    title?: string;
    /**
     * The shape of `Result.structuredContent` (an object schema). Served over MCP as the tool's
     * `outputSchema`; each result's `structuredContent` is checked against it.
     */
    outputSchema?: z.ZodType;
    /** An output JSON Schema to serve as is (tools imported from MCP servers). */
    outputJsonSchema?: Record<string, unknown>;
    /**
     * Why this tool cannot run under its init context (task without sub-agents), as a sentence
     * saying what to configure. MCP servers do not list such a tool and answer calls with this.
     */
    unavailable?: string;
  }

  /** An `execute` written as an async generator: yields progress, returns the result. */
  export type ProgressGenerator<M extends Metadata = Metadata> = AsyncGenerator<MetadataUpdate<M>, Result<M>, void>;

  /** A definition bound to its id, ready to run: `execute` always returns a promise (generators are driven). */
  export interface Initialized<P extends z.ZodType = z.ZodType, M extends Metadata = Metadata> extends Omit<
    Definition<P, M>,
    'execute'
  > {
    id: string;
    /** Runs the tool; progress an async-generator definition yields has gone to `ctx.metadata`. */
    execute(args: z.infer<P>, ctx: Context<M>): Promise<Result<M>>;
  }

  /** How a pending result waits: what the model is told now, and how long the result may take. */
  export interface PendingOptions {
    /** Said to the model now, before the registry's note that the result will arrive later. */
    message?: string;
    /** How long `registry.submitResult` may take before the call expires as an error (clamped; see `DEFAULT_PENDING_EXPIRY_MS`). */
    expiresInMs?: number;
  }

  /** Marks a result as pending; `Symbol.for` so two copies of the package recognise each other's. */
  const PENDING = Symbol.for('agent-toolbelt.pending');

  /**
   * The result of a call whose real result arrives later (a person's answer, a webhook): the
   * registry records the call, the model is told to expect the result later, and
   * `registry.submitResult(callID, result)` delivers it.
   */
  export function pending<M extends Metadata = Metadata>(options: PendingOptions = {}): Result<M> {
    const marker = { message: options.message, expiresInMs: options.expiresInMs };
    return { title: 'pending', metadata: {} as M, output: options.message ?? '', [PENDING]: marker } as Result<M>;
  }

  /** The pending options of a result made by `Tool.pending`, else undefined. */
  export function pendingOf(result: unknown): PendingOptions | undefined {
    return result && typeof result === 'object'
      ? ((result as Record<symbol, PendingOptions | undefined>)[PENDING] ?? undefined)
      : undefined;
  }

  /** What `Tool.define` returns: what the tool says about itself and a way to make a fresh initialised tool. */
  export interface Info<P extends z.ZodType = z.ZodType, M extends Metadata = Metadata> extends About {
    /** Returns a new object every call; never mutates the definition. */
    init(initCtx?: InitContext): Promise<Initialized<P, M>>;
  }

  /** The init form of `Tool.define`: computes the definition from the init context. */
  export type InitFunction<P extends z.ZodType, M extends Metadata> = (
    initCtx: InitContext,
  ) => Definition<P, M> | Promise<Definition<P, M>>;

  /** Tool ids must satisfy this (OpenAI's function-name rule, the strictest of the providers). */
  export const ID_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;

  /** Throws a clear error when `id` is not a valid tool id. */
  export function assertValidId(id: unknown): asserts id is string {
    if (typeof id !== 'string' || !ID_PATTERN.test(id)) {
      throw new Error(
        `Invalid tool id ${JSON.stringify(id)}: ids must match ${ID_PATTERN} ` +
          '(1-64 letters, digits, "_" or "-"). Rename the tool.',
      );
    }
  }

  /** Defines a tool from a definition object. `about` is its id, or its id with permissions, description file and danger. */
  export function define<P extends z.ZodType, M extends Metadata = Metadata>(
    about: string | About,
    definition: Definition<P, M>,
  ): Info<P, M>;
  /** Defines a tool from an (async) init function of `Tool.InitContext` returning its definition. */
  export function define<P extends z.ZodType, M extends Metadata = Metadata>(
    about: string | About,
    init: InitFunction<P, M>,
  ): Info<P, M>;
  export function define<P extends z.ZodType, M extends Metadata = Metadata>(
    about: string | About,
    definition: Definition<P, M> | InitFunction<P, M>,
  ): Info<P, M> {
    const declared: About = typeof about === 'string' ? { id: about } : { ...about };
    const id = declared.id;
    assertValidId(id);
    // A definition given as an object is checked now, so an unrepresentable schema fails where the
    // tool is defined and registered; an init function's result is checked when it is initialised.
    if (typeof definition !== 'function' && definition?.parameters && !definition.jsonSchema)
      assertRepresentable(id, definition.parameters);
    return {
      ...declared,
      async init(initCtx: InitContext = {}): Promise<Initialized<P, M>> {
        const def = typeof definition === 'function' ? await definition(initCtx) : definition;
        if (!def || typeof def.execute !== 'function' || !def.parameters) {
          throw new Error(
            `Tool "${id}": the definition must have "parameters" (a zod schema) and an "execute" function.`,
          );
        }
        if (!def.jsonSchema) toolJsonSchema(id, def.parameters);
        // A fresh object each time: callers may decorate it (description from a file) without
        // touching the shared definition.
        // Called with the initialised object as `this`, as before generators were accepted.
        // eslint-disable-next-line @typescript-eslint/unbound-method -- re-bound with .call below
        const run = def.execute;
        return {
          ...def,
          id,
          execute(args: z.infer<P>, ctx: Context<M>): Promise<Result<M>> {
            const out = run.call(this, args, ctx);
            return isProgressGenerator(out) ? driveGenerator(id, out, ctx) : out;
          },
        };
      },
    };
  }

  function isProgressGenerator<M extends Metadata>(
    out: Promise<Result<M>> | ProgressGenerator<M>,
  ): out is ProgressGenerator<M> {
    return typeof (out as { next?: unknown }).next === 'function' && Symbol.asyncIterator in out;
  }

  /** Runs a generator `execute`: each yield is a progress report, the return value the result. */
  async function driveGenerator<M extends Metadata>(
    id: string,
    gen: ProgressGenerator<M>,
    ctx: Context<M>,
  ): Promise<Result<M>> {
    const signal = ctx.abort as AbortSignal | undefined;
    for (;;) {
      const step = await gen.next();
      if (step.done) {
        if (step.value === undefined)
          throw new Error(
            `Tool "${id}" finished without returning a result: its generator must end with return { title, metadata, output }. This is a bug in the tool.`,
          );
        return step.value;
      }
      ctx.metadata(step.value);
      // A stopped call's result is ignored: end the generator so its finally blocks release what it holds.
      if (signal?.aborted) {
        await gen.return(undefined as never);
        throw signal.reason;
      }
    }
  }
}
