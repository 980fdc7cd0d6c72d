/**
 * Tools imported from the Petstore 3 OpenAPI document, bound to each real provider class: the
 * definitions the class sends to a loopback mock are inside that API's subset (strict mode too)
 * and toolbelt's own rules (a description on every property), and so is http_request with them.
 */
import { describe, it, expect } from '@jest/globals';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { HumanMessage } from '@langchain/core/messages';
import { createRegistry, registerBuiltinTools } from '../../src/index.js';
import { registerOpenApiTools } from '../../src/rest/index.js';
import { startMockProvider } from './mock-server.js';
import { APIS, chatModel } from './clients.js';
import { apiViolations, sentTools, toolbeltViolations, type Api } from './subsets.js';

const PETSTORE = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'openapi', 'petstore3.json');

async function send(api: Api, strict = false) {
  const registry = registerBuiltinTools(createRegistry(), ['http_request']);
  const { ids } = await registerOpenApiTools(registry, PETSTORE, { serverUrl: 'https://petstore3.swagger.io/api/v3' });
  const tools = await registry.tools({ strict });
  const mock = await startMockProvider([{ text: 'ok' }]);
  try {
    await chatModel(api, mock.url, { strict }).bindTools!(tools).invoke([new HumanMessage('hi')]);
    expect(mock.requests.map((r) => r.refused)).toEqual([undefined]);
    return { ids: ['http_request', ...ids], sent: sentTools(api, mock.requests[0].body) };
  } finally {
    await mock.close();
  }
}

describe('Petstore operations as each provider class sends them', () => {
  for (const api of APIS) {
    it(`${api}: every operation is sent and accepted`, async () => {
      const { ids, sent } = await send(api);
      expect(sent.map((t) => t.name)).toEqual(ids);
      expect(ids).toHaveLength(19);
      expect(sent.flatMap((t) => apiViolations(api, t))).toEqual([]);
      expect(sent.flatMap((t) => toolbeltViolations(t))).toEqual([]);
    });
  }

  for (const api of ['openai-chat', 'openai-responses'] as const) {
    it(`${api} strict mode: every operation passes the strict subset`, async () => {
      const { ids, sent } = await send(api, true);
      expect(sent.map((t) => [t.name, t.strict])).toEqual(ids.map((id) => [id, true]));
      expect(sent.flatMap((t) => apiViolations(api, t))).toEqual([]);
    });
  }
});
