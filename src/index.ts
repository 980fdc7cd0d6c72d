/**
 * Public exports of agent-toolbelt's root entry: authoring, the registry, built-in tools, MCP and policy.
 * REST/OpenAPI tools (`agent-toolbelt/rest`), the SSRF guard (`agent-toolbelt/ssrf`), the policy
 * middleware (`agent-toolbelt/middleware`) and every named constant and limit (`agent-toolbelt/constants`)
 * have their own entries, so importing the root does not load them.
 * Must not define anything: it only re-exports what the docs teach (pinned by __tests__/package/public-api.txt).
 */
export { Tool } from './authoring/tool.js';
export {
  Registry,
  defaultRegistry,
  createRegistry,
  ToolRegistry,
  ToolRegistryImpl,
  type ToolRegistryType,
  type RegistryOptions,
  type RegisterOptions,
  type RegistryEntry,
  type ToolsOptions,
  type ExecuteOptions,
  type CreateContext,
  type UnavailableTool,
} from './registry/registry.js';
export type { TelemetryOptions } from './pipeline/telemetry.js';
export {
  parsePermissionList,
  type ToolPermission,
  type ToolPermissions,
  type PermissionGrant,
} from './authoring/permissions.js';
export { descriptionBeside } from './authoring/description.js';
export {
  parseArguments,
  parseArgumentsWithRepairs,
  ToolInputError,
  type ArgumentRepair,
  type ParsedArguments,
} from './pipeline/arguments.js';
export type {
  ToolUpdate,
  ToolFinalUpdate,
  OnToolResult,
  ToolEvent,
  ToolStats,
  McpStatusEvent,
  McpToolsEvent,
  SandboxEvent,
  PendingCall,
} from './pipeline/types.js';
export { lateResultMessages, type LateResult } from './registry/pending.js';
export { ToolbeltTool, type ArtifactMode, type ToolProgressChunk } from './registry/langchain.js';
export {
  builtinTools,
  registerBuiltinTools,
  unregisteredBuiltins,
  type BuiltinTool,
  type BuiltinToolsOptions,
} from './tools/index.js';
export { prefersApplyPatch, type EditsMode } from './tools/patch/models.js';
export {
  webSearchConfigFromEnv,
  type WebSearchConfig,
  type WebSearchBackend,
  type WebSearchResult,
  type WebSearchMetadata,
} from './tools/web/web-search-config.js';
export { Workspace, PathOutsideWorkspaceError } from './workspace/workspace.js';
export { toDeepAgentsBackend, type DeepAgentsBackendOptions, type WorkspaceBackend } from './backend/deepagents.js';
export type {
  AnyBackendProtocol,
  BackendProtocolV1,
  BackendProtocolV2,
  SandboxBackendProtocolV1,
  SandboxBackendProtocolV2,
  ExecuteResponse,
  FileData,
  FileInfo,
  GrepMatch,
} from './backend/protocol.js';
export { Tenant } from './workspace/tenant.js';
export type {
  ToolStore,
  StoreItem,
  StoreSearchOptions,
  StoreNamespace,
  NamespaceContext,
  StoreBinding,
} from './store/types.js';
export { encodeLabel, decodeLabel, NamespaceError, STATE_KINDS } from './store/namespace.js';
export { MalformedRecordError } from './store/scope.js';
export { redactUrl } from './store/url.js';
export { openStore, type OpenedStore } from './store/open.js';
export { ReadTracker } from './workspace/read-tracker.js';
export { TodoStore, todoStoreOf, type TodoItem } from './tools/todo/store.js';
export {
  serveMcp,
  createMcpServer,
  connectMcp,
  disconnectMcp,
  mcpStatus,
  mcpConnections,
  loadMcpConfig,
  type ServeMcpOptions,
  type McpServing,
  type McpServerOptions,
  type ConnectMcpOptions,
  type McpConnection,
  type McpServerConnection,
  type McpConnectionEvents,
  type McpConnectionState,
  type McpReconnectOptions,
  type LoadMcpConfigOptions,
  type McpServerConfig,
  type McpStdioServerConfig,
  type McpHttpServerConfig,
  type McpServerStatus,
  type McpPermissionsConfig,
  type McpToolInfo,
} from './mcp/index.js';
export { orderProgressBeforeResponses } from './mcp/progress-order.js';
export {
  toolsForTurn,
  deferredTools,
  deferTools,
  undeferTools,
  type DeferredTool,
  type ToolSearchMetadata,
  type DeferSpec,
  type DeferOptions,
} from './mcp/deferred.js';
export { lazyToolsMiddleware } from './mcp/deferred-middleware.js';
export {
  providerJsonSchema,
  portableJsonSchema,
  ToolSchemaError,
  type JsonSchema,
  type ProviderSchemaOptions,
} from './schema/index.js';
export { fixGeminiParallelToolResults } from './providers/gemini.js';
export {
  Policy,
  createPolicy,
  loadPolicyFile,
  findPolicyFile,
  PolicyError,
  validatePolicy,
  parsePolicyText,
  argsHash,
  type PolicyConfig,
  type PolicyRule,
  type PolicyAction,
  type PolicyDecision,
  type PolicyCheck,
  type PermissionRequest,
  type PermissionAnswer,
  type PermissionReply,
  type OnPermissionRequest,
  type LoopGuardOptions,
  type CheckEnvironment,
  type PolicyOptions,
  type PolicyLayer,
  type MergedPolicy,
} from './policy/index.js';
export { classifyCommand, type DangerLevel, type CommandClassification } from './tools/bash/danger.js';
export type { SandboxMode, SandboxOptions, SandboxStatus } from './sandbox/types.js';
export {
  createSandboxExecutor,
  type SandboxExecutor,
  type SandboxExecutorOptions,
  type SandboxExecuteResponse,
} from './sandbox/executor.js';
export { type BatchCall } from './registry/batch.js';
export { importSkills, skillCatalogOf, SkillCatalog, type SkillView } from './skills/catalog.js';
export type { Skill, SkillMeta, SkillProblem, SkillsOptions, SkillSourceKind, LoadedSkill } from './skills/types.js';
export type { ImportResult as SkillImportResult } from './skills/store.js';
export type { SkillGrant, SkillGrants } from './skills/allowed-tools.js';
export type { LspOptions, LspServerConfig } from './lsp/config.js';
export { OptionsError, type OptionProblem } from './schema/options.js';
