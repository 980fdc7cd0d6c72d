import { describe, it, expect } from '@jest/globals';
import { TodoWriteTool, TodoReadTool } from '../../../src/tools/todo/todo.js';
import { TodoStore, MAX_TODOS, MAX_TODO_CONTENT_CHARS, type TodoItem } from '../../../src/tools/todo/store.js';
import { makeCtx } from '../../support/helpers.js';
import { createRegistry, registerBuiltinTools } from '../../../src/index.js';
import { DEFAULT_MAX_BYTES } from '../../../src/constants.js';
import { callTool } from '../../support/tool-call.js';

async function tools(initCtx: Record<string, unknown> = { todoStore: new TodoStore() }) {
  const write = await TodoWriteTool.init(initCtx);
  const read = await TodoReadTool.init(initCtx);
  return {
    write: async (todos: unknown, session = 's1') =>
      write.execute(write.parameters.parse({ todos }), makeCtx({ sessionID: session })),
    merge: async (todos: unknown, session = 's1') =>
      write.execute(write.parameters.parse({ todos, merge: true }), makeCtx({ sessionID: session })),
    read: async (session = 's1') => read.execute(read.parameters.parse({}), makeCtx({ sessionID: session })),
  };
}

const item = (id: string, status: TodoItem['status'] = 'pending', priority?: TodoItem['priority']) => ({
  id,
  content: `Step ${id}`,
  status,
  ...(priority ? { priority } : {}),
});

