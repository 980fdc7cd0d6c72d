/**
 * A loopback mock of four model APIs, for the provider conformance suite: OpenAI Chat Completions
 * (`/v1/chat/completions`) and Responses (`/v1/responses`), Anthropic Messages (`/v1/messages`) and
 * Gemini (`/v1beta/models/{model}:generateContent` and `:streamGenerateContent?alt=sse`), each in
 * its real wire format, streamed or not as the request asks. It plays a script (one turn per
 * accepted request), records every request body, and refuses with the API's own 400 what the real
 * API refuses: invalid tool names, schema keywords outside the API's subset (see subsets.ts), a
 * tool call left without its result, deferred tools (`defer_loading`) without the API's tool-search
 * tool (or where the API has none), the provider's tool search without what enables it, and — in
 * the `maxDescriptionChars` mode of some OpenAI-compatible endpoints — descriptions over that length.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { apiViolations, sentTools, serverTools, type Api } from './subsets.js';

type Json = Record<string, unknown>;

/** A call the scripted model makes. */
export interface ScriptedCall {
  name: string;
  args: Json;
  /** The provider's call id (generated in the API's style when absent). */
  id?: string;
}

/** What the scripted model answers for one request. */
export type Turn =
  | { text: string; calls?: undefined; error?: undefined }
  | { calls: ScriptedCall[]; text?: string; error?: undefined }
  | {
      error: { status: number; message?: string; /** Sent as retry-after-ms. */ retryAfter?: string };
      text?: undefined;
      calls?: undefined;
    };

/** One request as the mock saw it. */
export interface RecordedRequest {
  api: Api;
  path: string;
  body: Json;
  stream: boolean;
  headers: http.IncomingHttpHeaders;
  /** Set when the mock refused the request (400) instead of playing a turn. */
  refused?: string;
}

/** A tool result found in a request, in API-neutral form. */
export interface SentToolResult {
  callId?: string;
  name?: string;
  content: string;
  isError: boolean;
}

/** A running mock. */
export interface MockProvider {
  /** `http://127.0.0.1:<port>` */
  url: string;
  requests: RecordedRequest[];
  /** The turns not played yet. */
  remaining(): number;
  close(): Promise<void>;
}

/** A turn, or a function of the request that returns one (to answer from what the tools returned). */
export type ScriptStep = Turn | ((req: RecordedRequest) => Turn);

let seq = 0;
const nextId = (prefix: string) => `${prefix}${(++seq).toString(36).padStart(6, '0')}mock`;

/** Options of `startMockProvider`. */
export interface MockOptions {
  /**
   * Refuse tool descriptions longer than this, as Azure OpenAI and several OpenAI-compatible proxies
   * do at 1,024 characters (OpenAI APIs only).
   */
  maxDescriptionChars?: number;
}

