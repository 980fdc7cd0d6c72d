/**
 * Where todowrite / todoread keep lists: one store per registry (its tenant), keyed by session,
 * bounded in sessions and items. Light on purpose: the package root exports it.
 * Must not import zod or define the tools (todo.ts does); must not keep lists in module state for
 * registries that pass their own todoStore.
 */
import type { Tool } from '../../authoring/tool.js';
import type { Tenant } from '../../workspace/tenant.js';

declare module '../../authoring/tool.js' {
  namespace Tool {
    interface InitContext {
      /** todowrite/todoread: the store to keep lists in (e.g. one per tenant); default: the registry's own store (`todoStoreOf(registry.tenant)`). */
      todoStore?: TodoStore;
    }
  }
}

/** Most items one list may hold. */
export const MAX_TODOS = 100;
/** Longest item content, in characters. */
export const MAX_TODO_CONTENT_CHARS = 2_000;
/** Most sessions a store keeps; the least recently written list is dropped past it. */
export const MAX_TODO_SESSIONS = 1_000;

export const TODO_STATUSES = ['pending', 'in_progress', 'completed', 'cancelled'] as const;
export const TODO_PRIORITIES = ['high', 'medium', 'low'] as const;

/** One item of a todo list. */
export interface TodoItem {
  id: string;
  content: string;
  status: (typeof TODO_STATUSES)[number];
  priority: (typeof TODO_PRIORITIES)[number];
}

/** The metadata both todo tools return. */
export interface TodoMetadata extends Tool.Metadata {
  todos: TodoItem[];
  /** Items not completed or cancelled. */
  open: number;
  counts: Record<TodoItem['status'], number>;
}

/** Todo lists keyed by session id, bounded in lists and items. */
export class TodoStore {
  private readonly lists = new Map<string, TodoItem[]>();

  constructor(private readonly maxSessions = MAX_TODO_SESSIONS) {}

  /** A copy of the session's list (empty when it has none). */
  get(sessionID: string): TodoItem[] {
    return (this.lists.get(sessionID) ?? []).map((t) => ({ ...t }));
  }

  /** Replaces the session's list with a copy of `todos`. */
  set(sessionID: string, todos: TodoItem[]): void {
    this.lists.delete(sessionID); // re-insert: Map order is the recency order
    this.lists.set(
      sessionID,
      todos.map((t) => ({ ...t })),
    );
    while (this.lists.size > this.maxSessions) this.lists.delete(this.lists.keys().next().value as string);
  }

  /** Forgets a session's list (e.g. when the session ends). */
  delete(sessionID: string): void {
    this.lists.delete(sessionID);
  }

  /** How many sessions have a list. */
  get size(): number {
    return this.lists.size;
  }
}

const TODO_SLOT = Symbol('todo-store');

/** The todo store of a registry's tenant (e.g. `todoStoreOf(registry.tenant).get(sessionID)`). */
export function todoStoreOf(tenant: Tenant): TodoStore {
  return tenant.slot(TODO_SLOT, () => new TodoStore());
}
