/**
 * What a model reads about the sandbox, through each real provider class against the loopback mock
 * of its API: bash's description says the sandbox is on, and a refused command's result carries
 * the sentence that says what was refused and why (real bubblewrap; skipped, saying why, without it).
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createAgent } from 'langchain';
import { HumanMessage } from '@langchain/core/messages';
import { createRegistry, registerBuiltinTools } from '../../src/index.js';
import { startMockProvider, toolResults, type MockProvider } from './mock-server.js';
import { APIS, chatModel } from './clients.js';
import { sentTools } from './subsets.js';
import { tempDir } from '../support/helpers.js';

const works = spawnSync('bwrap', ['--ro-bind', '/', '/', '--unshare-all', '--', '/bin/true']).status === 0;
if (!works && process.env.CI) throw new Error('CI must run the sandbox provider suite: install bubblewrap.');
if (!works) console.warn('providers/sandbox.test.ts skipped: bwrap cannot run here. Install bubblewrap to run it.');
const suite = works ? describe : describe.skip;

suite('the sandbox as models read it', () => {
  let base: Awaited<ReturnType<typeof tempDir>>;
  let ws: string;
  let home: string;
  const mocks: MockProvider[] = [];

  beforeAll(async () => {
    base = await tempDir('sandbox-providers-');
    ws = path.join(base.dir, 'ws');
    home = path.join(base.dir, 'home');
    await mkdir(path.join(home, '.ssh'), { recursive: true });
    await mkdir(ws);
    await writeFile(path.join(home, '.ssh/id_rsa'), 'DECOY-PROVIDER-KEY');
  });

  afterAll(async () => {
    await Promise.all(mocks.map((m) => m.close()));
    await base.cleanup();
  });

  for (const api of APIS) {
    it(`${api}: the description says the sandbox is on; a refused read and write come back explained`, async () => {
      const mock = await startMockProvider([
        {
          calls: [
            {
              name: 'bash',
              args: { command: 'cat ~/.ssh/id_rsa; echo x > /etc/toolbelt-provider-probe', description: 'probe' },
            },
          ],
        },
        { text: 'done' },
      ]);
      mocks.push(mock);
      const registry = registerBuiltinTools(createRegistry({ sandbox: { mode: 'required', filesystem: { home } } }));
      try {
        const tools = await registry.tools({ ids: ['bash'], initCtx: { workspaceRoot: ws } });
        const agent = createAgent({ model: chatModel(api, mock.url), tools });
        await agent.invoke({ messages: [new HumanMessage('Read my key')] });
        expect(mock.requests.map((r) => r.refused)).toEqual([undefined, undefined]);
        const bash = sentTools(api, mock.requests[0].body).find((t) => t.name === 'bash')!;
        expect(bash.description).toContain('The OS sandbox is on: commands can write only inside the workspace');
        const result = toolResults(mock.requests[1]).at(-1)!.content;
        expect(result).toContain(`[sandbox: ${home}/.ssh/id_rsa is hidden by the sandbox: it usually holds secrets`);
        expect(result).toContain(
          '[sandbox: /etc/toolbelt-provider-probe is outside the workspace: the sandbox allows writes only to',
        );
        expect(result).not.toContain('DECOY-PROVIDER-KEY');
      } finally {
        await registry.dispose();
      }
    }, 60_000);
  }
});
