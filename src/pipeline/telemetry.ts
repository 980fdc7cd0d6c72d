/**
 * OpenTelemetry tracing with the GenAI semantic conventions: each tool call is a span
 * `execute_tool {tool name}` (kind INTERNAL) under the caller's active span, progress reports are
 * span events, and `task` runs its sub-agent in an `invoke_agent {name}` span. `@opentelemetry/api`
 * is an optional peer loaded on the first call, never by importing the package: absent, or present
 * without a registered tracer provider, a call starts no span and does no tracing work.
 * Must not import `@opentelemetry/api` statically (types only), nor let a tracing failure reach a call.
 */
import type * as OtelApi from '@opentelemetry/api';
import type { Tool } from '../authoring/tool.js';
import type { ToolFinalUpdate, ToolUpdate } from './types.js';
import { cutScrubbed } from '../net/scrub.js';

/** Options of `createRegistry({ telemetry })`. */
export interface TelemetryOptions {
  /** `false`: no spans at all, and `@opentelemetry/api` is never loaded. Default true. */
  enabled?: boolean;
  /**
   * Record `gen_ai.tool.call.arguments` and `gen_ai.tool.call.result` (and progress metadata, and
   * the failure's message as the span status) on the spans, cut at MAX_SPAN_CONTENT_CHARS and with
   * URL credentials masked. Off by default: arguments, outputs and error messages may hold file
   * contents, commands and secrets; a failed span then says only its `error.type` and a fixed
   * sentence.
   */
  captureContent?: boolean;
  /** A tracer provider to use instead of the global one (anything with `getTracer`). */
  tracerProvider?: { getTracer(name: string, version?: string): unknown };
}

/** The instrumentation scope name of the spans. */
export const TRACER_NAME = 'agent-toolbelt';
/** Characters of arguments or a result recorded on a span when `captureContent` is on. */
export const MAX_SPAN_CONTENT_CHARS = 8_192;

/** One call's span, as the pipeline sees it. */
export interface CallSpan {
  /** Runs `fn` with this span active, so the tool's own spans (a sub-agent's calls) nest under it. */
  within<T>(fn: () => T): T;
  progress(update: ToolUpdate): void;
  end(final: ToolFinalUpdate): void;
}

/** The module once loaded; null when it cannot be loaded (absent: tracing is off for good). */
let api: typeof OtelApi | null | undefined;
let loading: Promise<void> | undefined;

function load(): Promise<void> {
  return (loading ??= import('@opentelemetry/api').then(
    (m) => {
      api = m;
    },
    () => {
      api = null;
    },
  ));
}

/** A registry's tracing: starts the spans of its calls. */
export class Telemetry {
  private tracer?: OtelApi.Tracer;

  constructor(private readonly options: TelemetryOptions = {}) {}

  /**
   * Starts the span of a call, a child of the caller's active span; undefined when nobody records
   * it (no API, no provider, or tracing off). A promise only while the API is being loaded (the
   * first call of a process).
   */
  start(tool: Tool.Initialized, callID: string, args: unknown): CallSpan | undefined | Promise<CallSpan | undefined> {
    if (api === null || this.options.enabled === false) return undefined;
    if (api === undefined) return load().then(() => this.start(tool, callID, args));
    try {
      const otel = api;
      const tracer = (this.tracer ??= this.options.tracerProvider
        ? (this.options.tracerProvider.getTracer(TRACER_NAME) as OtelApi.Tracer)
        : otel.trace.getTracer(TRACER_NAME));
      const span = tracer.startSpan(`execute_tool ${tool.id}`, { kind: otel.SpanKind.INTERNAL });
      // No provider: a non-recording span; nothing else is worth doing.
      if (!span.isRecording()) return undefined;
      span.setAttributes({
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': tool.id,
        'gen_ai.tool.call.id': callID,
        'gen_ai.tool.type': 'function',
        'gen_ai.tool.description': tool.description,
      });
      if (this.options.captureContent) span.setAttribute('gen_ai.tool.call.arguments', clip(json(args)));
      return new RecordingCallSpan(otel, span, this.options.captureContent === true);
    } catch {
      return undefined;
    }
  }

