/**
 * `toolbelt memory import`: copies every `.md` note of the memory directory into the --store (the
 * files stay where they are), so notes kept as files follow the user to every process on that store.
 * A note already in the store is never lost: it is skipped and reported, or with --overwrite
 * replaced and reported (saying when the store's copy was newer than the file).
 * Must not implement the store or the memory tools: notes go in through StoreNotes, as memory_write's do.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { UsageError, type Command, type Setup, type Values } from './command.js';
import { MemoryStore } from '../tools/memory/store.js';
import { StoreNotes, type NoteImport } from '../tools/memory/store-notes.js';
import { storeScope } from '../store/scope.js';
import { STORE_URL_ENV, storeNamespaceOf } from './store.js';

async function memoryImport(setup: Setup, values: Values): Promise<number> {
  if (!setup.store)
    throw new UsageError(
      `"toolbelt memory import" copies notes into a store: pass --store URL or set $${STORE_URL_ENV}.`,
    );
  if (!setup.grant.includes('memory'))
    throw new UsageError('"toolbelt memory import" writes memory notes: add memory to --permissions (or omit it).');
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
  const scope = storeScope(setup.registry.tenant, { sessionID: 'memory-import' })!;
  const notes = new StoreNotes(scope);
  const overwrite = values.overwrite === true;
  const lines: string[] = [];
  const failed: string[] = [];
  let imported = 0;
  for (const rel of files) {
    const file = path.join(from, ...rel.split('/'));
    try {
      const [content, stat] = await Promise.all([fs.readFile(file, 'utf8'), fs.stat(file)]);
      const done = await notes.import(rel, content, overwrite);
      if (done.outcome === 'created' || done.outcome === 'replaced') imported++;
      lines.push(reportLine(done, stat.mtime));
    } catch (err) {
      failed.push(`${rel}: ${(err as Error).message}`);
    }
  }
  const ns = storeNamespaceOf(values);
  process.stdout.write(
    `Imported ${imported} of ${files.length} notes from ${from} into the ${setup.store.label} (namespace ${Array.isArray(ns) ? ns.join('/') : ns}); the files were left in place.\n` +
      lines.map((l) => `  ${l}\n`).join(''),
  );
  for (const f of failed) process.stderr.write(`toolbelt: not imported: ${f}\n`);
  return failed.length ? 1 : 0;
}

/** One note's line of the report: what happened to it, and when the store's copy changed if that matters. */
function reportLine(done: NoteImport, fileTime: Date): string {
  const storeTime = done.changedAt ? ` (changed ${done.changedAt.toISOString()})` : '';
  switch (done.outcome) {
    case 'created':
      return `created ${done.path}`;
    case 'unchanged':
      return `unchanged ${done.path}: the store already holds the file's text`;
    case 'skipped':
      return `skipped ${done.path}: already in the store${storeTime}; pass --overwrite to replace it with the file`;
    case 'changed':
      return `skipped ${done.path}: another process changed it in the store while it was being replaced${storeTime}; it was left as that process made it`;
    case 'replaced': {
      const newer = done.changedAt && done.changedAt.getTime() > fileTime.getTime();
      return newer
        ? `replaced ${done.path}: its store copy${storeTime} was newer than the file (changed ${fileTime.toISOString()}); what only the store had is gone`
        : `replaced ${done.path}`;
    }
  }
}

export const memoryCommand: Command = {
  options: { from: { type: 'string' }, overwrite: { type: 'boolean' } },
  positionals: [1, 1],
  usage: 'toolbelt memory import --store URL [--from DIR] [--overwrite] [--store-namespace LIST]',
  run: async (setup, values, positionals) => {
    if (positionals[0] !== 'import')
      throw new UsageError(`Unknown memory command "${positionals[0]}". Use: toolbelt memory import --store URL.`);
    return memoryImport(setup, values);
  },
};
