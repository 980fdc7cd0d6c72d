/**
 * docs/cli.md's "Environment variables the CLI reads" lists every variable src/ reads: found by
 * scanning the source (`env.NAME`, `env[CONSTANT]`) plus each provider's key and base-URL variables.
 * Must not run the CLI: cli.test.ts and providers/cli-agent.test.ts do.
 */
import { it, expect } from '@jest/globals';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from './dist.js';
import { PROVIDERS } from '../src/chat-model.js';

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : [],
  );
}

/** Every environment variable named in src/: `process.env.X`, `env.X`, and `env[C]` with `C = 'X'` declared in src/. */
function variablesReadBySource(): Set<string> {
  const texts = sources(path.join(ROOT, 'src')).map((f) => readFileSync(f, 'utf8'));
  const names = new Set<string>();
  const constants = new Set<string>();
  for (const text of texts) {
    for (const m of text.matchAll(/\benv\.([A-Z][A-Z0-9_]*)\b/g)) names.add(m[1]);
    for (const m of text.matchAll(/\benv\[([A-Z][A-Z0-9_]*)\]/g)) constants.add(m[1]);
  }
  for (const constant of constants) {
    const value = texts.map((t) => new RegExp(`\\b${constant}\\s*=\\s*'([A-Z][A-Z0-9_]*)'`).exec(t)?.[1]).find(Boolean);
    if (!value) throw new Error(`src/ reads process.env[${constant}] but never declares ${constant} = '...'`);
    names.add(value);
  }
  return names;
}

it("docs/cli.md's environment table names every variable src/ reads, and each provider's key and base URL", () => {
  const doc = readFileSync(path.join(ROOT, 'docs', 'cli.md'), 'utf8');
  const start = doc.indexOf('## Environment variables the CLI reads');
  expect(start).toBeGreaterThan(-1);
  const section = doc.slice(start, doc.indexOf('\n## ', start + 1));
  const read = variablesReadBySource();
  // Sanity: the scan finds the ones we know are read, so an empty scan cannot pass.
  expect([...read]).toEqual(
    expect.arrayContaining(['AGENT_WORKSPACE_ROOT', 'TOOLBELT_MODEL', 'TOOLBELT_MCP_TOKEN', 'SEARXNG_URL', 'PATH']),
  );
  const missing = [...read].filter((name) => !section.includes(`\`${name}\``));
  expect(missing).toEqual([]);
  // Provider keys may be listed in the agent section's provider table ("the other keys above").
  const providerVars = Object.values(PROVIDERS).flatMap((p) => [...(p.keyEnv ?? []), p.baseUrlEnv ?? []].flat());
  expect(providerVars.filter((name) => !doc.includes(`\`${name}\``))).toEqual([]);
  for (const name of ['OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'GOOGLE_API_KEY', 'GEMINI_API_KEY'])
    expect(section).toContain(`\`${name}\``);
});
