/**
 * todowrite / todoread: a per-session task list the model keeps for itself, replaced whole or
 * merged into by id. Both tools share one store keyed by `ctx.sessionID`, so two sessions never
 * see each other's lists; on a state store a merge is a versioned compare-and-set.
 * Must not keep lists in module state for registries that pass their own todoStore.
 */
import { z } from 'zod';
import { Tool } from '../../authoring/tool.js';
import { descriptionBeside } from '../../authoring/description.js';
import { tenantOf } from '../../workspace/tenant.js';
import { REVISION_FIELD, STORE_UPDATE_ATTEMPTS, newRevision, storeScope } from '../../store/scope.js';
import {
  MAX_TODOS,
  MAX_TODO_CONTENT_CHARS,
  TODO_PRIORITIES,
  TODO_STATUSES,
  todoStoreOf,
  type TodoItem,
  type TodoMetadata,
  TodoStore,
} from './store.js';

const todoItem = z.object({
  id: z.string().describe('A short id, unique within the list (e.g. "1", "2", "tests").'),
  content: z
    .string()
    .optional()
    .describe(
      'What to do, as a short imperative sentence. Required for a new item; with merge, omit it to keep the current one.',
    ),
  status: z
    .enum(TODO_STATUSES)
    .optional()
    .describe(
      'pending, in_progress (only one at a time), completed or cancelled. Required for a new item; with merge, omit it to keep the current one.',
    ),
  priority: z
    .enum(TODO_PRIORITIES)
    .optional()
    .describe('high, medium or low. Default medium (with merge: the current one).'),
});

const writeParameters = z.object({
  todos: z
    .array(todoItem)
    .describe(
      `Without merge: the whole updated list (it replaces the previous one), at most ${MAX_TODOS} items. With merge: only the items to add or change.`,
    ),
  merge: z
    .boolean()
    .optional()
    .describe(
      'true: match the items to the current list by id: given fields update that item, new ids are appended, items not mentioned stay. false (default): replace the whole list.',
    ),
});

const readParameters = z.object({});

export const TodoWriteTool = Tool.define<typeof writeParameters, TodoMetadata>(
  {
    id: 'todowrite',
    permissions: { required: ['read'] },
    descriptionPath: descriptionBeside(import.meta.url, 'todowrite'),
    danger: 'safe',
  },
  (initCtx) => {
    const store = storeFor(initCtx);
    return {
      description:
        "Replace this session's todo list (id, content, status, priority per item), or with merge update items by id, and return it.",
      parameters: writeParameters,
      // It changes the session's list (so not read-only); replacing it whole, or merging the same
      // items again, leaves the same list (so idempotent); it touches nothing outside the session.
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
      async execute(args, ctx) {
        const changes = validateChanges(args.todos, args.merge === true);
        const lists = listsFor(initCtx, store, ctx);
        const session = sessionOf(ctx);
        const todos = args.merge
          ? await lists.update(session, (current) => mergeTodos(current, changes))
          : await lists.set(session, asNewItems(changes));
        return render(todos);
      },
    };
  },
);

export const TodoReadTool = Tool.define<typeof readParameters, TodoMetadata>(
  {
    id: 'todoread',
    permissions: { required: ['read'] },
    descriptionPath: descriptionBeside(import.meta.url, 'todoread'),
    danger: 'safe',
  },
  (initCtx) => {
    const store = storeFor(initCtx);
    return {
      description: "Show this session's todo list.",
      parameters: readParameters,
      annotations: { readOnlyHint: true, openWorldHint: false },
      async execute(_args, ctx) {
        return render((await listsFor(initCtx, store, ctx).get(sessionOf(ctx))) ?? []);
      },
    };
  },
);

// ---------------------------------------------------------------------------------------------

function storeFor(initCtx: Tool.InitContext): TodoStore {
  return initCtx.todoStore instanceof TodoStore ? initCtx.todoStore : todoStoreOf(tenantOf(initCtx));
}

/** Where one call's lists are: an explicit `todoStore`, else the store of the run or registry, else the tenant's. */
interface TodoLists {
  /** The session's list (undefined or empty when it has none). */
  get(sessionID: string): TodoItem[] | Promise<TodoItem[] | undefined>;
  /** Replaces the list; returns what was written. */
  set(sessionID: string, todos: TodoItem[]): Promise<TodoItem[]>;
  /** Applies `change` to the current list atomically (no other write lands in between); returns what was written. */
  update(sessionID: string, change: (current: TodoItem[]) => TodoItem[]): Promise<TodoItem[]>;
}