describe('todowrite / todoread', () => {
  it('starts empty, then returns exactly what was written, with defaults applied', async () => {
    const t = await tools();
    const empty = await t.read();
    expect(empty.title).toBe('0 open todos');
    expect(empty.output).toMatch(/No todos/);
    expect(empty.metadata.todos).toEqual([]);

    const res = await t.write([
      item('1', 'completed', 'high'),
      item('2', 'in_progress'),
      item('3', 'pending', 'low'),
      item('4', 'cancelled'),
    ]);
    expect(res.title).toBe('2 open todos');
    expect(res.metadata.todos).toEqual([
      { id: '1', content: 'Step 1', status: 'completed', priority: 'high' },
      { id: '2', content: 'Step 2', status: 'in_progress', priority: 'medium' },
      { id: '3', content: 'Step 3', status: 'pending', priority: 'low' },
      { id: '4', content: 'Step 4', status: 'cancelled', priority: 'medium' },
    ]);
    expect(res.metadata.counts).toEqual({ pending: 1, in_progress: 1, completed: 1, cancelled: 1 });
    expect(res.metadata).not.toHaveProperty('truncated'); // the registry's output cap applies
    expect(res.output.split('\n')).toEqual([
      '2 open todos (1 in progress, 1 pending), 1 completed, 1 cancelled',
      '[x] Step 1 (id 1, high)',
      '[~] Step 2 (id 2, medium, in progress)',
      '[ ] Step 3 (id 3, low)',
      '[-] Step 4 (id 4, medium)',
    ]);
    const again = await t.read();
    expect(again.metadata.todos).toEqual(res.metadata.todos);
    expect(again.output).toBe(res.output);
  });

  it('replaces the whole list on each write', async () => {
    const t = await tools();
    await t.write([item('a'), item('b')]);
    await t.write([item('c', 'completed')]);
    const res = await t.read();
    expect(res.metadata.todos.map((x) => x.id)).toEqual(['c']);
    expect(res.title).toBe('0 open todos');
    await t.write([item('d')]);
    expect((await t.read()).title).toBe('1 open todo');
  });

  it('keeps sessions apart', async () => {
    const t = await tools();
    await t.write([item('mine')], 'alice');
    await t.write([item('theirs'), item('other')], 'bob');
    expect((await t.read('alice')).metadata.todos.map((x) => x.id)).toEqual(['mine']);
    expect((await t.read('bob')).metadata.todos.map((x) => x.id)).toEqual(['theirs', 'other']);
    expect((await t.read('carol')).metadata.todos).toEqual([]);
  });

  it('shares one store between the two tools by default, and honours initCtx.todoStore', async () => {
    const a = await tools({});
    await a.write([item('shared')], 'default-store-session');
    const b = await tools({});
    expect((await b.read('default-store-session')).metadata.todos.map((x) => x.id)).toEqual(['shared']);
    const isolated = await tools({ todoStore: new TodoStore() });
    expect((await isolated.read('default-store-session')).metadata.todos).toEqual([]);
  });

  it('callers cannot change the stored list through returned objects', async () => {
    const t = await tools();
    const res = await t.write([item('1')]);
    res.metadata.todos[0].content = 'mutated';
    expect((await t.read()).metadata.todos[0].content).toBe('Step 1');
  });

  it('rejects duplicate ids and empty content, naming the items, and keeps the old list', async () => {
    const t = await tools();
    await t.write([item('keep')]);
    await expect(t.write([item('1'), item('2'), item('1')])).rejects.toThrow(
      /items 1 and 3 share the id "1".*send the whole list again/,
    );
    await expect(t.write([{ id: 'x', content: '   ', status: 'pending' }])).rejects.toThrow(
      /item 1 \(id "x"\) has empty content/,
    );
    await expect(t.write([{ id: ' ', content: 'c', status: 'pending' }])).rejects.toThrow(/item 1 has an empty id/);
    expect((await t.read()).metadata.todos.map((x) => x.id)).toEqual(['keep']);
  });

  it('rejects unknown statuses and priorities through the schema', async () => {
    const t = await tools();
    await expect(t.write([{ id: '1', content: 'c', status: 'done' }])).rejects.toThrow();
    await expect(t.write([{ id: '1', content: 'c', status: 'pending', priority: 'urgent' }])).rejects.toThrow();
  });

  it(`accepts exactly ${MAX_TODOS} items and refuses ${MAX_TODOS + 1}`, async () => {
    const t = await tools();
    const max = Array.from({ length: MAX_TODOS }, (_, i) => item(String(i)));
    expect((await t.write(max)).metadata.todos).toHaveLength(MAX_TODOS);
    await expect(t.write([...max, item('extra')])).rejects.toThrow(
      new RegExp(`Too many todos: ${MAX_TODOS + 1} items, the limit is ${MAX_TODOS}`),
    );
  });

  it(`accepts content of ${MAX_TODO_CONTENT_CHARS} characters and refuses one more`, async () => {
    const t = await tools();
    const ok = 'x'.repeat(MAX_TODO_CONTENT_CHARS);
    expect((await t.write([{ id: '1', content: ok, status: 'pending' }])).metadata.todos[0].content).toBe(ok);
    await expect(t.write([{ id: '1', content: ok + 'x', status: 'pending' }])).rejects.toThrow(/limit is 2000/);
  });

  it('bounds the number of sessions a store keeps, dropping the least recently written', () => {
    const store = new TodoStore(3);
    for (const s of ['a', 'b', 'c']) store.set(s, [{ id: '1', content: s, status: 'pending', priority: 'low' }]);
    store.set('a', []); // a becomes the most recent
    store.set('d', []);
    expect(store.size).toBe(3);
    expect(store.get('b')).toEqual([]);
    expect(store.get('c')).toHaveLength(1);
  });

  it('refuses a call without a session id', async () => {
    const write = await TodoWriteTool.init({ todoStore: new TodoStore() });
    await expect(write.execute({ todos: [] }, makeCtx({ sessionID: '' }))).rejects.toThrow(/no sessionID/);
  });
});

