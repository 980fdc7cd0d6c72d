/**
 * What `toolbelt memory import` does to one note (StoreNotes.import), on LangGraph's
 * InMemoryStore: a note that is not there is created, once even against a writer creating it at
 * the same moment; one holding the same text is left; one holding other text is skipped unless
 * overwriting; and an overwrite that another writer's change overtook is taken back, leaving the
 * note as that writer made it.
 */
import { describe, it, expect } from '@jest/globals';
import { InMemoryStore } from '@langchain/langgraph';
import { StoreScope } from '../../../src/store/scope.js';
import type { ToolStore } from '../../../src/store/types.js';
import { StoreNotes } from '../../../src/tools/memory/store-notes.js';

const BASE = ['toolbelt', 'import-test'];
const notesOn = (store: ToolStore) => new StoreNotes(new StoreScope(store, BASE));

describe('StoreNotes.import', () => {
  it('creates, leaves the same text, skips other text unless overwriting, and reports when the store changed', async () => {
    const notes = notesOn(new InMemoryStore());
    expect(await notes.import('a.md', 'one\n', false)).toEqual({ path: 'a.md', outcome: 'created' });
    const same = await notes.import('a.md', 'one\n', true);
    expect(same.outcome).toBe('unchanged');
    await notes.append('a.md', '- two', undefined);
    const skipped = await notes.import('a.md', 'one\n', false);
    expect(skipped.outcome).toBe('skipped');
    expect(skipped.changedAt).toBeInstanceOf(Date);
    expect((await notes.read('a.md')).output).toBe('one\n- two\n');
    expect((await notes.import('a.md', 'three\n', true)).outcome).toBe('replaced');
    expect((await notes.read('a.md')).output).toBe('three\n');
  });

  it('two importers creating one note at once: one creates it, the other finds it there', async () => {
    const store = new InMemoryStore();
    const [a, b] = await Promise.all([
      notesOn(store).import('n.md', 'A\n', false),
      notesOn(store).import('n.md', 'B\n', false),
    ]);
    expect([a.outcome, b.outcome].sort()).toEqual(['created', 'skipped']);
    expect((await notesOn(store).read('n.md')).output).toBe(a.outcome === 'created' ? 'A\n' : 'B\n');
  });

  it('an overwrite overtaken by another writer is taken back: the note stays as that writer made it', async () => {
    const inner = new InMemoryStore();
    let overtake = false;
    // Another process appends to the note between the import's read and its write.
    const racing: ToolStore = {
      get: (ns, key) => inner.get(ns, key),
      search: (ns, opts) => inner.search(ns, opts),
      delete: (ns, key) => inner.delete(ns, key),
      put: async (ns, key, value) => {
        if (overtake && value.op === 'write') {
          overtake = false;
          await inner.put(ns, 'log.md#000000001-other', {
            v: 1,
            note: 'log.md',
            op: 'append',
            entry: '- from elsewhere',
          });
        }
        await inner.put(ns, key, value);
      },
    };
    const notes = notesOn(racing);
    await notes.write('log.md', 'kept\n');
    overtake = true;
    const done = await notes.import('log.md', 'from the file\n', true);
    expect(done.outcome).toBe('changed');
    expect((await notes.read('log.md')).output).toBe('kept\n- from elsewhere\n');
  });
});