/** Starts a mock on a free loopback port, playing `script` in order across whichever APIs are called. */
export async function startMockProvider(script: ScriptStep[], options: MockOptions = {}): Promise<MockProvider> {
  const queue = [...script];
  const requests: RecordedRequest[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      const api = apiOf(req.method ?? '', url.pathname);
      if (!api) return send(res, 404, { error: { message: `No route ${req.method} ${url.pathname}` } });
      let body: Json;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Json;
      } catch {
        return sendError(res, api, 400, 'We could not parse the JSON body of your request.');
      }
      const stream = api === 'gemini' ? url.pathname.endsWith(':streamGenerateContent') : body.stream === true;
      const record: RecordedRequest = { api, path: url.pathname, body, stream, headers: req.headers };
      requests.push(record);
      const refusal = validate(api, body, req.headers, options);
      if (refusal) {
        record.refused = refusal;
        return sendError(res, api, 400, refusal);
      }
      const step = queue.shift();
      if (!step) return sendError(res, api, 500, 'The mock script has no turn left for this request.');
      const turn = typeof step === 'function' ? step(record) : step;
      if (turn.error) return sendError(res, api, turn.error.status, turn.error.message, turn.error.retryAfter);
      const model =
        api === 'gemini' ? decodeURIComponent(url.pathname.split('/').pop()!.split(':')[0]) : String(body.model);
      const calls = (turn.calls ?? []).map((c) => ({ ...c, id: c.id ?? defaultCallId(api) }));
      const text = turn.text ?? '';
      if (stream) streamTurn(res, api, model, text, calls);
      else send(res, 200, respond(api, model, text, calls));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    remaining: () => queue.length,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function apiOf(method: string, pathname: string): Api | undefined {
  if (method !== 'POST') return undefined;
  if (pathname.endsWith('/chat/completions')) return 'openai-chat';
  if (pathname.endsWith('/responses')) return 'openai-responses';
  if (pathname.endsWith('/messages')) return 'anthropic';
  if (/\/models\/[^/]+:(generateContent|streamGenerateContent)$/.test(pathname)) return 'gemini';
  return undefined;
}

function defaultCallId(api: Api): string {
  if (api === 'anthropic') return nextId('toolu_');
  if (api === 'gemini') return nextId('gem_');
  return nextId('call_');
}

// ---------------------------------------------------------------------------------------------
// Refusals the real APIs make

function validate(api: Api, body: Json, headers: http.IncomingHttpHeaders, options: MockOptions): string | undefined {
  for (const tool of sentTools(api, body)) {
    const problems = apiViolations(api, tool);
    if (problems.length) return `Invalid schema for function '${tool.name}': ${problems[0]}`;
  }
  const deferral = deferralRefusal(api, body, headers);
  if (deferral) return deferral;
  const max = options.maxDescriptionChars;
  if (max !== undefined && (api === 'openai-chat' || api === 'openai-responses')) {
    const tools = sentTools(api, body);
    const i = tools.findIndex((t) => (t.description ?? '').length > max);
    if (i >= 0)
      return `Invalid 'tools[${i}].function.description': string too long. Expected a string with maximum length ${max}, but got a string with length ${tools[i].description!.length} instead.`;
  }
  if (api === 'openai-chat') return openaiChatOrphans(body);
  if (api === 'openai-responses') return responsesOrphans(body);
  if (api === 'anthropic') return anthropicOrphans(body);
  return geminiOrphans(body);
}

/** Anthropic's tool-search tool types, and the beta that enables them. */
const ANTHROPIC_SEARCH_TYPES = ['tool_search_tool_regex_20251119', 'tool_search_tool_bm25_20251119'];
const ANTHROPIC_SEARCH_BETA = 'advanced-tool-use-2025-11-20';

/**
 * Deferred loading as each API defines it: Anthropic and OpenAI Responses accept `defer_loading:
 * true` on a function tool only beside their tool-search tool (Anthropic's also needs its beta
 * header); Chat Completions has neither, and Gemini knows no such field.
 */
function deferralRefusal(api: Api, body: Json, headers: http.IncomingHttpHeaders): string | undefined {
  const tools = list(body.tools);
  const deferred = sentTools(api, body).filter((t) => t.deferred);
  const server = serverTools(api, body);
  if (api === 'openai-chat') {
    const i = tools.findIndex((t) => t.type !== 'function');
    if (i >= 0)
      return `Invalid value: '${String(tools[i].type)}'. Supported values are: 'function' and 'custom'. (param: tools[${i}].type)`;
    const j = tools.findIndex((t) => 'defer_loading' in t);
    if (j >= 0) return `Unrecognized request argument supplied: tools[${j}].defer_loading`;
    return undefined;
  }
  if (api === 'openai-responses') {
    if (deferred.length && !server.some((t) => t.type === 'tool_search'))
      return `Tool '${deferred[0].name}' has defer_loading set, which requires the tool_search tool in 'tools'.`;
    return undefined;
  }
  if (api === 'anthropic') {
    const search = server.filter((t) => ANTHROPIC_SEARCH_TYPES.includes(String(t.type)));
    const betas = String(headers['anthropic-beta'] ?? '')
      .split(',')
      .map((b) => b.trim());
    if (search.length && !betas.includes(ANTHROPIC_SEARCH_BETA))
      return `tools.${tools.indexOf(search[0])}: Input tag '${String(search[0].type)}' found using 'type' does not match any of the expected tags`;
    if (deferred.length && !search.length)
      return `Tool '${deferred[0].name}' has defer_loading: true, but no tool search tool (tool_search_tool_regex or tool_search_tool_bm25) is in 'tools'.`;
    if (search.some((t) => t.defer_loading === true)) return 'The tool search tool itself cannot have defer_loading.';
    return undefined;
  }
  if (tools.some((t) => list(t.functionDeclarations).some((f) => 'defer_loading' in f)))
    return 'Invalid JSON payload received. Unknown name "defer_loading": Cannot find field.';
  return undefined;
}

function list(v: unknown): Json[] {
  return Array.isArray(v) ? v.filter((x): x is Json => !!x && typeof x === 'object') : [];
}

function openaiChatOrphans(body: Json): string | undefined {
  const messages = list(body.messages);
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    if (m.role === 'tool') {
      const prev = messages
        .slice(0, i)
        .reverse()
        .find((x) => x.role !== 'tool');
      const ids = list(prev?.tool_calls).map((c) => c.id);
      if (!ids.includes(m.tool_call_id))
        return "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.";
    }
    const calls = list(m.tool_calls);
    if (m.role !== 'assistant' || !calls.length) continue;
    const answered = new Set<unknown>();
    for (let j = i + 1; j < messages.length && messages[j].role === 'tool'; j++) answered.add(messages[j].tool_call_id);
    const missing = calls.map((c) => c.id).filter((id) => !answered.has(id));
    if (missing.length)
      return `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${missing.join(', ')}`;
  }
  return undefined;
}

