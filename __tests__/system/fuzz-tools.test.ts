/**
 * Property-based fuzzing (fast-check) of every tool registerBuiltinTools registers, through the
 * LangChain adapter as an agent calls them: generated arguments, valid and invalid (wrong types,
 * missing and unknown keys, hostile strings), >= FUZZ_RUNS per tool. Every call must resolve to a
 * ToolMessage (zero rejections, so zero crashed agent loops) and every error must be a readable
 * sentence. Tools added to the built-ins later are covered automatically.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import fc from 'fast-check';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdir, readdir, readFile, lstat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ToolMessage } from '@langchain/core/messages';
import type { StructuredToolInterface } from '@langchain/core/tools';
import { createRegistry, registerBuiltinTools } from '../../src/index.js';
import { ALL_PERMISSIONS } from '../../src/constants.js';
import { tempDir } from '../support/helpers.js';

const FUZZ_RUNS = 1000;

let base: { dir: string; cleanup: () => Promise<void> };
let server: http.Server;
let origin: string;
let tools: StructuredToolInterface[];
let registry: ReturnType<typeof registerBuiltinTools>;
// Decoys, so a sandbox that regressed harms only the test's own files (and the test says so): the
// workspace sits six directories deep in the temp dir (generated `..` climbs land on them), and
// absolute paths in generated arguments are re-rooted under a decoy system root (reroot()).
let ws: string;
let sysroot: string;
let decoysBefore: Map<string, string>;

/** Every path under the temp dir except the workspace, with its content: the decoys' state. */
async function decoys(dir = base.dir, snap = new Map<string, string>()): Promise<Map<string, string>> {
  for (const name of (await readdir(dir)).sort()) {
    const p = path.join(dir, name);
    if (p === ws) continue;
    const st = await lstat(p);
    if (st.isDirectory()) {
      snap.set(p, `dir ${st.mode}`);
      await decoys(p, snap);
    } else snap.set(p, st.isFile() ? `${await readFile(p, 'utf8')} ${st.mode}` : `other ${st.mode}`);
  }
  return snap;
}

/** Generated arguments with every absolute path moved under the decoy system root (`/etc/passwd` -> `<sysroot>/etc/passwd`). */
function reroot(value: unknown): unknown {
  if (typeof value === 'string') return value.trimStart().startsWith('/') ? sysroot + value.trimStart() : value;
  if (Array.isArray(value)) return value.map(reroot);
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, reroot(v)]));
  return value;
}

