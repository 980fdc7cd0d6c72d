/**
 * The environment variables this package reads, found by scanning src/: `env.NAME`, `env[C]` with
 * `C = 'NAME'` declared in src/, and each provider's `keyEnv` / `baseUrlEnv` in chat-model.ts.
 * One list, used three ways: cli-env.test.ts checks docs/cli.md names them all, and the jest
 * global setup and setup file clear them (except KEPT_FROM_HOST) so no suite sees the host's values.
 * Plain .mjs so the global setup (loaded by Node, not by jest's transform) can import it.
 * Must not decide what a suite sets: a test that means to use a variable sets it itself.
 */
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * Variables the package reads that a test run does not clear: the tools need a PATH and a HOME, and
 * TMPDIR is the run's own (the global setup points it at the run's temp dir).
 */
export const KEPT_FROM_HOST = ['PATH', 'HOME', 'TMPDIR'];

function sources(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : [],
  );
}

/** Every environment variable named in src/: `process.env.X`, `env.X`, and `env[C]` with `C = 'X'` declared in src/. */
export function variablesReadBySource(root = ROOT) {
  const texts = sources(path.join(root, 'src')).map((f) => readFileSync(f, 'utf8'));
  const names = new Set();
  const constants = new Set();
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

/** Each provider's key and base-URL variables, as written in src/providers/chat-model.ts's PROVIDERS table. */
export function providerVariables(root = ROOT) {
  const text = readFileSync(path.join(root, 'src', 'providers', 'chat-model.ts'), 'utf8');
  const names = new Set();
  for (const m of text.matchAll(/\bkeyEnv:\s*\[([^\]]*)\]/g))
    for (const q of m[1].matchAll(/'([A-Z][A-Z0-9_]*)'/g)) names.add(q[1]);
  for (const m of text.matchAll(/\bbaseUrlEnv:\s*'([A-Z][A-Z0-9_]*)'/g)) names.add(m[1]);
  return names;
}

/** The variables a test run clears: everything the package reads except KEPT_FROM_HOST. */
export function variablesToClear(root = ROOT) {
  return [...new Set([...variablesReadBySource(root), ...providerVariables(root)])]
    .filter((name) => !KEPT_FROM_HOST.includes(name))
    .sort();
}

/** Deletes `variablesToClear()` from `env`; returns the names that were set. */
export function clearPackageVariables(env, names = variablesToClear()) {
  const wereSet = names.filter((name) => env[name] !== undefined);
  for (const name of names) delete env[name];
  return wereSet;
}
