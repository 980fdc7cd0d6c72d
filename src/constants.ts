/**
 * `agent-toolbelt/constants`: every limit and fixed value the docs name, one name each. Where two
 * modules use the same short name for different values (bash's 120 s default timeout and the
 * registry's 30 s one), the public name carries the tool's prefix.
 * Must not define a value: each lives with the module that enforces it, and this file only re-exports it.
 */
export { DEFAULT_CONCURRENCY, DEFAULT_TIMEOUT_MS } from './registry/registry.js';
export {
  DEFAULT_MAX_BYTES,
  DEFAULT_MAX_LINES,
  SELF_CAPPED_MAX_FACTOR,
  CAPPED_ERROR_MAX_CHARS,
} from './pipeline/truncate.js';
export { PROGRESS_EVENT } from './registry/langchain.js';
export { MIN_DESCRIPTION_CHARS } from './registry/description-fit.js';
export { ABORT_GRACE_MS } from './pipeline/call.js';
export { TRACER_NAME, MAX_SPAN_CONTENT_CHARS } from './pipeline/telemetry.js';
export { STALE_TEMP_MIN_AGE_MS, STALE_TEMP_MAX_AGE_MS } from './workspace/atomic-write.js';
export { SESSION_ID_PATTERN, MAX_SESSION_FILES } from './cli/session.js';
export { CLI_MAX_SAVED_OUTPUTS, CLI_MAX_SAVED_OUTPUT_BYTES } from './cli/state.js';
export { ASK_ARGS_CHARS, MCP_APPROVAL_TIMEOUT_MS } from './cli/approver.js';
export { DEFAULT_MCP_HOST, MCP_HTTP_PATH, MCP_RESULT_META_CAPABILITY, MCP_SESSION_META_KEY } from './mcp/server.js';
export {
  MAX_MCP_HTTP_SESSIONS,
  MAX_MCP_HTTP_SESSIONS_PER_CLIENT,
  MCP_HTTP_SESSION_IDLE_MS,
} from './mcp/http-server.js';
export { DEFAULT_MCP_TOOL_TIMEOUT_MS } from './mcp/import.js';
export { MCP_STDERR_TAIL_CHARS } from './mcp/connection.js';
export { MCP_CONNECT_TIMEOUT_MS } from './mcp/transport.js';
export {
  TOOL_SEARCH_ID,
  TOOL_SEARCH_DEFAULT_RESULTS,
  TOOL_SEARCH_MAX_RESULTS,
  TOOL_SEARCH_MAX_DESCRIPTION_CHARS,
  DEFER_AUTO_BUDGET_CHARS,
} from './mcp/deferred.js';
export { DEFAULT_MCP_MAX_TOTAL_TIMEOUT_MS } from './mcp/import.js';
export { MCP_LIVENESS_INTERVAL_MS, MCP_LIVENESS_PING_MS, MCP_RECONNECT_DEFAULTS } from './mcp/connection.js';
export { MAX_NESTING_DEPTH } from './tools/bash/danger.js';
export {
  DEFAULT_TIMEOUT_MS as BASH_DEFAULT_TIMEOUT_MS,
  MAX_TIMEOUT_MS as BASH_MAX_TIMEOUT_MS,
  MAX_OUTPUT_CHARS,
  KILL_GRACE_MS,
  PROGRESS_TAIL_CHARS,
  PIPE_QUIET_MS,
  PIPE_GRACE_MAX_MS,
  NON_INTERACTIVE_ENV,
} from './tools/bash/bash.js';
export {
  ANCHORED_AMBIGUITY_MARGIN,
  ANCHORED_MAX_CANDIDATES,
  ANCHORED_MIN_SIMILARITY,
} from './tools/files/edit-match.js';
export { DIFF_CONTEXT_LINES, MAX_LISTED_MATCHES, MAX_CANDIDATE_LINES } from './tools/files/edit.js';
export { MAX_GLOB_RESULTS } from './tools/files/glob.js';
export { PROGRESS_INTERVAL_MS } from './authoring/progress.js';
export { MAX_MATCHES, MAX_CONTEXT_LINES } from './tools/grep/grep.js';
export { MAX_LINE_LENGTH as GREP_MAX_LINE_LENGTH, GREP_LINE_CUT_MARKER } from './tools/grep/results.js';
export { LIST_DEFAULT_LIMIT, LIST_MAX_LIMIT, LIST_DEFAULT_IGNORES } from './tools/files/list.js';
export { DEFAULT_IGNORES } from './tools/files/search-common.js';
export { MAX_BACKEND_FILE_CHARS, MAX_BACKEND_ENTRIES, MAX_BACKEND_OUTPUT_CHARS } from './backend/guard.js';
export { BACKEND_READ_DEFAULT_LIMIT } from './backend/local.js';
export { MAX_BACKEND_MOVE_FILES } from './tools/files/backend/move.js';
export { MAX_REMEMBERED_BACKEND_CHARS } from './tools/files/backend/common.js';
export { MAX_BACKEND_UNDO_FILES } from './tools/files/backend/history.js';
export { MAX_BACKEND_GREP_FILES, MAX_BACKEND_GREP_CHARS } from './tools/grep/backend.js';
export {
  MEMORY_TOOLS,
  MEMORY_READ_ONLY_TOOLS,
  DEFAULT_MEMORY_DIR,
  MAX_MEMORY_FILE_BYTES,
  MAX_MEMORY_LIST_ENTRIES,
  MAX_SUMMARY_CHARS,
  SUMMARY_SCAN_CHARS,
} from './tools/memory/store.js';
export { MAX_MEMORY_NOTE_RECORDS } from './tools/memory/store-notes.js';
export { STORE_ROOT_LABEL, MAX_NAMESPACE_LABELS, MAX_NAMESPACE_LABEL_CHARS } from './store/namespace.js';
export {
  STORE_PAGE_SIZE,
  MAX_STORE_SCAN_RECORDS,
  STORE_UPDATE_ATTEMPTS,
  STORE_UPDATE_BACKOFF_MS,
} from './store/scope.js';
export { STORE_CONNECT_TIMEOUT_MS, STORE_QUERY_TIMEOUT_MS, STORE_POOL_SIZE } from './store/postgres.js';
export { CLI_STORE_NAMESPACE } from './cli/store.js';
export {
  DEFAULT_READ_LIMIT,
  MAX_LINE_LENGTH as READ_MAX_LINE_LENGTH,
  LINE_CUT_MARKER,
  MAX_OUTPUT_BYTES,
  BINARY_SNIFF_BYTES,
  NON_PRINTABLE_RATIO,
  BINARY_EXTENSIONS,
  ATTACHMENT_TYPES,
  MAX_ATTACHMENT_BYTES,
  MAX_SUGGESTIONS,
} from './tools/files/read.js';
export { LLM_ASSIST_REQUIRED, SUBAGENT_RECURSION_LIMIT, MAX_TASK_OUTPUT_CHARS } from './tools/task/task.js';
export { MAX_TODOS, MAX_TODO_CONTENT_CHARS, MAX_TODO_SESSIONS } from './tools/todo/store.js';
export {
  MAX_RESPONSE_BYTES,
  DEFAULT_TIMEOUT_SECONDS as WEBFETCH_DEFAULT_TIMEOUT_SECONDS,
  MAX_TIMEOUT_SECONDS as WEBFETCH_MAX_TIMEOUT_SECONDS,
  ERROR_BODY_BYTES,
  ERROR_SNIPPET_CHARS,
  PROGRESS_EVERY_BYTES,
  IMAGE_TYPES,
  TEXT_TYPES,
  DROPPED_ELEMENTS,
} from './tools/web/webfetch.js';
export {
  HTTP_MAX_RESPONSE_BYTES,
  HTTP_MAX_REQUEST_BYTES,
  HTTP_DEFAULT_TIMEOUT_SECONDS,
  HTTP_MAX_TIMEOUT_SECONDS,
  HTTP_ERROR_BODY_CHARS,
} from './net/http.js';
export { MAX_REDIRECTS, HTTP_CROSS_ORIGIN_HEADERS } from './net/redirects.js';
export { SECRET_MIN_CHARS } from './net/scrub.js';
export { HTTP_CACHE_MAX_ENTRIES, HTTP_CACHE_MAX_BODY_BYTES } from './net/response-cache.js';
export { HTTP_METHODS, HTTP_FORBIDDEN_HEADERS, HTTP_MAX_PAIRS } from './tools/web/http-request.js';
export { REST_NAME_PREFIX, REST_DEFAULT_CONCURRENCY } from './rest/tools.js';
export { OPENAPI_MAX_DESCRIPTION_CHARS, OPENAPI_MAX_SCHEMA_DEPTH, OPENAPI_MAX_SCHEMA_NODES } from './rest/openapi.js';
export { OPENAPI_MAX_EXPANDED_NODES, OPENAPI_IMPORT_TIMEOUT_MS, OPENAPI_IMPORT_HEAP_MB } from './rest/openapi-load.js';
export { MAX_WRITE_BYTES } from './tools/files/write.js';
export { MAX_DELETE_ENTRIES, DELETE_PROGRESS_EVERY } from './tools/files/delete.js';
export { MAX_LINE_COUNT_BYTES } from './tools/files/file-info.js';
export { DEFAULT_POLICY, SECRET_FILE_PATTERNS } from './policy/defaults.js';
export { POLICY_FILE_NAME } from './policy/policy.js';
export { POLICY_TREE_MAX_ENTRIES } from './policy/checks.js';
export { ALL_PERMISSIONS } from './authoring/permissions.js';
export { MAX_REF_DEPTH } from './schema/portable.js';
export { MAX_IGNORE_FILE_BYTES } from './tools/files/search-common.js';
export { MAX_BRACE_EXPANSIONS } from './text/braces.js';
export {
  MAX_CONVERT_MS,
  MAX_HTML_DEPTH,
  MAX_HTML_PARSE_DEPTH,
  MAX_HTML_ELEMENTS,
  MAX_HTML_PARSE_ELEMENTS,
  MAX_CONVERT_WORKERS,
} from './tools/web/html-convert.js';
export { DEFAULT_LOOP_THRESHOLD, MAX_GUARDED_SESSIONS, LOOP_RESULT_KEPT_CHARS } from './policy/loop-guard.js';
export { MAX_PENDING_GRANTS } from './policy/approvals.js';
export { LIST_PROGRESS_EVERY as MEMORY_LIST_PROGRESS_EVERY } from './tools/memory/memory.js';
export { MAX_EDIT_FILE_BYTES } from './tools/files/edit.js';
export { MAX_RUNNING_JOBS, MAX_JOB_RECORDS, MAX_JOB_UNREAD_CHARS, MAX_JOB_LOG_BYTES } from './tools/bash/jobs.js';
export { BACKEND_JOB_DEFAULT_TIMEOUT_MS, BACKEND_JOB_STOP_WAIT_MS } from './tools/bash/backend-jobs.js';
export { SANDBOX_PROBE_TIMEOUT_MS, SECRET_SCAN_TTL_MS } from './sandbox/runtime.js';
export { SANDBOX_SECRET_ENV, SANDBOX_URL_CREDENTIALS } from './sandbox/env.js';
export {
  SANDBOX_TMP_BYTES,
  SANDBOX_RUN_BYTES,
  SANDBOX_PROXY_PORT,
  SANDBOX_PROXY_SOCKET,
  SANDBOX_BRIDGE_WAIT_STEPS,
  SANDBOX_TMP_REPORT,
  SANDBOX_TMP_REPORT_LINES,
} from './sandbox/bwrap.js';
export { SANDBOX_PROTECTED_PATHS, SANDBOX_PROTECTED_HOME_PATHS } from './sandbox/protect.js';
export {
  SANDBOX_HIDDEN_HOME_PATHS,
  MAX_SECRET_SCAN_ENTRIES,
  SECRET_SCAN_HOME_DEPTH,
  SECRET_SCAN_SKIPPED_DIRS,
} from './sandbox/secrets.js';
export { MAX_PROXY_CONNECTIONS } from './sandbox/proxy.js';
export { MAX_SANDBOX_EXPLANATIONS } from './sandbox/explain.js';
export { SANDBOX_MODES } from './sandbox/options.js';
export { SANDBOX_EXECUTOR_MAX_OUTPUT_CHARS, SANDBOX_EXECUTOR_TIMEOUT_MS } from './sandbox/executor.js';
export { AUTOMATON_BLOCK_BYTES } from './tools/grep/js.js';
export { AUTOMATON_LONG_LINE_BYTES, MAX_LONG_LINE_WORKERS } from './tools/grep/long-line.js';
export {
  TAIL_BLOCK_BYTES,
  TAIL_COUNT_MAX_BYTES,
  LINE_COUNT_CACHE_ENTRIES,
  LINE_COUNT_SETTLE_MS,
  READ_SLICE_BYTES,
} from './tools/files/read-tail.js';
export { MAX_UNDO_RECORDS } from './tools/files/undo-log.js';
export { MAX_UNDO_BYTES } from './tools/files/undo-state.js';
export { MAX_PENDING_CALLS, DEFAULT_PENDING_EXPIRY_MS, MAX_PENDING_EXPIRY_MS } from './registry/pending.js';
export {
  WEB_SEARCH_DEFAULT_RESULTS,
  WEB_SEARCH_MAX_RESULTS,
  WEB_SEARCH_MAX_QUERY_CHARS,
  WEB_SEARCH_MAX_TITLE_CHARS,
  WEB_SEARCH_MAX_SNIPPET_CHARS,
  WEB_SEARCH_MAX_RESPONSE_BYTES,
  WEB_SEARCH_TIMEOUT_MS,
  WEB_SEARCH_DEFAULT_BASE_URLS,
  WEB_SEARCH_SETUP,
} from './tools/web/web-search-config.js';
export {
  MAX_SKILL_NAME_CHARS,
  MAX_SKILL_DESCRIPTION_CHARS,
  MAX_SKILL_COMPATIBILITY_CHARS,
  MAX_SKILL_FILE_BYTES,
  MAX_SKILL_FRONTMATTER_BYTES,
  MAX_SKILL_DEPTH,
  MAX_SKILLS,
  MAX_SKILL_DIRS_VISITED,
  DEFAULT_MAX_SKILL_LISTING_CHARS,
  MAX_SKILL_FILES_LISTED,
  MAX_STORED_SKILL_FILES,
  MAX_STORED_SKILL_BYTES,
} from './skills/types.js';
export {
  SKILLS_RECHECK_MS,
  REMOTE_SKILLS_RECHECK_MS,
  MAX_SKILL_SESSIONS,
  STANDARD_SKILL_DIRS,
} from './skills/catalog.js';
export { MIN_LISTED_DESCRIPTION_CHARS, MAX_SKILL_SEARCH_RESULTS } from './skills/listing.js';
export {
  LSP_DIAGNOSTICS_WAIT_MS,
  LSP_MAX_DIAGNOSTICS,
  LSP_MAX_RESULTS,
  LSP_START_TIMEOUT_MS,
  LSP_REQUEST_TIMEOUT_MS,
  LSP_MAX_FILE_BYTES,
  LSP_MAX_MESSAGE_BYTES,
  LSP_MAX_KEPT_DIAGNOSTICS,
  LSP_MAX_MESSAGE_CHARS,
  LSP_MAX_OPEN_DOCUMENTS,
  LSP_MAX_HOVER_CHARS,
  LSP_STOP_GRACE_MS,
} from './lsp/config.js';
export { MAX_PATCH_CHARS, MAX_PATCH_FILES } from './tools/patch/apply-patch.js';
export { PATCH_WRITE_CONCURRENCY } from './tools/patch/commit.js';
export { MAX_NEAREST_LINES, MAX_QUOTED_HUNK_LINES } from './tools/patch/locate.js';
export { MAX_LISTED_PROBLEMS } from './tools/patch/result.js';