beforeAll(async () => {
  base = await tempDir('fuzz-');
  ws = path.join(base.dir, 'up1', 'up2', 'up3', 'up4', 'up5', 'up6', 'ws');
  sysroot = path.join(base.dir, 'sysroot');
  await mkdir(path.join(ws, 'src'), { recursive: true });
  await mkdir(path.join(sysroot, 'etc'), { recursive: true });
  await writeFile(path.join(sysroot, 'etc', 'passwd'), 'root:x:0:0:decoy:/root:/bin/sh\n');
  await writeFile(path.join(base.dir, 'up1', 'decoy.txt'), 'outside the workspace\n');
  await writeFile(path.join(ws, 'src', 'a.ts'), 'export const a = 1;\n// TODO fix\n');
  await writeFile(path.join(ws, 'notes.md'), '# Notes\nhello\n');
  decoysBefore = await decoys();
  server = http.createServer((_req, res) => res.writeHead(200, { 'Content-Type': 'text/plain' }).end('ok'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  registry = registerBuiltinTools(createRegistry({ timeoutMs: 5000 }));
  // Loopback is refused by the SSRF policy (private network not allowed): webfetch never leaves the machine.
  tools = await registry.tools({
    enabledPermissions: new Set(ALL_PERMISSIONS),
    initCtx: { workspaceRoot: ws },
  });
});

afterAll(async () => {
  // Writes of .ts files started a TypeScript server (docs/lsp.md): stopped with the registry.
  await registry.dispose();
  await new Promise((resolve) => server.close(resolve));
  await base.cleanup();
});

/** Strings a model (or an attacker) might send for any field. */
const hostileString = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.constantFrom(
    '',
    ' ',
    '.',
    '..',
    '../..',
    '/',
    '/etc/passwd',
    'src/a.ts',
    'notes.md',
    'src',
    '**/*',
    '{a,b}/*',
    '(a+)+$',
    '[',
    '\\',
    'a\0b',
    '\u202e',
    'TODO',
    'true',
    'null',
    '1e309',
    '-1',
    'x'.repeat(5000),
    '{"nested":"json"}',
    '[1,2,3]',
  ),
);

/** Any JSON-ish value, including the wrong types for every field. */
const anyValue = fc.oneof(
  hostileString,
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(hostileString, { maxLength: 3 }),
  fc.dictionary(hostileString, hostileString, { maxKeys: 3 }),
);

/** Values for a named field that keep the fuzz on this machine and short. */
function fieldValue(key: string): fc.Arbitrary<unknown> {
  if (key === 'command') {
    // bash runs for real: only harmless commands (plus every wrong type).
    return fc.oneof(
      fc.constantFrom('echo hi', 'true', 'exit 3', 'printf "%s" x', 'ls', ''),
      anyValue.filter((v) => typeof v !== 'string'),
    );
  }
  if (key === 'url')
    return fc.oneof(
      fc.constantFrom(`${origin}/`, `${origin}/x`, 'ftp://x', 'not a url'),
      anyValue.filter((v) => typeof v !== 'string'),
    );
  if (key === 'timeout') return fc.oneof(fc.integer({ min: -5, max: 3000 }), anyValue);
  return anyValue;
}

type JsonSchema = {
  type?: string | string[];
  enum?: unknown[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  anyOf?: JsonSchema[];
};

/** Plausible strings for a field: paths and patterns that exist in the fuzz workspace. */
const plausibleString = fc.constantFrom(
  'src/a.ts',
  'notes.md',
  'src',
  '.',
  '*.ts',
  '**/*.md',
  'TODO',
  'hello',
  'a',
  'x.md',
  'new.txt',
);

/** A well-typed value for a JSON Schema property (mostly valid calls), special fields kept safe. */
function typedValue(key: string, prop: JsonSchema | undefined): fc.Arbitrary<unknown> {
  if (key === 'command') return fc.constantFrom('echo hi', 'true', 'exit 3', 'printf "%s" x', 'ls');
  if (key === 'url') return fc.constantFrom(`${origin}/`, `${origin}/x`);
  if (!prop) return anyValue;
  if (prop.anyOf?.length) return fc.oneof(...prop.anyOf.map((p) => typedValue(key, p)));
  if (prop.enum?.length) return fc.constantFrom(...prop.enum);
  const type = Array.isArray(prop.type) ? prop.type.find((t) => t !== 'null') : prop.type;
  switch (type) {
    case 'string':
      return fc.oneof({ weight: 4, arbitrary: plausibleString }, { weight: 1, arbitrary: hostileString });
    case 'integer':
    case 'number':
      return key === 'timeout' ? fc.integer({ min: 1, max: 3000 }) : fc.integer({ min: -2, max: 40 });
    case 'boolean':
      return fc.boolean();
    case 'array':
      return fc.array(typedValue(`${key}[]`, prop.items), { maxLength: 3 });
    case 'object':
      return typedRecord(prop);
    default:
      return anyValue;
  }
}

function typedRecord(schema: JsonSchema): fc.Arbitrary<Record<string, unknown>> {
  const props = schema.properties ?? {};
  return fc.record(Object.fromEntries(Object.entries(props).map(([k, p]) => [k, typedValue(k, p)])), {
    requiredKeys: (schema.required ?? []).filter((k) => k in props),
  });
}

/** Arguments for a tool: well-typed (mostly valid), wrong types per field, unknown keys, or not an object at all. */
function argsFor(tool: StructuredToolInterface): fc.Arbitrary<unknown> {
  const schema = tool.schema as JsonSchema;
  const props = Object.keys(schema.properties ?? {});
  const known = fc.record(Object.fromEntries(props.map((k) => [k, fieldValue(k)])), { requiredKeys: [] });
  const withExtra = fc
    .tuple(known, fc.dictionary(hostileString, anyValue, { maxKeys: 2 }))
    .map(([a, b]) => ({ ...b, ...a }));
  return fc.oneof(
    { weight: 5, arbitrary: typedRecord(schema) },
    { weight: 3, arbitrary: known },
    { weight: 1, arbitrary: withExtra },
    { weight: 1, arbitrary: anyValue },
  );
}

/** A readable sentence: words, no stack trace, no "[object Object]". */
function isReadableSentence(text: string): boolean {
  return (
    text.length >= 15 &&
    /[a-zA-Z]{3,} [a-zA-Z]/.test(text) &&
    !text.includes('[object Object]') &&
    !/\n\s+at .+:\d+:\d+/.test(text) &&
    !/^(undefined|null|Error)$/.test(text.trim())
  );
}

describe('fuzzing every built-in through the LangChain adapter', () => {
  it(`>= ${FUZZ_RUNS} generated calls per tool: zero rejections, every error a readable sentence`, async () => {
    expect(tools.length).toBeGreaterThanOrEqual(11);
    const counts: string[] = [];
    let total = 0;
    for (const tool of tools) {
      let ok = 0;
      let errors = 0;
      let rejections = 0;
      const unreadable: string[] = [];
      let id = 0;
      await fc.assert(
        fc.asyncProperty(argsFor(tool), async (args) => {
          let msg: unknown;
          try {
            msg = await tool.invoke({
              type: 'tool_call',
              id: `fuzz-${id++}`,
              name: tool.name,
              args: reroot(args) as Record<string, unknown>,
            });
          } catch (err) {
            rejections++;
            throw new Error(`${tool.name} rejected for ${JSON.stringify(args)?.slice(0, 200)}: ${String(err)}`, {
              cause: err,
            });
          }
          if (!(msg instanceof ToolMessage)) throw new Error(`${tool.name} did not return a ToolMessage`);
          const text = typeof msg.content === 'string' ? msg.content : JSON.stringify(msg.content);
          if (msg.status === 'error') {
            errors++;
            if (!isReadableSentence(text) && unreadable.length < 5) unreadable.push(text.slice(0, 200));
          } else ok++;
        }),
        { numRuns: FUZZ_RUNS, seed: 20261123, endOnFailure: true },
      );
      total += ok + errors;
      counts.push(`${tool.name}: ${ok + errors} calls (${ok} ok, ${errors} errors, ${rejections} rejections)`);
      expect({ tool: tool.name, unreadable }).toEqual({ tool: tool.name, unreadable: [] });
      expect(ok + errors).toBeGreaterThanOrEqual(FUZZ_RUNS);
    }
    console.log(`fuzz: ${tools.length} tools, ${total} calls, 0 rejections\n${counts.join('\n')}`);
    expect(await decoys()).toEqual(decoysBefore);
  }, 600_000);
});