/** The version of the todo record this code writes (`{ v, todos, rev }`, one record per session). */
const TODO_RECORD_VERSION = 1;

function listsFor(initCtx: Tool.InitContext, local: TodoStore, ctx: Tool.Context): TodoLists {
  if (initCtx.todoStore instanceof TodoStore) return localLists(local);
  const scope = storeScope(tenantOf(initCtx), ctx);
  if (!scope) return localLists(local);
  return {
    // No async wrapper, no extra step: todoread's whole cost is about this read.
    get: (sessionID) => scope.get('todo', sessionID, parseTodoRecord),
    // Replacing does not depend on the list before, so it is one put (one statement, one commit)
    // with a fresh revision: a merge that read the list before fails its compare-and-set and reads again.
    // The engine may keep the very objects it was given (InMemoryStore does): the caller gets copies.
    set: (sessionID, todos) =>
      scope
        .put('todo', sessionID, { v: TODO_RECORD_VERSION, todos, [REVISION_FIELD]: newRevision() })
        .then(() => copyTodos(todos)),
    update: async (sessionID, change) => {
      const written = await scope.update('todo', sessionID, parseTodoRecord, (current) => ({
        v: TODO_RECORD_VERSION,
        todos: change(current ?? []),
      }));
      if (!written) {
        throw new Error(
          `The todo list of session "${sessionID}" was changed by another writer during each of ${STORE_UPDATE_ATTEMPTS} attempts to merge into it, so nothing was written. ` +
            'Read it with todoread and send the change again.',
        );
      }
      return copyTodos(written.todos);
    },
  };
}

const copyTodos = (todos: TodoItem[]): TodoItem[] => todos.map((t) => ({ ...t }));

/** The registry's own lists: synchronous, so a merge's read and write have nothing in between. */
function localLists(local: TodoStore): TodoLists {
  return {
    get: (sessionID) => local.get(sessionID),
    set: (sessionID, todos) => (local.set(sessionID, todos), Promise.resolve(todos)),
    update: (sessionID, change) => {
      const todos = change(local.get(sessionID));
      local.set(sessionID, todos);
      return Promise.resolve(todos);
    },
  };
}

function parseTodoRecord(value: Record<string, unknown>): TodoItem[] | undefined {
  if (value.v !== TODO_RECORD_VERSION || !Array.isArray(value.todos)) return undefined;
  if (value[REVISION_FIELD] !== undefined && typeof value[REVISION_FIELD] !== 'string') return undefined;
  const items: TodoItem[] = [];
  for (const t of value.todos as unknown[]) {
    const r = t as Record<string, unknown> | null;
    if (
      !r ||
      typeof r.id !== 'string' ||
      typeof r.content !== 'string' ||
      !(TODO_STATUSES as readonly unknown[]).includes(r.status) ||
      !(TODO_PRIORITIES as readonly unknown[]).includes(r.priority)
    )
      return undefined;
    items.push({
      id: r.id,
      content: r.content,
      status: r.status as TodoItem['status'],
      priority: r.priority as TodoItem['priority'],
    });
  }
  return items;
}

function sessionOf(ctx: Tool.Context): string {
  if (typeof ctx.sessionID !== 'string' || !ctx.sessionID) {
    throw new Error(
      'The todo list needs a session: this call has no sessionID. The host must pass one in the tool context.',
    );
  }
  return ctx.sessionID;
}

/** One item as given: trimmed, fields the model left out absent. */
interface TodoChange {
  id: string;
  content?: string;
  status?: TodoItem['status'];
  priority?: TodoItem['priority'];
}

/**
 * Checks the given items as a whole (size, unique non-empty ids, non-empty content within its
 * limit; without merge, every item complete) and trims them.
 */
