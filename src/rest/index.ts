/**
 * REST and OpenAPI tools: the public entry (`registerRestTools`, `importOpenApi`, `registerOpenApiTools`).
 * Only re-exports; the mechanisms live in tools.ts, template.ts and openapi.ts.
 */
export {
  registerRestTools,
  restTool,
  restToolId,
  REST_NAME_PREFIX,
  REST_DEFAULT_CONCURRENCY,
  type RestToolConfig,
  type RegisterRestOptions,
} from './tools.js';
export {
  importOpenApi,
  registerOpenApiTools,
  OPENAPI_MAX_DESCRIPTION_CHARS,
  OPENAPI_MAX_SCHEMA_DEPTH,
  OPENAPI_MAX_SCHEMA_NODES,
  type OpenApiImportOptions,
  type OpenApiImport,
} from './openapi.js';
export { OPENAPI_MAX_EXPANDED_NODES, OPENAPI_IMPORT_TIMEOUT_MS, OPENAPI_IMPORT_HEAP_MB } from './openapi-load.js';
export { loadRestConfig, type RestConfigFile, type RestOpenApiEntry } from './config.js';