function responsesOrphans(body: Json): string | undefined {
  const items = list(body.input);
  const outputs = new Set(items.filter((x) => x.type === 'function_call_output').map((x) => x.call_id));
  for (const item of items) {
    if (item.type === 'function_call' && !outputs.has(item.call_id))
      return `No tool output found for function call ${String(item.call_id)}.`;
  }
  return undefined;
}

function anthropicOrphans(body: Json): string | undefined {
  if (typeof body.max_tokens !== 'number') return 'max_tokens: Field required';
  const messages = list(body.messages);
  for (let i = 0; i < messages.length; i++) {
    const uses = list(messages[i].content).filter((b) => b.type === 'tool_use');
    if (messages[i].role !== 'assistant' || !uses.length) continue;
    const next = messages[i + 1];
    const results = new Set(
      list(next?.content)
        .filter((b) => b.type === 'tool_result')
        .map((b) => b.tool_use_id),
    );
    const missing = uses.map((u) => u.id).filter((id) => !results.has(id));
    if (missing.length)
      return `messages.${i + 1}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`;
  }
  return undefined;
}

function geminiOrphans(body: Json): string | undefined {
  const contents = list(body.contents);
  for (let i = 0; i < contents.length; i++) {
    const role = contents[i].role;
    if (role !== 'user' && role !== 'model' && role !== 'function')
      return `Please use a valid role: user, model. Got ${JSON.stringify(role)}.`;
    const calls = list(contents[i].parts).filter((p) => p.functionCall);
    if (!calls.length) continue;
    const responses = list(contents[i + 1]?.parts).filter((p) => p.functionResponse);
    if (responses.length !== calls.length)
      return 'Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.';
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Tool results, as each API carries them (for scripts and assertions)

/** The tool results carried by the last message(s) of a request, in order. */
export function toolResults(req: RecordedRequest): SentToolResult[] {
  const { api, body } = req;
  if (api === 'openai-chat') {
    const messages = list(body.messages);
    const tail: Json[] = [];
    for (let i = messages.length - 1; i >= 0 && messages[i].role === 'tool'; i--) tail.unshift(messages[i]);
    return tail.map((m) => ({ callId: m.tool_call_id as string, content: textOf(m.content), isError: false }));
  }
  if (api === 'openai-responses') {
    const items = list(body.input);
    const tail: Json[] = [];
    for (let i = items.length - 1; i >= 0 && items[i].type === 'function_call_output'; i--) tail.unshift(items[i]);
    return tail.map((m) => ({ callId: m.call_id as string, content: textOf(m.output), isError: false }));
  }
  if (api === 'anthropic') {
    const last = list(body.messages).at(-1);
    return list(last?.content)
      .filter((b) => b.type === 'tool_result')
      .map((b) => ({ callId: b.tool_use_id as string, content: textOf(b.content), isError: b.is_error === true }));
  }
  const last = list(body.contents).at(-1);
  return list(last?.parts)
    .filter((p) => p.functionResponse)
    .map((p) => {
      const fr = p.functionResponse as Json;
      const response = (fr.response ?? {}) as Json;
      const error = response.error as Json | undefined;
      return {
        callId: fr.id as string | undefined,
        name: fr.name as string,
        content: error ? textOf(error.details) : textOf(response.result ?? response.output ?? response),
        isError: !!error,
      };
    });
}

function textOf(v: unknown): string {
  if (typeof v === 'string') return v;
  if (Array.isArray(v))
    return v.map((x: unknown) => (x && typeof x === 'object' && 'text' in x ? String(x.text) : textOf(x))).join('');
  return JSON.stringify(v);
}

/** The text of the first user message of a request (what the agent was asked). */
export function userPrompt(req: RecordedRequest): string {
  const { api, body } = req;
  if (api === 'openai-chat') return textOf(list(body.messages).find((m) => m.role === 'user')?.content ?? '');
  if (api === 'openai-responses') return textOf(list(body.input).find((m) => m.role === 'user')?.content ?? '');
  if (api === 'anthropic') return textOf(list(body.messages).find((m) => m.role === 'user')?.content ?? '');
  return textOf(list(list(body.contents).find((c) => c.role === 'user')?.parts).map((p) => p.text ?? ''));
}

// ---------------------------------------------------------------------------------------------
// Responses in each API's format

function send(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

function sendError(res: http.ServerResponse, api: Api, status: number, message?: string, retryAfter?: string): void {
  const msg = message ?? defaultMessage(status);
  // retry-after-ms keeps the SDKs' retry backoff short in tests (OpenAI's and Anthropic's SDKs honour it).
  const headers: Record<string, string> = retryAfter ? { 'retry-after-ms': retryAfter } : {};
  if (api === 'anthropic') {
    const type =
      status === 401
        ? 'authentication_error'
        : status === 429
          ? 'rate_limit_error'
          : status >= 500
            ? 'api_error'
            : 'invalid_request_error';
    return send(res, status, { type: 'error', error: { type, message: msg } }, headers);
  }
  if (api === 'gemini') {
    const s =
      status === 401
        ? 'UNAUTHENTICATED'
        : status === 429
          ? 'RESOURCE_EXHAUSTED'
          : status >= 500
            ? 'INTERNAL'
            : 'INVALID_ARGUMENT';
    return send(res, status, { error: { code: status, message: msg, status: s } }, headers);
  }
  const type =
    status === 401 ? 'invalid_api_key' : status === 429 ? 'rate_limit_exceeded' : status >= 500 ? 'server_error' : null;
  return send(
    res,
    status,
    { error: { message: msg, type: type ?? 'invalid_request_error', param: null, code: type } },
    headers,
  );
}

function defaultMessage(status: number): string {
  if (status === 401) return 'Incorrect API key provided.';
  if (status === 429) return 'Rate limit reached. Please try again later.';
  if (status >= 500) return 'The server had an error while processing your request.';
  return 'Bad request.';
}

type Call = Required<ScriptedCall>;

function respond(api: Api, model: string, text: string, calls: Call[]): Json {
  const usage = { in: 12, out: 7 };
  if (api === 'openai-chat') {
    return {
      id: nextId('chatcmpl-'),
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model,
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: text || null,
            ...(calls.length
              ? {
                  tool_calls: calls.map((c) => ({
                    id: c.id,
                    type: 'function',
                    function: { name: c.name, arguments: JSON.stringify(c.args) },
                  })),
                }
              : {}),
          },
          finish_reason: calls.length ? 'tool_calls' : 'stop',
        },
      ],
      usage: { prompt_tokens: usage.in, completion_tokens: usage.out, total_tokens: usage.in + usage.out },
    };
  }
  if (api === 'openai-responses') return responsesBody(model, text, calls);
  if (api === 'anthropic') {
    return {
      id: nextId('msg_'),
      type: 'message',
      role: 'assistant',
      model,
      content: [
        ...(text ? [{ type: 'text', text }] : []),
        ...calls.map((c) => ({ type: 'tool_use', id: c.id, name: c.name, input: c.args })),
      ],
      stop_reason: calls.length ? 'tool_use' : 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: usage.in, output_tokens: usage.out },
    };
  }
  return geminiChunk(text, calls, true);
}

