/** Shared test helpers: real temp directories, a real Tool.Context, loopback HTTP servers. */
import { mkdtemp, rm, realpath } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import diagnosticsChannel from 'node:diagnostics_channel';
import type { AddressInfo, Socket } from 'node:net';
import type http from 'node:http';
import type { Tool } from '../../src/authoring/tool.js';

/** A fresh real temp directory (realpath'd); remove it with `cleanup()`. */
export async function tempDir(prefix = 'toolbelt-'): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await realpath(await mkdtemp(path.join(os.tmpdir(), prefix)));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/** A Tool.Context that records every progress update; `abort()` aborts its signal. */
export function makeCtx(
  overrides: Partial<Tool.Context> = {},
): Tool.Context & { updates: Tool.MetadataUpdate[]; abortNow: (reason?: unknown) => void } {
  const controller = new AbortController();
  const updates: Tool.MetadataUpdate[] = [];
  return {
    sessionID: 'session-1',
    messageID: 'message-1',
    agent: 'test',
    callID: 'call-1',
    abort: controller.signal,
    metadata: (u) => {
      updates.push(u);
    },
    ...overrides,
    updates,
    abortNow: (reason?: unknown) => controller.abort(reason),
  };
}

/**
 * Records the remote address of every client socket this process connects, so a suite can
 * assert it only ever reached loopback. `stop()` unsubscribes.
 */
export function recordClientConnections(): { addresses: string[]; stop: () => void } {
  const addresses: string[] = [];
  const onSocket = (msg: unknown) => {
    const socket = (msg as { socket: Socket }).socket;
    socket.prependListener('connect', () => addresses.push(socket.remoteAddress ?? '?'));
  };
  diagnosticsChannel.subscribe('net.client.socket', onSocket);
  return { addresses, stop: () => diagnosticsChannel.unsubscribe('net.client.socket', onSocket) };
}

/**
 * Waits until `check()` holds, looking again every few milliseconds: for synchronising on an event
 * a test cannot subscribe to (never a fixed sleep). Gives up with `what` after `limitMs`.
 */
export async function until(check: () => boolean, what: string, limitMs = 10_000): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > limitMs) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Starts `server` on a free loopback port; resolves to its base URL (`http://127.0.0.1:<port>`). */
export async function listenLoopback(server: http.Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Closes `server`, ending its open connections (keep-alive clients would hold it open). */
export async function closeServer(server: http.Server): Promise<void> {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
}

/**
 * `'same bytes'` when `actual` equals `expected`, else where they differ: for
 * `expect(bytesDiffer(a, b)).toBe('same bytes')` on large buffers (jest's own deep equality walks
 * them byte by byte, for seconds, and prints megabytes).
 */
export function bytesDiffer(actual: Buffer, expected: Buffer): string {
  if (actual.equals(expected)) return 'same bytes';
  let at = 0;
  while (at < actual.length && at < expected.length && actual[at] === expected[at]) at++;
  const near = (b: Buffer) => JSON.stringify(b.subarray(at, at + 16).toString('latin1'));
  return `${actual.length} bytes, ${expected.length} expected; first difference at byte ${at}: ${near(actual)} instead of ${near(expected)}`;
}

/** The values that occur more than once in `values` (each once, in first-seen order): for corpus tables. */
export function duplicates<T>(values: readonly T[]): T[] {
  const seen = new Set<T>();
  const twice = new Set<T>();
  for (const v of values) (seen.has(v) ? twice : seen).add(v);
  return [...twice];
}
