/**
 * The CLI turns any value a user's tools module throws into a sentence (issue 31 item 7): an object
 * without a prototype, a throwing toString, a symbol or a proxy whose traps throw used to print
 * "undefined" or crash the process on an unhandled rejection (a child process here).
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ensureDist, runCli, ROOT } from '../support/dist.js';
import { tempDir } from '../support/helpers.js';
import { HOSTILE_SOURCES } from '../support/hostile-values.js';

const toolbelt = (args: string[]) => runCli(args, ROOT, process.env);

let ws: Awaited<ReturnType<typeof tempDir>>;

beforeAll(async () => {
  await ensureDist();
  ws = await tempDir('toolbelt-cli-hostile-');
}, 120_000);

afterAll(async () => {
  await ws.cleanup();
});

describe('toolbelt with a tools module that throws a value String() cannot show', () => {
  it.each(HOSTILE_SOURCES)(
    '%s: a usage sentence and exit code 2, no crash',
    async (what, source) => {
      const file = path.join(ws.dir, `${what.replace(/\W+/g, '-')}.mjs`);
      await writeFile(file, `throw ${source};\n`);
      const ran = await toolbelt(['list', '--no-builtins', '--tools', file, '--workspace', ws.dir]);
      expect(ran.stderr).toMatch(
        new RegExp(`^toolbelt: Cannot load tools from ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: \\S`),
      );
      expect(ran.stderr).not.toMatch(/undefined|TypeError|Cannot convert|Unhandled|\n\s+at /);
      expect(ran.code).toBe(2);
    },
    60_000,
  );
});

describe('toolbelt with a tools module whose register function throws a value String() cannot show', () => {
  it.each(HOSTILE_SOURCES)(
    '%s: one line naming it and exit code 1, no unhandled rejection',
    async (what, source) => {
      const file = path.join(ws.dir, `register-${what.replace(/\W+/g, '-')}.mjs`);
      await writeFile(file, `export default () => {\n  throw ${source};\n};\n`);
      const ran = await toolbelt(['list', '--no-builtins', '--tools', file, '--workspace', ws.dir]);
      expect(ran.stderr).toMatch(/^toolbelt: (an object without a text form|the symbol hostile)\n$/);
      expect(ran.code).toBe(1);
    },
    60_000,
  );
});