function validateChanges(input: ReadonlyArray<z.infer<typeof todoItem>>, merge: boolean): TodoChange[] {
  if (input.length > MAX_TODOS) {
    throw new Error(
      `Too many todos: ${input.length} items, the limit is ${MAX_TODOS}. Merge small steps, or drop completed and cancelled items, and send the list again.`,
    );
  }
  const problems: string[] = [];
  const seen = new Map<string, number>();
  const changes = input.map((t, i) => {
    const id = t.id.trim();
    const content = t.content?.trim();
    const name = `item ${i + 1}${id ? ` (id "${id}")` : ''}`;
    if (!id) problems.push(`item ${i + 1} has an empty id`);
    else if (seen.has(id)) problems.push(`items ${seen.get(id)! + 1} and ${i + 1} share the id "${id}"`);
    else seen.set(id, i);
    if (content === '') problems.push(`${name} has empty content`);
    else if (content === undefined && !merge) problems.push(`${name} has no content`);
    else if (content !== undefined && content.length > MAX_TODO_CONTENT_CHARS) {
      problems.push(`${name} has ${content.length} characters of content, the limit is ${MAX_TODO_CONTENT_CHARS}`);
    }
    if (t.status === undefined && !merge) problems.push(`${name} has no status`);
    const change: TodoChange = { id };
    if (content !== undefined) change.content = content;
    if (t.status !== undefined) change.status = t.status;
    if (t.priority !== undefined) change.priority = t.priority;
    return change;
  });
  if (problems.length) {
    throw new Error(
      `Invalid todo list: ${problems.join('; ')}. ` +
        (merge
          ? 'Give every item a unique id, and every new item a non-empty content and a status, then send the change again.'
          : 'Give every item a unique id, a non-empty content and a status, then send the whole list again (or set merge to true to change only some items).'),
    );
  }
  return changes;
}

/** The items of a replacing write (all complete: validateChanges checked), defaults applied. */
function asNewItems(changes: TodoChange[]): TodoItem[] {
  return changes.map((c) => ({ id: c.id, content: c.content!, status: c.status!, priority: c.priority ?? 'medium' }));
}

/** `current` with `changes` applied by id: given fields update an item, new ids are appended, the rest stay. */
function mergeTodos(current: TodoItem[], changes: TodoChange[]): TodoItem[] {
  const todos = current.map((t) => ({ ...t }));
  const byId = new Map(todos.map((t, i) => [t.id, i]));
  const incomplete: string[] = [];
  for (const c of changes) {
    const at = byId.get(c.id);
    if (at !== undefined) {
      const t = todos[at];
      todos[at] = {
        id: t.id,
        content: c.content ?? t.content,
        status: c.status ?? t.status,
        priority: c.priority ?? t.priority,
      };
    } else if (c.content === undefined || c.status === undefined) {
      incomplete.push(
        `"${c.id}" (${[c.content === undefined && 'content', c.status === undefined && 'status'].filter(Boolean).join(' and ')})`,
      );
    } else {
      byId.set(c.id, todos.length);
      todos.push({ id: c.id, content: c.content, status: c.status, priority: c.priority ?? 'medium' });
    }
  }
  if (incomplete.length) {
    throw new Error(
      `Cannot merge: the list has no item with id ${incomplete.join(', ')}, and a new item needs a content and a status (missing as shown). ` +
        'Give them, or use the id of an existing item (todoread shows them); nothing was written.',
    );
  }
  if (todos.length > MAX_TODOS) {
    throw new Error(
      `Too many todos: merging would leave ${todos.length} items, the limit is ${MAX_TODOS}. Drop completed and cancelled items (send the whole list without merge), then add the new ones; nothing was written.`,
    );
  }
  return todos;
}

const MARK: Record<TodoItem['status'], string> = {
  pending: '[ ]',
  in_progress: '[~]',
  completed: '[x]',
  cancelled: '[-]',
};

function render(todos: TodoItem[]): Tool.Result<TodoMetadata> {
  const counts: TodoMetadata['counts'] = { pending: 0, in_progress: 0, completed: 0, cancelled: 0 };
  for (const t of todos) counts[t.status]++;
  const open = counts.pending + counts.in_progress;
  const title = `${open} open todo${open === 1 ? '' : 's'}`;
  const summary =
    `${title} (${counts.in_progress} in progress, ${counts.pending} pending), ` +
    `${counts.completed} completed, ${counts.cancelled} cancelled`;
  const lines = todos.map(
    (t) =>
      `${MARK[t.status]} ${t.content} (id ${t.id}, ${t.priority}${t.status === 'in_progress' ? ', in progress' : ''})`,
  );
  const output = todos.length ? [summary, ...lines].join('\n') : 'No todos. Use todowrite to plan multi-step work.';
  // No `truncated` key: MAX_TODOS items of MAX_TODO_CONTENT_CHARS are past the registry's output
  // cap, which then applies (a key, even false, would switch it off).
  return { title, output, metadata: { todos, open, counts } };
}
