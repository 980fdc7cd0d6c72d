/**
 * apply_patch served over MCP (the SDK's client on an in-memory transport) and over deepagents
 * backends (FilesystemBackend in virtual mode, StoreBackend): a multi-file patch lands, a failing
 * one changes nothing and says why, the stale-write rule holds, and undo_turn takes a patch back.
 */
import { describe, it, expect, afterEach, beforeEach } from '@jest/globals';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { InMemoryStore } from '@langchain/langgraph';
import { FilesystemBackend, StoreBackend } from 'deepagents';
import { createRegistry, registerBuiltinTools } from '../../../src/index.js';
import { createMcpServer } from '../../../src/mcp/server.js';
import { tempDir } from '../../support/helpers.js';

let dir: string;
let cleanup: () => Promise<void>;
beforeEach(async () => {
  ({ dir, cleanup } = await tempDir('apply-patch-surfaces-'));
});
afterEach(() => cleanup());

const patch = (...body: string[]) => ['*** Begin Patch', ...body, '*** End Patch'].join('\n');
const TWO_FILES = patch(
  '*** Update File: a.txt',
  '@@',
  '-alpha',
  '+ALPHA',
  '*** Add File: sub/b.txt',
  '+beta',
  '*** Delete File: c.txt',
);

describe('over MCP', () => {
  it('lists apply_patch with its one string parameter, applies a patch and refuses a failing one whole', async () => {
    await fs.writeFile(path.join(dir, 'a.txt'), 'alpha\n');
    await fs.writeFile(path.join(dir, 'c.txt'), 'gamma\n');
    const registry = registerBuiltinTools(createRegistry(), { edits: 'patch' });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await createMcpServer(registry, { initCtx: { workspaceRoot: dir } }).connect(serverSide);
    const client = new Client({ name: 'test', version: '1' });
    await client.connect(clientSide);
    try {
      const listed = (await client.listTools()).tools.find((t) => t.name === 'apply_patch');
      expect(listed?.inputSchema).toMatchObject({
        type: 'object',
        properties: { input: { type: 'string' } },
        required: ['input'],
      });
      const text = (r: Awaited<ReturnType<typeof client.callTool>>) => (r.content as Array<{ text: string }>)[0].text;
      await client.callTool({ name: 'read', arguments: { filePath: 'a.txt' } });
      await client.callTool({ name: 'read', arguments: { filePath: 'c.txt' } });
      const failing = await client.callTool({
        name: 'apply_patch',
        arguments: { input: TWO_FILES.replace('-alpha', '-omega') },
      });
      expect(failing.isError).toBe(true);
      expect(text(failing)).toContain('The patch was not applied, so nothing was changed:\n- a.txt, hunk 1');
      expect(await fs.readdir(dir)).toEqual(['a.txt', 'c.txt']);
      const ok = await client.callTool({ name: 'apply_patch', arguments: { input: TWO_FILES } });
      expect(text(ok)).toContain('Applied the patch to 3 files');
      expect(await fs.readFile(path.join(dir, 'a.txt'), 'utf8')).toBe('ALPHA\n');
      expect(await fs.readFile(path.join(dir, 'sub/b.txt'), 'utf8')).toBe('beta\n');
    } finally {
      await client.close();
    }
  });
});

describe.each([
  ['FilesystemBackend', () => new FilesystemBackend({ rootDir: dir, virtualMode: true })],
  ['StoreBackend', () => new StoreBackend({ store: new InMemoryStore(), namespace: ['patch'] })],
] as const)('over %s', (_name, make) => {
  it('applies a multi-file patch, refuses a failing or stale one whole, and undo_turn takes it back', async () => {
    const backend = make();
    await backend.write('/a.txt', 'alpha\n');
    await backend.write('/c.txt', 'gamma\n');
    const registry = registerBuiltinTools(createRegistry({ loopGuard: false }), { edits: 'both' });
    const initCtx = { backend };
    const call = (tool: string, args: Record<string, unknown>, turn: string) =>
      registry.execute(tool, args, { sessionID: 's', messageID: turn }, initCtx);
    // FilesystemBackend throws for a missing file, StoreBackend answers an error: both are "absent" here.
    const content = async (p: string) => (await backend.readRaw(p).catch(() => undefined))?.data?.content;

    const unread = await call('apply_patch', { input: TWO_FILES }, 't1');
    expect(unread.error).toContain('File a.txt has not been read in this session');
    await call('read', { filePath: 'a.txt' }, 't1');
    await call('read', { filePath: 'c.txt' }, 't1');
    const failing = await call('apply_patch', { input: TWO_FILES.replace('-alpha', '-omega') }, 't1');
    expect(failing.error).toContain('- a.txt, hunk 1');
    expect([await content('/a.txt'), await content('/sub/b.txt'), await content('/c.txt')]).toEqual([
      'alpha\n',
      undefined,
      'gamma\n',
    ]);
    const ok = await call('apply_patch', { input: TWO_FILES }, 't2');
    expect(ok.result.output).toBe(
      'Applied the patch to 3 files (+2 -2 lines):\nM a.txt (+1 -1)\nA sub/b.txt (+1 -0)\nD c.txt (+0 -1)',
    );
    expect([await content('/a.txt'), await content('/sub/b.txt'), await content('/c.txt')]).toEqual([
      'ALPHA\n',
      'beta\n',
      undefined,
    ]);
    const undone = await call('undo_turn', {}, 't3');
    expect(undone.result.output).toContain('apply_patch of a.txt, sub/b.txt, c.txt');
    expect([await content('/a.txt'), await content('/sub/b.txt'), await content('/c.txt')]).toEqual([
      'alpha\n',
      undefined,
      'gamma\n',
    ]);
  });
});
