/**
 * What a model receives from the API tools when a server echoes their credentials (issue 21, items
 * 6 and 7), through each real provider class against the loopback mock of its API: a REST error
 * quote cut inside the echoed bearer token, and http_request's Basic credentials echoed back. The
 * requests the provider sends must carry none of either.
 */
import { it, expect, beforeAll, afterAll } from '@jest/globals';
import http from 'node:http';
import { createAgent } from 'langchain';
import { HumanMessage } from '@langchain/core/messages';
import { createRegistry, registerBuiltinTools } from '../../src/index.js';
import { registerRestTools } from '../../src/rest/index.js';
import { HTTP_ERROR_BODY_CHARS } from '../../src/net/http.js';
import { startMockProvider, toolResults } from './mock-server.js';
import { APIS, chatModel } from './clients.js';
import { listenLoopback, closeServer } from '../support/helpers.js';

const TOKEN = 'tQ7xW3vK9mP2rT8yL4nB6cJ1hZ5d';
const PASSWORD = 'pw-provider-Secret-41';
let api: http.Server;
let apiBase: string;

beforeAll(async () => {
  api = http.createServer((req, res) => {
    const url = new URL(req.url!, 'http://x');
    res.writeHead(url.pathname === '/echo-error' ? 400 : 200, { 'content-type': 'text/plain' });
    res.end(`echo: ${url.searchParams.get('pad') ?? ''}${req.headers.authorization ?? ''} (end)`);
  });
  apiBase = await listenLoopback(api);
});
afterAll(() => closeServer(api));

/** Every run of 4 characters of `secret` found in `text`. */
const pieces = (text: string, secret: string) =>
  Array.from({ length: secret.length - 3 }, (_, i) => secret.slice(i, i + 4)).filter((p) => text.includes(p));

for (const provider of APIS)
  it(`${provider}: the model never receives part of an echoed token or of the Basic credentials`, async () => {
    // The pad puts the 2,000-character cut in the middle of the token.
    const pad = 'p'.repeat(HTTP_ERROR_BODY_CHARS - 'echo: Bearer '.length - 14);
    const basic = Buffer.from(`alice:${PASSWORD}`).toString('base64');
    const mock = await startMockProvider([
      {
        calls: [
          { name: 'rest__echo', args: { pad } },
          { name: 'http_request', args: { method: 'GET', url: `http://alice:${PASSWORD}@${apiBase.slice(7)}/ok` } },
        ],
      },
      { text: 'done' },
    ]);
    try {
      const registry = registerBuiltinTools(createRegistry(), ['http_request']);
      registerRestTools(
        registry,
        [
          {
            name: 'echo',
            description: 'Echo.',
            url: `${apiBase}/echo-error`,
            query: { pad: '{pad}' },
            headers: { Authorization: 'Bearer ${TOKEN}' },
            ssrfPolicy: { allowPrivateNetwork: true },
          },
        ],
        { env: { TOKEN } },
      );
      const tools = await registry.tools({ initCtx: { allowPrivateNetwork: true } });
      await createAgent({ model: chatModel(provider, mock.url), tools }).invoke({
        messages: [new HumanMessage('Call both tools.')],
      });
      expect(mock.requests.map((r) => r.refused)).toEqual([undefined, undefined]);
      const [rest, direct] = toolResults(mock.requests[1]);
      expect(rest.content).toContain('answered HTTP 400');
      expect(rest.content).toContain('Bearer ***');
      expect(direct.content).toContain('Basic ***');
      // The whole request: the token and the base64 appear nowhere (the password does, in the
      // model's own call arguments, which it wrote; never in a tool result).
      const sent = JSON.stringify(mock.requests[1].body);
      expect(pieces(sent, TOKEN)).toEqual([]);
      expect(pieces(sent, basic)).toEqual([]);
      expect([rest.content, direct.content].join('\n')).not.toContain(PASSWORD);
    } finally {
      await mock.close();
    }
  });
