/**
 * todowrite / todoread: a per-session task list the model keeps for itself. Both tools share one
 * store keyed by `ctx.sessionID`, so two sessions never see each other's lists.
 * Must not keep lists in module state for registries that pass their own todoStore.
 */
import { z } from 'zod';
import { Tool } from '../../tool.js';
import { descriptionBeside } from '../../description.js';
import { tenantOf } from '../../tenant.js';
import { storeScope } from '../../store/scope.js';
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
  content: z.string().describe('What to do, as a short imperative sentence.'),
  status: z.enum(TODO_STATUSES).describe('pending, in_progress (only one at a time), completed or cancelled.'),
  priority: z.enum(TODO_PRIORITIES).optional().describe('high, medium or low. Default medium.'),
});

const writeParameters = z.object({
  todos: z
    .array(todoItem)
    .describe(`The whole updated list (it replaces the previous one), at most ${MAX_TODOS} items.`),
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
      description: "Replace this session's todo list (id, content, status, priority per item) and return it.",
      parameters: writeParameters,
      // It changes the session's list (so not read-only), replacing it whole (so idempotent), and
      // touches nothing outside the session.
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
      async execute(args, ctx) {
        const todos = validateTodos(args.todos);
        const lists = listsFor(initCtx, store, ctx);
        await lists.set(sessionOf(ctx), todos);
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
        return render(await listsFor(initCtx, store, ctx).get(sessionOf(ctx)));
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
  get(sessionID: string): TodoItem[] | Promise<TodoItem[]>;
  set(sessionID: string, todos: TodoItem[]): void | Promise<void>;
}

/** The version of the todo record this code writes (`{ v, todos }`, one record per session). */
const TODO_RECORD_VERSION = 1;

function listsFor(initCtx: Tool.InitContext, local: TodoStore, ctx: Tool.Context): TodoLists {
  if (initCtx.todoStore instanceof TodoStore) return local;
  const scope = storeScope(tenantOf(initCtx), ctx);
  if (!scope) return local;
  return {
    // One record per session, written whole in one put: concurrent writers never leave a mix of two lists.
    get: async (sessionID) => (await scope.get('todo', sessionID, parseTodoRecord)) ?? [],
    set: (sessionID, todos) => scope.put('todo', sessionID, { v: TODO_RECORD_VERSION, todos }),
  };
}

function parseTodoRecord(value: Record<string, unknown>): TodoItem[] | undefined {
  if (value.v !== TODO_RECORD_VERSION || !Array.isArray(value.todos)) return undefined;
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

/** Checks the list as a whole (size, unique ids, non-empty content) and applies defaults. */
function validateTodos(input: ReadonlyArray<z.infer<typeof todoItem>>): TodoItem[] {
  if (input.length > MAX_TODOS) {
    throw new Error(
      `Too many todos: ${input.length} items, the limit is ${MAX_TODOS}. Merge small steps, or drop completed and cancelled items, and send the list again.`,
    );
  }
  const problems: string[] = [];
  const seen = new Map<string, number>();
  const todos = input.map((t, i) => {
    const id = t.id.trim();
    const content = t.content.trim();
    if (!id) problems.push(`item ${i + 1} has an empty id`);
    else if (seen.has(id)) problems.push(`items ${seen.get(id)! + 1} and ${i + 1} share the id "${id}"`);
    else seen.set(id, i);
    if (!content) problems.push(`item ${i + 1}${id ? ` (id "${id}")` : ''} has empty content`);
    else if (content.length > MAX_TODO_CONTENT_CHARS) {
      problems.push(
        `item ${i + 1}${id ? ` (id "${id}")` : ''} has ${content.length} characters of content, the limit is ${MAX_TODO_CONTENT_CHARS}`,
      );
    }
    return { id, content, status: t.status, priority: t.priority ?? 'medium' } satisfies TodoItem;
  });
  if (problems.length) {
    throw new Error(
      `Invalid todo list: ${problems.join('; ')}. Give every item a unique id and a non-empty content, then send the whole list again.`,
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
