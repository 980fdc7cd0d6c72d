/**
 * docs/cli.md's "Environment variables the CLI reads" lists every variable src/ reads: found by
 * scanning the source (`env.NAME`, `env[CONSTANT]`) plus each provider's key and base-URL variables.
 * The scan (package-env.mjs) is also the list jest's setup clears from the environment.
 * Must not run the CLI: cli.test.ts and providers/cli-agent.test.ts do.
 */
import { it, expect } from '@jest/globals';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from '../support/dist.js';
import { PROVIDERS } from '../../src/providers/chat-model.js';
import { providerVariables, variablesReadBySource } from '../support/package-env.mjs';

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

it("the list jest's setup clears holds every provider's key and base-URL variable as PROVIDERS names them", () => {
  const providerVars = Object.values(PROVIDERS).flatMap((p) => [...(p.keyEnv ?? []), p.baseUrlEnv ?? []].flat());
  expect(providerVars.length).toBeGreaterThan(5);
  expect([...providerVariables()].sort()).toEqual([...new Set(providerVars)].sort());
});
