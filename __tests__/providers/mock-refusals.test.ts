/**
 * The mocks refuse what the real APIs refuse, through the real provider classes: an invalid tool
 * name, a schema keyword outside the API's subset, and a tool call left without its result.
 */
import { describe, it, expect, afterEach } from '@jest/globals';
import { AIMessage, HumanMessage } from '@langchain/core/messages';
import { startMockProvider, type MockProvider } from './mock-server.js';
import { APIS, chatModel } from './clients.js';

const mocks: MockProvider[] = [];
afterEach(async () => Promise.all(mocks.splice(0).map((m) => m.close())));

async function send(api: (typeof APIS)[number], tools: unknown[], messages: unknown[]) {
  const mock = await startMockProvider([{ text: 'accepted' }]);
  mocks.push(mock);
  const model = chatModel(api, mock.url);
  const bound = tools.length ? model.bindTools!(tools as never) : model;
  const error = await bound.invoke(messages as never).then(
    () => undefined,
    (e: Error) => e.message,
  );
  return { error, refused: mock.requests[0]?.refused };
}

const tool = (name: string, parameters: Record<string, unknown>) => ({
  type: 'function',
  function: { name, description: 'A tool', parameters },
});
const plain = { type: 'object', properties: { n: { type: 'integer', description: 'A number' } } };

describe.each(APIS)('%s mock refuses as the real API does', (api) => {
  it('an invalid tool name', async () => {
    const res = await send(api, [tool('read file!', plain)], [new HumanMessage('hi')]);
    expect(res.refused).toMatch(/read file!/);
    expect(res.error).toMatch(/400/);
  });

  it('a tool call left without its result', async () => {
    const res = await send(
      api,
      [tool('count', plain)],
      [
        new HumanMessage('count'),
        new AIMessage({ content: '', tool_calls: [{ id: 'call_1', name: 'count', args: { n: 1 } }] }),
        new HumanMessage('and?'),
      ],
    );
    expect(res.refused).toMatch(/tool|function/i);
    expect(res.error).toMatch(/400/);
  });

  it('accepts a plain, complete request', async () => {
    expect(await send(api, [tool('count', plain)], [new HumanMessage('hi')])).toEqual({
      error: undefined,
      refused: undefined,
    });
  });
});

it('gemini refuses keywords outside its Schema subset (exclusive bounds, $ref, $defs, const)', async () => {
  for (const extra of [
    { exclusiveMinimum: 0 },
    { exclusiveMaximum: 10 },
    { $ref: '#/$defs/n' },
    { $defs: { n: { type: 'integer' } } },
    { const: 3 },
  ]) {
    const schema = { type: 'object', properties: { n: { type: 'integer', description: 'A number', ...extra } } };
    const res = await send('gemini', [tool('count', schema)], [new HumanMessage('hi')]);
    expect(res.refused).toContain(`Unknown name "${Object.keys(extra)[0]}"`);
    expect(res.error).toMatch(/400/);
  }
});

it('gemini refuses a format outside its list (uri on a string, int32 on a string)', async () => {
  for (const format of ['uri', 'email', 'int32']) {
    const schema = { type: 'object', properties: { s: { type: 'string', description: 'A text', format } } };
    const res = await send('gemini', [tool('echo', schema)], [new HumanMessage('hi')]);
    expect(res.refused).toContain(`format "${format}" is not supported for string type`);
    expect(res.error).toMatch(/400/);
  }
  // The formats Gemini documents for a string pass.
  const ok = { type: 'object', properties: { s: { type: 'string', description: 'A time', format: 'date-time' } } };
  expect(await send('gemini', [tool('echo', ok)], [new HumanMessage('hi')])).toEqual({
    error: undefined,
    refused: undefined,
  });
});

it('openai strict mode refuses an optional field that is not required-nullable', async () => {
  const mock = await startMockProvider([{ text: 'accepted' }]);
  mocks.push(mock);
  const model = chatModel('openai-chat', mock.url, { strict: true });
  const schema = {
    type: 'object',
    properties: { n: { type: 'integer', description: 'n' } },
    additionalProperties: false,
  };
  await expect(model.bindTools!([tool('count', schema)] as never).invoke([new HumanMessage('hi')])).rejects.toThrow(
    /Missing 'n'/,
  );
});
