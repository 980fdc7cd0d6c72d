/**
 * The language servers of one registry: started on first need, one per server and project root,
 * reused by every call, restarted once after a crash (a second end leaves that server off, with its
 * reason), all stopped by `registry.dispose()` (and by the host's exit, server.ts).
 * Must not talk LSP (server.ts) nor word anything for a model but why a server is not there.
 */
import type { Tool } from '../authoring/tool.js';
import type { ServerSpec } from './config.js';
import { locateServer, rootOf, type Launch } from './locate.js';
import { LspServer } from './server.js';

/** One server and root: the running server, or why there is none. */
interface Slot {
  server?: LspServer;
  /** Why no server is (or will be) started for it: not found, or ended twice. */
  off?: string;
  /** How often it ended by itself. */
  ends: number;
  launch?: Promise<Launch | string>;
}

/** The servers of one registry (or of tools used without one). */
export class LspManager {
  private readonly slots = new Map<string, Slot>();
  private disposed = false;
  private readonly told = new Set<string>();

  /**
   * The server serving `abs` (started now when it is not running), or a sentence saying why there is
   * none. The server may still be starting: wait on its `ready`.
   */
  async serverFor(spec: ServerSpec, abs: string, wsRoot: string): Promise<LspServer | string> {
    if (this.disposed) return 'the registry was disposed';
    const root = await rootOf(abs, spec.rootMarkers, wsRoot);
    const key = `${spec.id}\0${root}\0${JSON.stringify([spec.command, spec.args, spec.env, spec.initializationOptions])}`;
    let slot = this.slots.get(key);
    if (!slot) this.slots.set(key, (slot = { ends: 0 }));
    if (slot.off) return slot.off;
    if (slot.server) return slot.server;
    slot.launch ??= locateServer(spec, root, wsRoot);
    const launch = await slot.launch;
    if (typeof launch === 'string') return (slot.off = launch);
    if (slot.server) return slot.server;
    if (this.disposed) return 'the registry was disposed';
    const server = new LspServer(spec, root, launch);
    slot.server = server;
    server.onDeath = (reason) => {
      if (slot.server === server) slot.server = undefined;
      slot.ends += 1;
      // Restarted once (on the next need); a second end leaves it off.
      if (slot.ends >= 2) {
        slot.off = `the ${spec.name} server ended twice (last: it ${reason}), so it is not started again in this session`;
      }
    };
    return server;
  }

  /** Whether `reason` (why a server is off) is said for the first time: edits say it once, then nothing. */
  firstTime(reason: string): boolean {
    if (this.told.has(reason)) return false;
    this.told.add(reason);
    return true;
  }

  /** The servers running now (for doctor and the bench). */
  running(): LspServer[] {
    return [...this.slots.values()].flatMap((s) => (s.server?.alive ? [s.server] : []));
  }

  /** Stops every server and waits until each has exited (what `registry.dispose()` calls). */
  async dispose(): Promise<void> {
    this.disposed = true;
    const servers = [...this.slots.values()].flatMap((s) => (s.server ? [s.server] : []));
    this.slots.clear();
    await Promise.all(servers.map((s) => s.stop()));
  }
}

interface DisposableOwner {
  onDispose(fn: () => Promise<void> | void): () => void;
}

const managers = new WeakMap<object, LspManager>();
const standalone = new LspManager();

/** The servers of the registry running this call (`ctx.extra.registry`), made on first use; stopped by its `dispose()`. */
export function managerFor(ctx: Pick<Tool.Context, 'extra'> | undefined): LspManager {
  const owner = ctx?.extra?.registry as (object & Partial<DisposableOwner>) | undefined;
  if (!owner) return standalone;
  let manager = managers.get(owner);
  if (!manager) {
    const made = new LspManager();
    managers.set(owner, made);
    owner.onDispose?.(() => made.dispose());
    manager = made;
  }
  return manager;
}
