/**
 * `npm run demo` and the providers: the demo's offline script played by each API's mock through the
 * real provider class (runDemo with that model), and the offline run's tools compared with what the
 * classes sent, so the demo is shown to hand models the same schemas that go to providers.
 * Must not spawn the built demo: __tests__/cli/demo.test.ts runs `node dist/cli/demo.js --offline`.
 */
import { it, expect, afterEach } from '@jest/globals';
import type { StructuredToolInterface } from '@langchain/core/tools';
import { DEMO_SCRIPT, DEMO_TOOLS, runDemo, scriptedDemoModel } from '../../src/cli/demo.js';
import { startMockProvider, type MockProvider } from './mock-server.js';
import { APIS, chatModel } from './clients.js';
import { apiViolations, sentTools } from './subsets.js';

const mocks: MockProvider[] = [];
afterEach(async () => Promise.all(mocks.splice(0).map((m) => m.close())));

const quiet = () => undefined;

/** The offline run, recording the tools the agent bound to the scripted model. */
async function offlineRun() {
  const model = await scriptedDemoModel();
  const bound: StructuredToolInterface[][] = []; // one list per model turn
  const bindTools = model.bindTools.bind(model);
  model.bindTools = (tools) => {
    bound.push(tools as StructuredToolInterface[]);
    return bindTools(tools);
  };
  const result = await runDemo({ model, print: quiet });
  return { result, bound };
}

for (const api of APIS) {
  it(`${api}: the demo's script through the real class; it sends the offline run's schemas, inside the API's subset`, async () => {
    const mock = await startMockProvider([...DEMO_SCRIPT]);
    mocks.push(mock);
    const online = await runDemo({ model: chatModel(api, mock.url), print: quiet });
    const offline = await offlineRun();

    expect(mock.requests.map((r) => [r.api, r.refused])).toEqual(DEMO_SCRIPT.map(() => [api, undefined]));
    expect(online.toolCalls).toEqual(['grep', 'read', 'edit', 'read']);
    expect(offline.result.toolCalls).toEqual(online.toolCalls);
    expect(online.updates.filter((u) => u.status !== 'running').map((u) => [u.toolId, u.success])).toEqual(
      offline.result.updates.filter((u) => u.status !== 'running').map((u) => [u.toolId, u.success]),
    );

    const sent = sentTools(api, mock.requests[0].body);
    expect(sent.map((t) => t.name).sort()).toEqual([...DEMO_TOOLS].sort());
    expect(sent.flatMap((t) => apiViolations(api, t))).toEqual([]);
    // The offline model was handed the very JSON Schemas the provider class sent.
    expect(offline.bound.length).toBeGreaterThan(0);
    for (const tools of offline.bound)
      expect(tools.map((t) => [t.name, t.schema])).toEqual(sent.map((t) => [t.name, t.parameters]));
  });
}
