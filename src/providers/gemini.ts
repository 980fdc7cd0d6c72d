/**
 * A workaround for @langchain/google-genai (seen in 2.3.2): it sends the results of parallel tool
 * calls as one `user` content per result, and the Gemini API refuses that with 400 "Please ensure
 * that the number of function response parts is equal to the number of function call parts of the
 * function call turn." This merges consecutive function-response contents into one, as the API
 * documents for parallel function calling, just before each request leaves the class.
 * Must not change anything else in a request; remove it when the package fixes the bug.
 */

interface Content {
  role?: string;
  parts?: Array<Record<string, unknown>>;
}

interface GenerateRequest {
  contents?: Content[];
}

type Generate = (request: GenerateRequest, ...rest: unknown[]) => unknown;

const PATCHED = Symbol.for('agent-toolbelt.gemini-parallel-results');

/** Merges runs of `user` contents that hold only function responses into one content each. */
function mergeFunctionResponses(contents: Content[]): Content[] {
  const out: Content[] = [];
  const onlyResponses = (c: Content | undefined) =>
    !!c && c.role === 'user' && !!c.parts?.length && c.parts.every((p) => 'functionResponse' in p);
  for (const content of contents) {
    const prev = out[out.length - 1];
    if (onlyResponses(content) && onlyResponses(prev))
      out[out.length - 1] = { ...prev, parts: [...prev.parts!, ...content.parts!] };
    else out.push(content);
  }
  return out;
}

/**
 * Makes a `ChatGoogleGenerativeAI` send parallel tool results the way the Gemini API requires.
 * Returns the same model; other objects are returned untouched. Idempotent.
 */
export function fixGeminiParallelToolResults<T>(model: T): T {
  const client = (model as { client?: Record<string | symbol, unknown> } | null)?.client;
  if (!client || client[PATCHED]) return model;
  for (const method of ['generateContent', 'generateContentStream'] as const) {
    const original = client[method];
    if (typeof original !== 'function') continue;
    const bound = (original as Generate).bind(client);
    client[method] = (request: GenerateRequest, ...rest: unknown[]) =>
      bound(
        request && Array.isArray(request.contents)
          ? { ...request, contents: mergeFunctionResponses(request.contents) }
          : request,
        ...rest,
      );
  }
  client[PATCHED] = true;
  return model;
}
