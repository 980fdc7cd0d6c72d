/**
 * Reading an OpenAPI document for the import, bounded: a URL is fetched through the SSRF guard
 * here, and the $ref resolution (@apidevtools/json-schema-ref-parser) runs in a worker thread
 * (openapi-worker.mjs) with a node budget, a deadline and a heap cap, so a small document whose
 * shared $refs expand exponentially fails with a sentence instead of hanging the process.
 * File $refs: only for a document given as a file, inside its own directory, JSON or YAML; a
 * document given as an object or fetched by URL may only refer inside itself.
 * Must not build tools (openapi.ts does) nor load the resolver on the main thread.
 */
import { WorkerPool } from '../platform/worker-pool.js';
import { compilePolicy, type SsrfPolicy } from '../net/ssrf.js';
import { HTTP_DEFAULT_TIMEOUT_SECONDS, renderBody, sendHttp, statusFailure } from '../net/http.js';
import { scrubText, sentSecretForms, urlCredentials } from '../net/scrub.js';
import { describeThrown, errorMessage } from '../text/describe.js';

/**
 * Nodes (objects, arrays and values) a document may have once every $ref is replaced by its
 * target (a $ref to itself, a cycle, counts as one); a document past it is refused before it is expanded.
 */
export const OPENAPI_MAX_EXPANDED_NODES = 10_000_000;
/** Longest the reading and $ref resolution of one document may take before its worker is stopped. */
export const OPENAPI_IMPORT_TIMEOUT_MS = 30_000;
/** Heap of the worker that resolves a document's $refs, in MB; a document that needs more fails. */
export const OPENAPI_IMPORT_HEAP_MB = 512;

const WORKER_URL = new URL('./openapi-worker.mjs', import.meta.url);

type Reply = { doc?: Record<string, unknown>; nodes?: number; tooLarge?: boolean; refused?: boolean; failure?: string };

/** One pool per heap cap (the default's, and any a test asks for): a worker's heap is fixed when it starts. */
const pools = new Map<number, WorkerPool<Reply>>();

/** The bounds of reading one document; each defaults to its named limit (tests pass smaller ones). */
export interface LoadLimits {
  timeoutMs?: number;
  heapMb?: number;
  maxNodes?: number;
}

/** A dereferenced document and the URL it came from (for relative server URLs). */
export interface LoadedDocument {
  doc: Record<string, unknown>;
  base?: URL;
}

/** Reads `source` (a file path, an http(s) URL or an object) and resolves its $refs within the bounds. */
export async function loadOpenApiDocument(
  source: string | object,
  ssrfPolicy: SsrfPolicy | undefined,
  limits: LoadLimits = {},
): Promise<LoadedDocument> {
  const name = typeof source === 'string' ? source : '(object)';
  if (typeof source === 'string' && /^https?:\/\//i.test(source)) {
    const url = new URL(source);
    const request = { method: 'GET', url, headers: { Accept: 'application/json' } };
    // Credentials in the document's URL go out as Basic auth: no message shows them in any form.
    const secrets = sentSecretForms(urlCredentials(source), request);
    let json: unknown;
    let base: URL;
    try {
      const res = await sendHttp(request, {
        policy: compilePolicy(ssrfPolicy),
        timeoutMs: HTTP_DEFAULT_TIMEOUT_SECONDS * 1000,
      });
      if (res.status < 200 || res.status > 299) throw statusFailure(res, 'GET', secrets);
      const body = renderBody(res, 'GET');
      if (body.kind !== 'json' || !body.json || typeof body.json !== 'object')
        throw new Error(
          `${url.href} did not answer with a JSON document (${body.contentType}). Save a YAML document to a file and import the file.`,
        );
      json = body.json;
      base = res.finalUrl;
    } catch (err) {
      // No `cause`: it may carry the credentials this message scrubs.
      // eslint-disable-next-line preserve-caught-error
      throw new Error(scrubText(errorMessage(err), secrets));
    }
    return { doc: await resolve({ kind: 'object', doc: json }, scrubText(url.href, secrets), limits), base };
  }
  if (typeof source === 'string') return { doc: await resolve({ kind: 'file', path: source }, name, limits) };
  let doc: unknown;
  try {
    // Checked here: a value the worker cannot receive would fail inside the pool, not as a sentence.
    doc = structuredClone(source);
  } catch (err) {
    throw new Error(
      `The OpenAPI document ${name} holds a value that is not JSON (${describeThrown(err)}). Pass plain JSON data, or a file.`,
      { cause: err },
    );
  }
  return { doc: await resolve({ kind: 'object', doc }, name, limits) };
}

async function resolve(
  job: Record<string, unknown>,
  name: string,
  limits: LoadLimits,
): Promise<Record<string, unknown>> {
  const heapMb = limits.heapMb ?? OPENAPI_IMPORT_HEAP_MB;
  const timeoutMs = limits.timeoutMs ?? OPENAPI_IMPORT_TIMEOUT_MS;
  const maxNodes = limits.maxNodes ?? OPENAPI_MAX_EXPANDED_NODES;
  let pool = pools.get(heapMb);
  if (!pool)
    pools.set(heapMb, (pool = new WorkerPool(WORKER_URL, 1, 'OpenAPI reader', { maxOldGenerationSizeMb: heapMb })));
  let outcome: Awaited<ReturnType<WorkerPool<Reply>['run']>>;
  try {
    outcome = await pool.run({ message: { ...job, maxNodes }, timeoutMs });
  } catch (err) {
    throw new Error(
      `The OpenAPI document ${name} could not be read: its reader stopped (${describeThrown(err)}), ` +
        `most likely past its ${heapMb} MB heap (OPENAPI_IMPORT_HEAP_MB). Import a smaller document.`,
      { cause: err },
    );
  }
  if (!('reply' in outcome))
    throw new Error(
      `The OpenAPI document ${name} could not be read within ${timeoutMs / 1000} s (OPENAPI_IMPORT_TIMEOUT_MS). ` +
        'Its $refs are too many or too deep; import a smaller document, or only the operations you need.',
    );
  const reply = outcome.reply;
  if (reply.tooLarge)
    throw new Error(
      `The OpenAPI document ${name} expands to more than ${maxNodes.toLocaleString('en-US')} nodes ` +
        '(OPENAPI_MAX_EXPANDED_NODES) once its $refs are resolved, so it was not imported: its shared $refs nest too wide and deep. ' +
        'Import a smaller document, or cut the nesting of its schemas.',
    );
  if (reply.failure !== undefined)
    throw new Error(
      reply.refused
        ? `The OpenAPI document ${name} was not imported: ${reply.failure}.`
        : `The OpenAPI document ${name} could not be read: ${reply.failure}`,
    );
  return reply.doc!;
}
