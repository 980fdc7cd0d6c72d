/**
 * The schemas of the registry's options: `createRegistry(options)`, `registry.tools(options)` (with
 * its `initCtx`), `registry.execute(..., options)`. Each is tied to its type where it is checked
 * (`checkOptions` compiles only when the schema has exactly the type's keys), so the type in
 * registry.ts stays the one users read.
 * Must not import registry.ts (it checks with these; types are tied at its call sites).
 */
import { z } from 'zod';
import { ALL_PERMISSIONS } from '../authoring/permissions.js';
import type { Tool } from '../authoring/tool.js';
import type { Policy } from '../policy/policy.js';
import type { LoopGuardOptions } from '../policy/types.js';
import type { TelemetryOptions } from '../pipeline/telemetry.js';
import type { TruncateOptions } from '../pipeline/truncate.js';
import type { OnToolResult } from '../pipeline/types.js';
import { sandboxOptionsSchema } from '../sandbox/options.js';
import type { StoreNamespace, ToolStore } from '../store/types.js';
import type { AnyBackendProtocol } from '../backend/protocol.js';
import { OptionsSchema, fn, objectWith, oneOf, shapeOf, strictObject } from '../schema/options.js';
import type { SkillsOptions } from '../skills/types.js';
import type { LspOptions, LspServerConfig } from '../lsp/config.js';

const skills = () =>
  strictObject(
    shapeOf<SkillsOptions>()({
      dirs: names().optional(),
      defaults: z.boolean().optional(),
      home: z.string().optional(),
      maxSkillListingChars: z.number().optional(),
      honorAllowedTools: z.boolean().optional(),
    }),
  );

const lsp = () =>
  z.union([
    z.literal(false),
    strictObject(
      shapeOf<LspOptions>()({
        servers: z
          .record(
            z.string(),
            z.union([z.literal(false), objectWith<LspServerConfig>('a server { command, extensions, ... }')]),
          )
          .optional(),
        diagnosticsWaitMs: milliseconds().optional(),
      }),
    ),
  ]);

/** A permission grant: an array or a Set of permission names, each a known one. */
const grant = () =>
  z.preprocess(
    (v) => (v instanceof Set ? [...(v as Set<unknown>)] : v),
    z.array(oneOf(ALL_PERMISSIONS, 'a permission'), {
      error: (iss) => `must be an array (or a Set) of permissions such as ['read'], got ${typeof iss.input}`,
    }),
  );

const milliseconds = () => z.number({ error: 'must be a number of milliseconds' });
const names = () => z.array(z.string());

const loopGuard = () =>
  z.union([
    z.literal(false),
    strictObject(
      shapeOf<LoopGuardOptions>()({
        threshold: z.number().optional(),
        action: oneOf(['deny', 'ask'], 'a loop guard action').optional(),
        exempt: names().optional(),
      }),
    ),
  ]);

/** The schema of `RegistryOptions` (`createRegistry(options)`). */
export const registryOptionsSchema = new OptionsSchema('createRegistry options', () => ({
  concurrency: z.number().optional(),
  timeoutMs: milliseconds().optional(),
  truncate: strictObject(
    shapeOf<TruncateOptions>()({
      maxLines: z.number().optional(),
      maxBytes: z.number().optional(),
      outputDir: z.string().optional(),
      store: objectWith<NonNullable<TruncateOptions['store']>>('an output store').optional(),
    }),
  ).optional(),
  policy: objectWith<Policy>('a policy made by createPolicy({ rules })', ['decide', 'authorize']).optional(),
  loopGuard: loopGuard().optional(),
  sandbox: sandboxOptionsSchema.zod.optional(),
  store: objectWith<ToolStore>('a LangGraph BaseStore or openStore(url)', [
    'get',
    'put',
    'delete',
    'search',
  ]).optional(),
  namespace: z.union([names(), fn<(ctx: never) => readonly string[]>()]).optional() as z.ZodOptional<
    z.ZodType<StoreNamespace>
  >,
  storeLabel: z.string().optional(),
  skills: skills().optional(),
  telemetry: strictObject(
    shapeOf<TelemetryOptions>()({
      enabled: z.boolean().optional(),
      captureContent: z.boolean().optional(),
      tracerProvider: objectWith<NonNullable<TelemetryOptions['tracerProvider']>>('a tracer provider', [
        'getTracer',
      ]).optional(),
    }),
  ).optional(),
}));

