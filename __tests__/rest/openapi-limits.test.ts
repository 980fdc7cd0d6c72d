/**
 * The OpenAPI reader's deadline (OPENAPI_IMPORT_TIMEOUT_MS) and heap cap (OPENAPI_IMPORT_HEAP_MB),
 * at and past their edges without waiting 30 s: the bounds are passed smaller to the real loader,
 * whose real worker thread is stopped by the deadline or dies at the heap cap; either way the call
 * fails with a sentence naming the limit, and the reader works again for the next document.
 */
import { describe, it, expect } from '@jest/globals';
import { loadOpenApiDocument } from '../../src/rest/openapi-load.js';
import { OPENAPI_IMPORT_HEAP_MB, OPENAPI_IMPORT_TIMEOUT_MS } from '../../src/constants.js';

/** A valid document padded with `n` small schemas: megabytes of heap in the worker, linear work. */
function padded(n: number) {
  const schemas: Record<string, unknown> = {};
  for (let i = 0; i < n; i++)
    schemas[`S${i}`] = { type: 'object', properties: { id: { type: 'string', description: `item ${i}` } } };
  return { openapi: '3.0.3', info: { title: 'padded', version: '1' }, paths: {}, components: { schemas } };
}

describe('OPENAPI_IMPORT_TIMEOUT_MS', () => {
  it('a document read within the deadline imports; past it, the reader is stopped with a sentence, then works again', async () => {
    const doc = padded(50_000);
    // Past: no worker starts, parses and counts 50,000 schemas within 1 ms.
    await expect(loadOpenApiDocument(doc, undefined, { timeoutMs: 1 })).rejects.toThrow(
      /^The OpenAPI document \(object\) could not be read within 0\.001 s \(OPENAPI_IMPORT_TIMEOUT_MS\)\. Its \$refs are too many or too deep/,
    );
    // Within the default deadline the same document is read, by a new worker.
    const read = await loadOpenApiDocument(doc, undefined, { timeoutMs: OPENAPI_IMPORT_TIMEOUT_MS });
    expect(Object.keys((read.doc.components as { schemas: object }).schemas)).toHaveLength(50_000);
  }, 60_000);
});

describe('OPENAPI_IMPORT_HEAP_MB', () => {
  it('a document that fits the heap imports; one that needs more kills its reader with a sentence, and the next one is read', async () => {
    const big = padded(100_000); // well over 16 MB once parsed in the worker
    await expect(loadOpenApiDocument(big, undefined, { heapMb: 16 })).rejects.toThrow(
      /^The OpenAPI document \(object\) could not be read: its reader stopped \(.+\), most likely past its 16 MB heap \(OPENAPI_IMPORT_HEAP_MB\)\. Import a smaller document\./,
    );
    // The same cap takes a small document: the pool replaced the dead worker.
    const small = await loadOpenApiDocument(padded(10), undefined, { heapMb: 16 });
    expect(Object.keys((small.doc.components as { schemas: object }).schemas)).toHaveLength(10);
    // The default cap takes the big one.
    const whole = await loadOpenApiDocument(big, undefined, { heapMb: OPENAPI_IMPORT_HEAP_MB });
    expect(Object.keys((whole.doc.components as { schemas: object }).schemas)).toHaveLength(100_000);
  }, 120_000);
});