function responsesBody(model: string, text: string, calls: Call[]): Json {
  return {
    id: nextId('resp_'),
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status: 'completed',
    model,
    output: responsesOutput(text, calls),
    usage: { input_tokens: 12, output_tokens: 7, total_tokens: 19 },
  };
}

function responsesOutput(text: string, calls: Call[]): Json[] {
  return [
    ...(text
      ? [
          {
            type: 'message',
            id: nextId('msg_'),
            role: 'assistant',
            status: 'completed',
            content: [{ type: 'output_text', text, annotations: [] }],
          },
        ]
      : []),
    ...calls.map((c) => ({
      type: 'function_call',
      id: `fc_${c.id}`,
      call_id: c.id,
      name: c.name,
      arguments: JSON.stringify(c.args),
      status: 'completed',
    })),
  ];
}

function geminiChunk(text: string, calls: Call[], last: boolean): Json {
  return {
    candidates: [
      {
        content: {
          role: 'model',
          parts: [
            ...(text ? [{ text }] : []),
            ...calls.map((c) => ({ functionCall: { id: c.id, name: c.name, args: c.args } })),
          ],
        },
        ...(last ? { finishReason: 'STOP' } : {}),
        index: 0,
      },
    ],
    ...(last ? { usageMetadata: { promptTokenCount: 12, candidatesTokenCount: 7, totalTokenCount: 19 } } : {}),
    modelVersion: 'mock',
  };
}