/** The schema of `Tool.InitContext`: known keys typed; other keys (a user's own tools' options) pass unless they are a near miss of a known one. */
export const initContextSchema = new OptionsSchema(
  'initCtx',
  () => ({
    workingDir: z.string().optional(),
    workspaceRoot: z.string().optional(),
    additionalRoots: names().optional(),
    backend: objectWith<AnyBackendProtocol>('a deepagents backend').optional(),
    toolSet: objectWith<Tool.ToolSet>('a tool set', ['has']).optional(),
    sandbox: sandboxOptionsSchema.zod.optional(),
    allowPrivateNetwork: z.boolean().optional(),
    ssrfPolicy: strictObject(
      shapeOf<NonNullable<Tool.InitContext['ssrfPolicy']>>()({
        allowPrivateNetwork: z.boolean().optional(),
        allow: names().optional(),
        deny: names().optional(),
      }),
    ).optional(),
    subagents: z.record(z.string(), objectWith<Tool.SubagentConfig>('a sub-agent { model, permissions }')).optional(),
    httpAllowedHosts: names().optional(),
    httpCacheTtlSeconds: z.number().optional(),
    webSearch: objectWith<NonNullable<Tool.InitContext['webSearch']>>(
      'a web search config { backend, ... }',
    ).optional(),
    listLimit: z.number().optional(),
    progressIntervalMs: milliseconds().optional(),
    grepBackend: oneOf(['auto', 'rg', 'js'], 'a grep backend').optional(),
    rgPath: z.string().optional(),
    grepBlockBytes: z.number().optional(),
    todoStore: objectWith<NonNullable<Tool.InitContext['todoStore']>>('a todo store').optional(),
    memoryRoot: z.string().optional(),
    searchIgnored: z.union([z.boolean(), names()]).optional(),
    skills: z.union([z.literal(false), skills()]).optional(),
    lsp: lsp().optional(),
  }),
  'open',
);

/** The schema of `ToolsOptions` (`registry.tools(options)`). */
export const toolsOptionsSchema = new OptionsSchema('registry.tools() options', () => ({
  ids: names().optional(),
  enabledPermissions: grant().optional(),
  initCtx: initContextSchema.zod.optional(),
  createContext: fn<(toolId: string, callID: string) => object>().optional(),
  onToolResult: fn<OnToolResult>().optional(),
  timeoutMs: milliseconds().optional(),
  signal: z.instanceof(AbortSignal, { error: 'must be an AbortSignal' }).optional(),
  strict: z.boolean().optional(),
  maxDescriptionChars: z.number().optional(),
  artifact: oneOf(['result', 'minimal'], 'an artifact mode').optional(),
  model: z.string().optional(),
}));

/** The schema of `ExecuteOptions` (`registry.execute(id, args, ctx, options)`). */
export const executeOptionsSchema = new OptionsSchema('registry.execute() options', () => ({
  enabledPermissions: grant().optional(),
  timeoutMs: milliseconds().optional(),
  onToolResult: fn<OnToolResult>().optional(),
  signal: z.instanceof(AbortSignal, { error: 'must be an AbortSignal' }).optional(),
  callID: z.string().optional(),
  toolSet: objectWith<Tool.ToolSet>('a tool set', ['has']).optional(),
}));

/** The schema of `AISDKToolsOptions` (`toAISDKTools(registry, options)`, entry `agent-toolbelt/ai-sdk`). */
export const aiSdkToolsOptionsSchema = new OptionsSchema('toAISDKTools options', () => ({
  ids: names().optional(),
  enabledPermissions: grant().optional(),
  initCtx: initContextSchema.zod.optional(),
  sessionID: z.string().optional(),
  agent: z.string().optional(),
  timeoutMs: milliseconds().optional(),
  onToolResult: fn<OnToolResult>().optional(),
}));
