/**
 * A workaround for SDK v1 clients, in its own module so the package root can export it without loading the SDK.
 * Must not load the SDK at run time (its one import is a type) nor hold other client code (transport.ts).
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';

/**
 * Works around an SDK v1 race (modelcontextprotocol/typescript-sdk#2580): notifications are
 * dispatched a microtask late but responses at once, so progress that arrives in the same chunk as
 * the response is dropped as "unknown token". Delaying responses by two microtasks restores the
 * order in which the server sent them. Call after `client.connect(transport)`.
 */
export function orderProgressBeforeResponses(transport: Transport): void {
  const deliver = transport.onmessage;
  if (!deliver) return;
  transport.onmessage = (message, extra) => {
    const m = message as { id?: unknown; method?: unknown };
    if (m.id !== undefined && m.method === undefined)
      queueMicrotask(() => queueMicrotask(() => deliver(message, extra)));
    else deliver(message, extra);
  };
}
