/**
 * The policy holds inside searches over a deepagents backend too: grep (the backend's literal grep
 * and our regex over readRaw), glob and list over the backend's root leave out the backend paths
 * the policy refuses, or whose read would ask (the default policy's secret files), say how many
 * without naming them, and show the rest. The host's disk is never consulted for a backend path.
 * Real backends: FilesystemBackend over a temp dir, StoreBackend over InMemoryStore.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import fs from 'node:fs';
import path from 'node:path';
import { InMemoryStore } from '@langchain/langgraph';
import { FilesystemBackend, StoreBackend } from 'deepagents';
import {
  createPolicy,
  createRegistry,
  registerBuiltinTools,
  type AnyBackendProtocol,
  type PolicyRule,
} from '../../src/index.js';
import { tempDir } from '../support/helpers.js';

const FILES: Record<string, string> = {
  'open/a.txt': 'MARK open-a',
  'deep/x/fine.txt': 'MARK fine',
  'secrets/key.txt': 'MARK secret-key',
  'deep/x/secrets/inner.txt': 'MARK secret-inner',
  '.env': 'MARK env-body',
  'config/.env.local': 'MARK env-local',
};
const LEAKS = ['secret-key', 'secret-inner', 'env-body', 'env-local', 'key.txt', 'inner.txt', '.env.local'];
const RULES: PolicyRule[] = [{ pattern: '**/secrets/**', action: 'deny', reason: 'secrets stay unread' }];

let dir: { dir: string; cleanup: () => Promise<void> };
let host: { dir: string; cleanup: () => Promise<void> };
const backends: Array<[string, () => AnyBackendProtocol]> = [];

beforeAll(async () => {
  dir = await tempDir('policy-backend-fs-');
  host = await tempDir('policy-backend-host-');
  for (const [f, text] of Object.entries(FILES)) {
    fs.mkdirSync(path.dirname(path.join(dir.dir, f)), { recursive: true });
    fs.writeFileSync(path.join(dir.dir, f), `${text}\n`);
  }
  const store = new InMemoryStore();
  const sb = new StoreBackend({ store, namespace: ['policy-search'] });
  const up = await sb.uploadFiles(
    Object.entries(FILES).map(([f, text]) => [`/${f}`, new TextEncoder().encode(`${text}\n`)] as [string, Uint8Array]),
  );
  expect(up.every((r) => !r.error)).toBe(true);
  backends.push(
    ['FilesystemBackend', () => new FilesystemBackend({ rootDir: dir.dir, virtualMode: true })],
    ['StoreBackend', () => new StoreBackend({ store, namespace: ['policy-search'] })],
  );
});
afterAll(async () => {
  await dir.cleanup();
  await host.cleanup();
});

async function run(
  rules: PolicyRule[] | undefined,
  backend: AnyBackendProtocol,
  tool: string,
  args: Record<string, unknown>,
) {
  const registry = registerBuiltinTools(createRegistry(rules ? { policy: createPolicy({ rules }) } : {}));
  // The host workspace holds none of these paths: a backend path is never looked up on this disk.
  const r = await registry.execute(tool, args, { sessionID: 's' }, { backend, workspaceRoot: host.dir });
  expect([tool, args, r.error]).toEqual([tool, args, undefined]);
  return r.result;
}

function expectNoLeak(output: string): void {
  for (const word of LEAKS) expect([word, output.includes(word)]).toEqual([word, false]);
  // .env named on a line of its own (glob, list), not in the echo of a pattern.
  expect(output.split('\n').filter((l) => /^\s*\.env\s*$/.test(l))).toEqual([]);
}

const CALLS: Array<[string, Record<string, unknown>]> = [
  ['grep', { pattern: 'MARK' }],
  ['grep', { pattern: 'MAR[K]' }],
  ['glob', { pattern: '**/*' }],
  ['glob', { pattern: '**/.env*' }],
  ['list', {}],
];

describe('searches over a backend leave out what the policy refuses or would ask about', () => {
  it.each(CALLS)('%s %j: the open files, a notice with the count, no secret', async (tool, args) => {
    for (const [name, make] of backends) {
      const result = await run(RULES, make(), tool, args);
      expectNoLeak(result.output);
      if (args.pattern !== '**/.env*') {
        expect([name, result.output]).toEqual([name, expect.stringContaining('a.txt')]);
        expect([name, result.output]).toEqual([name, expect.stringContaining('fine')]);
      }
      expect([name, result.output]).toEqual([name, expect.stringMatching(/paths? (?:was|were) left out[: ]/)]);
      expect([name, result.metadata.skippedByPolicy]).toEqual([name, expect.any(Number)]);
    }
  });

  it('without a policy everything is shown (no filter, nothing left out)', async () => {
    for (const [name, make] of backends) {
      const grep = await run(undefined, make(), 'grep', { pattern: 'MARK' });
      // (deepagents' FilesystemBackend greps with ripgrep, which skips dotfiles such as .env itself.)
      for (const word of ['secret-key', 'secret-inner'])
        expect([name, word, grep.output.includes(word)]).toEqual([name, word, true]);
      expect(grep.output).not.toMatch(/left out because/);
    }
  });

  it('a direct read of a denied backend path is still refused, and of .env still asks', async () => {
    for (const [, make] of backends) {
      const registry = registerBuiltinTools(createRegistry({ policy: createPolicy({ rules: RULES }) }));
      const initCtx = { backend: make(), workspaceRoot: host.dir };
      const denied = await registry.execute('read', { filePath: 'secrets/key.txt' }, { sessionID: 's' }, initCtx);
      expect(denied.error).toMatch(/secrets stay unread/);
      const asked = await registry.execute('read', { filePath: '.env' }, { sessionID: 's' }, initCtx);
      expect(asked.success).toBe(false);
      expect(asked.error).not.toContain('env-body');
    }
  });
});
