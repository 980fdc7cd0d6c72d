/**
 * Pay only for what you use: importing the package loads none of the heavy dependencies a single
 * tool needs (HTML conversion, globbing, diffs, the MCP SDK), none of the built-in tools' modules,
 * and neither the REST tools nor the network stack; the first use loads them. Checked in fresh
 * processes against the built package (timings are bench/import.bench.mjs's job).
 */
import { describe, it, expect, beforeAll } from '@jest/globals';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { ROOT, ensureDist } from '../support/dist.js';

const run = promisify(execFile);
const HEAVY = [
  'sanitize-html',
  'turndown',
  'fast-glob',
  'diff',
  '@modelcontextprotocol/sdk',
  'vscode-jsonrpc',
  'vscode-languageserver-protocol',
];

/** The heavy packages a fresh process has loaded after running `script` (an ES module body). */
async function loadedAfter(script: string): Promise<string[]> {
  const probe = `
    import { createRequire } from 'node:module';
    ${script}
    const loaded = Object.keys(createRequire(import.meta.url).cache);
    const heavy = ${JSON.stringify(HEAVY)};
    console.log(JSON.stringify(heavy.filter((p) => loaded.some((f) => f.includes('/node_modules/' + p + '/')))));`;
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', probe], { cwd: ROOT });
  return JSON.parse(stdout.trim().split('\n').pop()!) as string[];
}

const INDEX = JSON.stringify(path.join(ROOT, 'dist', 'index.js'));
const RESOLVE_LOG = path.join(ROOT, '__tests__', 'fixtures', 'resolve-log.mjs');

/**
 * The package's own modules (dist-relative, e.g. `tools/read.js`), the `node:` builtins and the
 * optional peers `ai` and `@opentelemetry/api` a fresh process resolved running `script`.
 */
async function resolvedBy(script: string): Promise<{ ours: string[]; builtins: string[]; peers: string[] }> {
  const { stderr } = await run(process.execPath, ['--import', RESOLVE_LOG, '--input-type=module', '-e', script], {
    cwd: ROOT,
  });
  const urls = [...stderr.matchAll(/^resolved (\S+)$/gm)].map((m) => m[1]);
  const dist = pathToFileURL(path.join(ROOT, 'dist')).href + '/';
  return {
    ours: urls.filter((u) => u.startsWith(dist)).map((u) => u.slice(dist.length)),
    builtins: urls.filter((u) => u.startsWith('node:')),
    peers: urls.filter((u) => /\/node_modules\/(ai|@ai-sdk\/[^/]+|@opentelemetry\/api)\//.test(u)),
  };
}

beforeAll(() => ensureDist(), 180_000);

/** Modules of net/ that import nothing, so the root may load them. */
const LIGHT_NET = new Set(['net/host.js', 'net/scrub.js']);

describe('import cost', () => {
  it('importing the package loads none of the heavy dependencies', async () => {
    expect(await loadedAfter(`await import(${INDEX});`)).toEqual([]);
  }, 60_000);

  it('importing the package loads no built-in tool, no REST tool and no HTTP client; a tool module loads on its first init', async () => {
    const { ours, builtins, peers } = await resolvedBy(`await import(${INDEX});`);
    expect(ours).toContain('registry/registry.js');
    // The light list of built-ins and the configuration modules the root re-exports, nothing else of tools/
    // (the policy reads bash lines and apply_patch patches with their parsers, which import nothing).
    expect(
      ours.filter(
        (m) =>
          m.startsWith('tools/') &&
          !/^tools\/(index|builtin-options|bash\/(danger.*|parser|shell-command|unwrap|words)|patch\/(models|parse)|memory\/store|todo\/store|web\/web-search-config)\.js$/.test(
            m,
          ),
      ),
    ).toEqual([]);
    // net/host.ts and net/scrub.ts import nothing (policy/ reads a URL's host with one, spans mask
    // credentials with the other); the rest of net/ is the network stack.
    expect(ours.filter((m) => /^(rest|net)\//.test(m) && !LIGHT_NET.has(m))).toEqual([]);
    expect(builtins.filter((b) => /^node:(https?|tls|dns)$/.test(b))).toEqual([]);
    // Optional peers: the AI SDK (its own entry) and OpenTelemetry (loaded on the first call) are not resolved.
    expect(peers).toEqual([]);
    const aiSdk = await resolvedBy(
      `await import(${JSON.stringify(path.join(ROOT, 'dist', 'registry', 'ai-sdk.js'))});`,
    );
    expect(aiSdk.peers.some((u) => u.includes('/node_modules/ai/'))).toBe(true);

    const used = await resolvedBy(`
      const { createRegistry, registerBuiltinTools } = await import(${INDEX});
      const registry = registerBuiltinTools(createRegistry(), ['read']);
      await registry.tools({ ids: ['read'] });`);
    expect(used.ours).toContain('tools/files/read.js');
    expect(used.ours).not.toContain('tools/web/webfetch.js');
  }, 60_000);

  it('a write of a file no language server serves loads no LSP module; a .ts write does', async () => {
    const write = (file: string) => `
      const { createRegistry, registerBuiltinTools } = await import(${INDEX});
      const { mkdtempSync, rmSync } = await import('node:fs');
      const dir = mkdtempSync((await import('node:os')).tmpdir() + '/import-cost-');
      const registry = registerBuiltinTools(createRegistry(), ['write']);
      const r = await registry.execute('write', { filePath: '${file}', content: 'x\\n' }, { sessionID: 's' }, { workspaceRoot: dir, lsp: { diagnosticsWaitMs: 0 } });
      if (!r.success) throw new Error(r.result.output);
      await registry.dispose();
      rmSync(dir, { recursive: true, force: true });`;
    const md = await resolvedBy(write('notes.md'));
    expect(md.ours).toContain('tools/files/write.js');
    expect(md.ours.filter((m) => m.startsWith('lsp/'))).toEqual(['lsp/hook.js', 'lsp/config.js']);
    expect(await loadedAfter(write('notes.md'))).not.toContain('vscode-jsonrpc');
    expect(await loadedAfter(write('a.ts'))).toContain('vscode-jsonrpc');
  }, 60_000);

  it('glob and diff load what they need on first use; HTML conversion loads sanitize-html and turndown only in its worker', async () => {
    const loaded = await loadedAfter(`
      const { builtinTools } = await import(${INDEX});
      const { htmlToMarkdown } = await import(${JSON.stringify(path.join(ROOT, 'dist', 'tools', 'web', 'webfetch.js'))});
      const { unifiedDiff } = await import(${JSON.stringify(path.join(ROOT, 'dist', 'tools', 'files', 'diff.js'))});
      const md = await htmlToMarkdown('<p>hi</p>', new URL('https://example.test/'));
      if (md.trim() !== 'hi') throw new Error('conversion failed: ' + md);
      unifiedDiff('a.txt', 'a\\n', 'b\\n');
      const glob = await builtinTools.find((t) => t.info.id === 'glob').info.init({ workspaceRoot: ${JSON.stringify(ROOT)} });
      await glob.execute({ pattern: 'src/*.ts' }, { sessionID: 's', messageID: 'm', agent: 'a', abort: new AbortController().signal, metadata() {} });`);
    expect(loaded).toEqual(['fast-glob', 'diff']);
  }, 60_000);
});