  /**
   * Runs `fn` (a sub-agent's whole run) in an `invoke_agent {name}` span under the active one;
   * `fn` runs as it is when nothing records spans.
   */
  async agentSpan<T>(name: string, attributes: Record<string, string>, fn: () => Promise<T>): Promise<T> {
    if (this.options.enabled === false) return fn();
    if (api === undefined) await load();
    const otel = api;
    if (!otel) return fn();
    let span: OtelApi.Span;
    try {
      const tracer = (this.tracer ??= this.options.tracerProvider
        ? (this.options.tracerProvider.getTracer(TRACER_NAME) as OtelApi.Tracer)
        : otel.trace.getTracer(TRACER_NAME));
      span = tracer.startSpan(`invoke_agent ${name}`, { kind: otel.SpanKind.INTERNAL });
      if (!span.isRecording()) return fn();
      span.setAttributes({ 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': name, ...attributes });
    } catch {
      return fn();
    }
    try {
      return await otel.context.with(otel.trace.setSpan(otel.context.active(), span), fn);
    } catch (err) {
      safely(() => {
        const type = err instanceof Error && err.name !== 'Error' ? err.name : 'agent_error';
        span.setAttribute('error.type', type);
        span.setStatus({
          code: otel.SpanStatusCode.ERROR,
          message: this.options.captureContent
            ? clip(err instanceof Error ? err.message : json(err))
            : contentFreeStatus('sub-agent run', type),
        });
      });
      throw err;
    } finally {
      safely(() => span.end());
    }
  }
}

class RecordingCallSpan implements CallSpan {
  constructor(
    private readonly otel: typeof OtelApi,
    private readonly span: OtelApi.Span,
    private readonly captureContent: boolean,
  ) {}

  within<T>(fn: () => T): T {
    const { otel } = this;
    return otel.context.with(otel.trace.setSpan(otel.context.active(), this.span), fn);
  }

  progress(update: ToolUpdate): void {
    safely(() =>
      this.span.addEvent('gen_ai.tool.progress', {
        'gen_ai.tool.call.id': update.callID,
        'agent_toolbelt.progress.title': update.result.title,
        ...(this.captureContent ? { 'agent_toolbelt.progress.metadata': clip(json(update.result.metadata)) } : {}),
      }),
    );
  }

  end(final: ToolFinalUpdate): void {
    safely(() => {
      const { span, otel } = this;
      if (this.captureContent) span.setAttribute('gen_ai.tool.call.result', clip(final.result.output));
      if (!final.success) {
        const type = errorType(final.error ?? '');
        span.setAttribute('error.type', type);
        span.setStatus({
          code: otel.SpanStatusCode.ERROR,
          message: this.captureContent ? clip(final.error ?? '') : contentFreeStatus('tool call', type),
        });
      }
      span.end();
    });
  }
}

/**
 * A low-cardinality class of a failure, as `error.type`: the pipeline's own failures by their
 * sentence, anything a tool reported `tool_error`.
 */
export function errorType(message: string): string {
  if (/ timed out after \d+ ms/.test(message)) return 'timeout';
  if (/ was aborted\b/.test(message)) return 'aborted';
  if (/^Invalid arguments for tool /.test(message)) return 'invalid_arguments';
  if (/^Unknown tool /.test(message)) return 'unknown_tool';
  if (/^The \S+ call was not run: /.test(message) || / permissions? which (is|are) not granted\./.test(message))
    return 'refused';
  return 'tool_error';
}

/**
 * A failed span's status when content capture is off: the class of the failure and nothing of the
 * call's text (a tool's error can quote the file it read: edit's closest candidate, a command's
 * output).
 */
export function contentFreeStatus(what: string, type: string): string {
  return `The ${what} failed (${type}); its message is recorded only with telemetry: { captureContent: true }.`;
}

function json(value: unknown): string {
  try {
    return JSON.stringify(value) ?? typeof value;
  } catch {
    return `[${typeof value} that cannot be shown]`;
  }
}

/** Content as a span records it: URL credentials masked, then cut at MAX_SPAN_CONTENT_CHARS (the order scrub.ts requires). */
function clip(text: string): string {
  return cutScrubbed(text, MAX_SPAN_CONTENT_CHARS);
}

function safely(fn: () => void): void {
  try {
    fn();
  } catch {
    // A tracing failure (a throwing exporter or processor) must never reach the call.
  }
}