describe('todowrite with merge', () => {
  it('updates the given fields of items matched by id, appends new ids, keeps the rest in order', async () => {
    const t = await tools();
    await t.write([item('1', 'in_progress', 'high'), item('2'), item('3')]);
    const res = await t.merge([
      { id: '2', status: 'completed' },
      { id: '1', content: 'Step one, reworded' },
      item('4'),
    ]);
    expect(res.metadata.todos).toEqual([
      { id: '1', content: 'Step one, reworded', status: 'in_progress', priority: 'high' },
      { id: '2', content: 'Step 2', status: 'completed', priority: 'medium' },
      { id: '3', content: 'Step 3', status: 'pending', priority: 'medium' },
      { id: '4', content: 'Step 4', status: 'pending', priority: 'medium' },
    ]);
    expect((await t.read()).metadata.todos).toEqual(res.metadata.todos);
    // Merging the same change again leaves the same list (idempotent, as annotated).
    expect((await t.merge([{ id: '2', status: 'completed' }])).metadata.todos).toEqual(res.metadata.todos);
  });

  it('merge false (the default) replaces the list, and then needs every field', async () => {
    const t = await tools();
    await t.write([item('1'), item('2')]);
    expect((await t.write([item('3')])).metadata.todos.map((x) => x.id)).toEqual(['3']);
    await expect(t.write([{ id: '3', status: 'completed' }])).rejects.toThrow(
      /item 1 \(id "3"\) has no content.*or set merge to true to change only some items/,
    );
    await expect(t.write([{ id: '3', content: 'c' }])).rejects.toThrow(/item 1 \(id "3"\) has no status/);
    expect((await t.read()).metadata.todos.map((x) => x.id)).toEqual(['3']);
  });

  it('a new id without content or status is refused with the missing fields named, and nothing is written', async () => {
    const t = await tools();
    await t.write([item('1')]);
    await expect(
      t.merge([
        { id: '1', status: 'completed' },
        { id: 'new', status: 'pending' },
      ]),
    ).rejects.toThrow(
      /^Cannot merge: the list has no item with id "new" \(content\), and a new item needs a content and a status/,
    );
    expect((await t.read()).metadata.todos).toEqual([{ ...item('1'), priority: 'medium' }]);
    await expect(t.merge([{ id: '1', content: '  ' }])).rejects.toThrow(/item 1 \(id "1"\) has empty content/);
  });

  it(`merging up to ${MAX_TODOS} items in all is accepted; one more is refused and nothing is written`, async () => {
    const t = await tools();
    await t.write(Array.from({ length: MAX_TODOS - 1 }, (_, i) => item(String(i))));
    expect((await t.merge([item('last')])).metadata.todos).toHaveLength(MAX_TODOS);
    await expect(t.merge([item('one-more')])).rejects.toThrow(
      new RegExp(`merging would leave ${MAX_TODOS + 1} items, the limit is ${MAX_TODOS}`),
    );
    expect((await t.read()).metadata.todos).toHaveLength(MAX_TODOS);
  });

  it('concurrent merges into the in-process list all land', async () => {
    const registry = registerBuiltinTools(createRegistry({ loopGuard: false }), ['todowrite', 'todoread']);
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        registry.execute('todowrite', { todos: [item(`i${i}`)], merge: true }, { sessionID: 'm' }),
      ),
    );
    expect(results.filter((r) => !r.success)).toEqual([]);
    const read = await registry.execute('todoread', {}, { sessionID: 'm' });
    expect((read.result.metadata.todos as TodoItem[]).map((x) => x.id).sort()).toEqual(
      Array.from({ length: 30 }, (_, i) => `i${i}`).sort(),
    );
  });
});

describe('todo output through the registry', () => {
  it(`a full list (${MAX_TODOS} items of ${MAX_TODO_CONTENT_CHARS} characters) is cut by the registry's output cap`, async () => {
    const registry = registerBuiltinTools(createRegistry(), ['todowrite', 'todoread']);
    const tools = await registry.tools({ ids: ['todowrite', 'todoread'] });
    const todos = Array.from({ length: MAX_TODOS }, (_, i) => ({
      id: String(i),
      content: `${i} ${'y'.repeat(MAX_TODO_CONTENT_CHARS - String(i).length - 1)}`,
      status: 'pending',
    }));
    const written = await callTool(tools, 'todowrite', { todos });
    expect(written.status).toBe('success');
    expect(Buffer.byteLength(String(written.content))).toBeLessThan(DEFAULT_MAX_BYTES + 1024);
    expect(written.result.metadata.truncated).toBe(true);
    expect((written.result.metadata.todos as unknown[]).length).toBe(MAX_TODOS);
  });
});
