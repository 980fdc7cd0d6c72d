/**
 * `toolbelt memory import`: copies every `.md` note of the memory directory into the --store (the
 * files stay where they are), so notes kept as files follow the user to every process on that store.
 * Must not implement the store or the memory tools: notes are written through memory_write.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { UsageError, type Command, type Setup, type Values } from './command.js';
import { MemoryStore } from '../tools/memory/store.js';
import { STORE_URL_ENV, storeNamespaceOf } from './store.js';

async function memoryImport(setup: Setup, values: Values): Promise<number> {
  if (!setup.store)
    throw new UsageError(
      `"toolbelt memory import" copies notes into a store: pass --store URL or set $${STORE_URL_ENV}.`,
    );
  const from =
    values.from !== undefined
      ? path.resolve(String(values.from))
      : (await MemoryStore.fromInitContext(setup.initCtx)).root;
  const st = await fs.stat(from).catch(() => undefined);
  if (!st?.isDirectory()) throw new UsageError(`The memory directory ${from} does not exist. Pass --from DIR.`);
  const files = (await fs.readdir(from, { recursive: true, withFileTypes: true }))
    .filter((d) => d.isFile() && d.name.toLowerCase().endsWith('.md'))
    .map((d) => path.relative(from, path.join(d.parentPath, d.name)).split(path.sep).join('/'))
    .filter((rel) => !rel.split('/').some((part) => part.startsWith('.')))
    .sort();
  let imported = 0;
  const failed: string[] = [];
  for (const rel of files) {
    const content = await fs.readFile(path.join(from, ...rel.split('/')), 'utf8');
    const res = await setup.registry.execute(
      'memory_write',
      { path: rel, content },
      { sessionID: 'memory-import' },
      setup.initCtx,
    );
    if (res.success) imported++;
    else failed.push(`${rel}: ${res.error}`);
  }
  const ns = storeNamespaceOf(values);
  process.stdout.write(
    `Imported ${imported} of ${files.length} notes from ${from} into the ${setup.store.label} (namespace ${Array.isArray(ns) ? ns.join('/') : ns}); the files were left in place.\n`,
  );
  for (const f of failed) process.stderr.write(`toolbelt: not imported: ${f}\n`);
  return failed.length ? 1 : 0;
}

export const memoryCommand: Command = {
  options: { from: { type: 'string' } },
  positionals: [1, 1],
  usage: 'toolbelt memory import --store URL [--from DIR] [--store-namespace LIST]',
  run: async (setup, values, positionals) => {
    if (positionals[0] !== 'import')
      throw new UsageError(`Unknown memory command "${positionals[0]}". Use: toolbelt memory import --store URL.`);
    return memoryImport(setup, values);
  },
};