/** Splits text into a few pieces, as a streaming API sends it. */
function pieces(text: string): string[] {
  if (!text) return [];
  const size = Math.max(1, Math.ceil(text.length / 3));
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

function streamTurn(res: http.ServerResponse, api: Api, model: string, text: string, calls: Call[]): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  const data = (obj: unknown) => res.write(`data: ${JSON.stringify(obj)}\n\n`);
  const event = (name: string, obj: Json) =>
    res.write(`event: ${name}\ndata: ${JSON.stringify({ type: name, ...obj })}\n\n`);
  if (api === 'openai-chat') {
    const id = nextId('chatcmpl-');
    const base = { id, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model };
    const chunk = (delta: Json, finish: string | null = null) =>
      data({ ...base, choices: [{ index: 0, delta, finish_reason: finish }] });
    chunk({ role: 'assistant', content: '' });
    for (const piece of pieces(text)) chunk({ content: piece });
    calls.forEach((c, index) => {
      chunk({ tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.name, arguments: '' } }] });
      for (const piece of pieces(JSON.stringify(c.args)))
        chunk({ tool_calls: [{ index, function: { arguments: piece } }] });
    });
    chunk({}, calls.length ? 'tool_calls' : 'stop');
    data({ ...base, choices: [], usage: { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 } });
    res.end('data: [DONE]\n\n');
    return;
  }
  if (api === 'openai-responses') {
    const full = responsesBody(model, text, calls);
    let sequence = 0;
    const ev = (name: string, obj: Json) => event(name, { sequence_number: sequence++, ...obj });
    ev('response.created', { response: { ...full, status: 'in_progress', output: [] } });
    const output = full.output as Json[];
    output.forEach((item, output_index) => {
      if (item.type === 'message') {
        ev('response.output_item.added', { output_index, item: { ...item, status: 'in_progress', content: [] } });
        for (const delta of pieces(text))
          ev('response.output_text.delta', { item_id: item.id, output_index, content_index: 0, delta });
        ev('response.output_text.done', { item_id: item.id, output_index, content_index: 0, text });
        ev('response.output_item.done', { output_index, item });
      } else {
        ev('response.output_item.added', { output_index, item: { ...item, arguments: '', status: 'in_progress' } });
        for (const delta of pieces(String(item.arguments)))
          ev('response.function_call_arguments.delta', { item_id: item.id, output_index, delta });
        ev('response.function_call_arguments.done', { item_id: item.id, output_index, arguments: item.arguments });
        ev('response.output_item.done', { output_index, item });
      }
    });
    ev('response.completed', { response: full });
    res.end();
    return;
  }
  if (api === 'anthropic') {
    const message = {
      id: nextId('msg_'),
      type: 'message',
      role: 'assistant',
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 12, output_tokens: 1 },
    };
    event('message_start', { message });
    let index = 0;
    if (text) {
      event('content_block_start', { index, content_block: { type: 'text', text: '' } });
      for (const piece of pieces(text))
        event('content_block_delta', { index, delta: { type: 'text_delta', text: piece } });
      event('content_block_stop', { index });
      index++;
    }
    for (const c of calls) {
      event('content_block_start', { index, content_block: { type: 'tool_use', id: c.id, name: c.name, input: {} } });
      for (const piece of pieces(JSON.stringify(c.args)))
        event('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: piece } });
      event('content_block_stop', { index });
      index++;
    }
    event('message_delta', {
      delta: { stop_reason: calls.length ? 'tool_use' : 'end_turn', stop_sequence: null },
      usage: { output_tokens: 7 },
    });
    event('message_stop', {});
    res.end();
    return;
  }
  // Gemini: each SSE event is a whole GenerateContentResponse; text arrives in pieces, calls whole.
  const parts = pieces(text);
  parts.forEach((piece, i) => data(geminiChunk(piece, [], i === parts.length - 1 && !calls.length)));
  if (calls.length) data(geminiChunk('', calls, true));
  if (!parts.length && !calls.length) data(geminiChunk('', [], true));
  res.end();
}
