/**
 * An OpenAPI document passed as an object whose property getter throws a value String() cannot
 * show (an object without a prototype, a throwing toString, a symbol, a proxy whose traps throw):
 * importOpenApi rejects with a sentence naming the document, and nothing escapes (issue 31 item 7).
 */
import { describe, it, expect } from '@jest/globals';
import { importOpenApi } from '../../src/rest/index.js';
import { HOSTILE_VALUES, letRejectionsSurface } from '../support/hostile-values.js';

describe.each(HOSTILE_VALUES)('a document whose getter throws %s', (_what, make) => {
  it('is refused with a sentence', async () => {
    const doc = {
      openapi: '3.0.0',
      get info(): never {
        throw make();
      },
      paths: {},
    };
    const refused = await importOpenApi(doc, { serverUrl: 'http://127.0.0.1:9' }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(Error);
    expect((refused as Error).message).toMatch(
      /holds a value that is not JSON \((an object without a text form|the symbol hostile)\)\. Pass plain JSON data, or a file\./,
    );
    await letRejectionsSurface();
  });
});
