/**
 * Serving a registry over Streamable HTTP, with the MCP spec's security requirements: loopback by
 * default, `Host` and `Origin` validation against DNS rebinding (403), and bearer-token auth (401)
 * that is required off loopback. Stateful (one session per client, `Mcp-Session-Id`) or stateless
 * (no MCP sessions; the calls' session is one per token, else one per namespace).
 * Sessions are bounded per client (its remote address) and in all; a new session only ever takes
 * the place of an idle one, never of an active one (it is refused instead).
 * Must not decide what a connection lists or runs: that is server.ts' createMcpServer.
 */
import { createHash, randomUUID, scryptSync, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Registry } from '../registry/registry.js';
import { DEFAULT_MCP_HOST, MCP_HTTP_PATH, createMcpServer, type McpServing, type ServeMcpOptions } from './server.js';

/** Open HTTP sessions one server keeps at most, all clients together. */
export const MAX_MCP_HTTP_SESSIONS = 100;
/** Open HTTP sessions one client (one remote IP address) may hold at once. */
export const MAX_MCP_HTTP_SESSIONS_PER_CLIENT = 32;
/**
 * A session with no request in flight (an open GET stream counts as one) and none for this long
 * is idle: it may be closed to make room for a new session. Active sessions are never closed for that.
 */
export const MCP_HTTP_SESSION_IDLE_MS = 10 * 60_000;

interface Session {
  transport: StreamableHTTPServerTransport;
  server: Server;
  /** Who opened it: the remote address (see clientOf). */
  client: string;
  /** When its last request started or ended (ms). */
  lastActive: number;
  /** Its requests still open (POSTs being answered, GET streams). */
  inFlight: number;
}

/** Serves `registry` over Streamable HTTP; see `ServeMcpOptions` for `host`, `token`, `allowedOrigins`, `stateless`. */
export async function serveHttp(registry: Registry, options: ServeMcpOptions): Promise<McpServing> {
  const host = options.host ?? DEFAULT_MCP_HOST;
  const port = options.port ?? 0;
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`serveMcp: "port" must be an integer 0-65535 (0 picks a free one), got ${port}.`);
  if (options.token !== undefined && (typeof options.token !== 'string' || options.token.length < 16)) {
    throw new Error('serveMcp: "token" must be a string of at least 16 characters (e.g. `openssl rand -hex 32`).');
  }
  if (!isLoopback(host) && !options.token) {
    throw new Error(
      `serveMcp: binding to ${host} exposes every served tool to the network, so a token is required. ` +
        'Pass token (toolbelt mcp --token, or the TOOLBELT_MCP_TOKEN environment variable), or bind to 127.0.0.1.',
    );
  }
  const tokenDigest = options.token ? digest(options.token) : undefined;
  // Sessions are kept apart per token: what a stateless call without `_meta` uses, and the scope of
  // every session a client names.
  const sessionScope = options.token ? tokenSessionLabel(options.token) : undefined;
  const statelessSession = sessionScope ? `mcp-token-${sessionScope}` : STATELESS_SESSION;
  const idleMs = options.sessionIdleMs ?? MCP_HTTP_SESSION_IDLE_MS;
  if (typeof idleMs !== 'number' || !Number.isFinite(idleMs) || idleMs < 0)
    throw new Error(`serveMcp: "sessionIdleMs" must be a number of milliseconds >= 0, got ${String(idleMs)}.`);
  const sessions = new Map<string, Session>();
  /** Sessions being opened (an initialize POST in progress), per client: they hold a place. */
  const opening = new Map<string, number>();
  let openingTotal = 0;
  /** Set once listening: the Host and Origin values a loopback server accepts. */
  let own: { hosts: Set<string>; origins: Set<string> } | undefined;
  const extraOrigins = new Set(options.allowedOrigins ?? []);

  const httpServer = http.createServer((req, res) => {
    void handle(req, res).catch((err) => {
      if (!res.headersSent) jsonError(res, 500, `Internal error: ${(err as Error).message}`);
      else res.end();
    });
  });

  /** Why the request is refused (status and message), or undefined. */
  function refusal(req: http.IncomingMessage): [number, string, Record<string, string>?] | undefined {
    const hostHeader = req.headers.host ?? '';
    // On loopback, a page reaching us through a rebound DNS name carries its own Host: refuse it.
    if (own && !own.hosts.has(hostHeader.toLowerCase()))
      return [403, `Host ${JSON.stringify(hostHeader)} is not allowed: this server answers only on loopback names.`];
    const origin = req.headers.origin;
    if (origin !== undefined && !own?.origins.has(origin) && !extraOrigins.has(origin)) {
      return [
        403,
        `Origin ${JSON.stringify(origin)} is not allowed. Browser pages may call this server only from its own origin or one listed in allowedOrigins (toolbelt mcp --allow-origin).`,
      ];
    }
    if (tokenDigest) {
      const auth = req.headers.authorization ?? '';
      const m = /^Bearer\s+(.+)$/i.exec(auth);
      if (!m || !timingSafeEqual(digest(m[1].trim()), tokenDigest)) {
        return [
          401,
          m
            ? 'The bearer token is wrong. Use the token the server was started with.'
            : 'This server requires "Authorization: Bearer <token>".',
          { 'www-authenticate': 'Bearer realm="toolbelt-mcp"' },
        ];
      }
    }
    return undefined;
  }

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const refused = refusal(req);
    if (refused) return jsonError(res, refused[0], refused[1], refused[2]);
    if (url.pathname !== MCP_HTTP_PATH) return jsonError(res, 404, `Not found: the MCP endpoint is ${MCP_HTTP_PATH}.`);
    if (options.stateless) return handleStateless(req, res);
    const sessionHeader = req.headers['mcp-session-id'];
    const sessionId = Array.isArray(sessionHeader) ? sessionHeader[0] : sessionHeader;
    if (sessionId) {
      const s = sessions.get(sessionId);
      if (!s)
        return jsonError(
          res,
          404,
          `Unknown or expired MCP session ${JSON.stringify(sessionId)}. Initialize a new session.`,
        );
      s.inFlight++;
      s.lastActive = Date.now();
      res.once('close', () => {
        s.inFlight--;
        s.lastActive = Date.now();
      });
      return s.transport.handleRequest(req, res);
    }
    if (req.method !== 'POST') return jsonError(res, 400, 'No mcp-session-id header: start with an initialize POST.');
    const client = clientOf(req);
    const full = admit(client);
    if (full) return jsonError(res, full[0], full[1], { 'retry-after': String(Math.max(1, Math.ceil(idleMs / 1000))) });
    opening.set(client, (opening.get(client) ?? 0) + 1);
    openingTotal++;
    try {
      // A new session: its transport and server live until the client deletes it, it is closed
      // idle to make room, or we close.
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          sessions.set(id, { transport, server, client, lastActive: Date.now(), inFlight: 0 });
        },
      });
      const server = createMcpServer(registry, {
        ...options,
        sessionID: `mcp-http-${randomUUID()}`,
        sessionScope,
      });
      transport.onclose = () => {
        if (transport.sessionId) sessions.delete(transport.sessionId);
      };
      await server.connect(transport);
      await transport.handleRequest(req, res);
      if (!transport.sessionId) await server.close().catch(() => undefined); // it was not an initialize request
    } finally {
      const left = (opening.get(client) ?? 1) - 1;
      if (left > 0) opening.set(client, left);
      else opening.delete(client);
      openingTotal--;
    }
  }

  /**
   * Whether `client` may open a new session: within its own bound and the server's, closing an
   * idle session (its own first, for its own bound) to make room when needed. The refusal (status
   * and sentence) when only active sessions could make room.
   */
  function admit(client: string): [number, string] | undefined {
    const held = () => [...sessions.values()].filter((s) => s.client === client).length + (opening.get(client) ?? 0);
    if (held() >= MAX_MCP_HTTP_SESSIONS_PER_CLIENT && !closeIdlest((s) => s.client === client)) {
      return [
        429,
        `Client ${client} already holds ${MAX_MCP_HTTP_SESSIONS_PER_CLIENT} MCP sessions (MAX_MCP_HTTP_SESSIONS_PER_CLIENT), all active, so no new one is opened. ` +
          'Close a session you no longer use (DELETE with its mcp-session-id) or reuse one, then initialize again.',
      ];
    }
    if (sessions.size + openingTotal >= MAX_MCP_HTTP_SESSIONS && !closeIdlest(() => true)) {
      return [
        503,
        `This server already holds ${MAX_MCP_HTTP_SESSIONS} MCP sessions (MAX_MCP_HTTP_SESSIONS), all active, and closes none of them to make room. ` +
          `Retry when a session has been idle for ${Math.round(idleMs / 1000)} s or closed.`,
      ];
    }
    return undefined;
  }

  /** Closes the least recently used idle session that `pick` accepts; false when there is none. */
  function closeIdlest(pick: (s: Session) => boolean): boolean {
    const now = Date.now();
    let found: [string, Session] | undefined;
    for (const entry of sessions) {
      const s = entry[1];
      if (!pick(s) || s.inFlight > 0 || now - s.lastActive < idleMs) continue;
      if (!found || s.lastActive < found[1].lastActive) found = entry;
    }
    if (!found) return false;
    sessions.delete(found[0]);
    void found[1].server.close().catch(() => undefined);
    return true;
  }

  /**
   * Stateless: one server and transport per request, no MCP session id; any replica can answer.
   * The calls' session is still stable (per token, else per namespace), so a stock client reads
   * back what it wrote and no record is left under a session no later call could name.
   */
  async function handleStateless(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    if (req.method !== 'POST')
      return jsonError(res, 405, 'This server is stateless: only POST is served (no sessions, no GET stream).');
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    const server = createMcpServer(registry, { ...options, sessionID: statelessSession, sessionScope });
    res.on('close', () => {
      void server.close().catch(() => undefined);
    });
    await server.connect(transport);
    await transport.handleRequest(req, res);
  }

  await new Promise<void>((resolve, reject) => {
    httpServer.once('error', reject);
    httpServer.listen(port, host, () => {
      httpServer.off('error', reject);
      resolve();
    });
  });
  const addr = httpServer.address() as AddressInfo;
  const shownHost = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  if (isLoopback(addr.address)) {
    const names = ['127.0.0.1', 'localhost', '[::1]'].map((h) => `${h}:${addr.port}`);
    own = { hosts: new Set(names), origins: new Set(names.map((n) => `http://${n}`)) };
  }
  let resolveClosed!: () => void;
  const closed = new Promise<void>((r) => (resolveClosed = r));
  return {
    transport: 'http',
    url: `http://${shownHost}:${addr.port}${MCP_HTTP_PATH}`,
    host: addr.address,
    port: addr.port,
    closed,
    async close() {
      const all = [...sessions.values()];
      sessions.clear();
      await Promise.all(all.map((s) => s.server.close().catch(() => undefined)));
      await new Promise<void>((r) => {
        httpServer.close(() => r());
        httpServer.closeAllConnections();
      });
      resolveClosed();
    },
  };
}

/**
 * Who a request comes from, for the per-client session bound: its remote IP address (an
 * IPv4-mapped IPv6 address as plain IPv4). Not the token: every holder of the one token would be
 * one client. On loopback every local process is the same client.
 */
function clientOf(req: http.IncomingMessage): string {
  const address = req.socket.remoteAddress ?? 'unknown';
  return address.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, '');
}

/** Whether `address` (an IP or `localhost`) is a loopback address. */
function isLoopback(address: string): boolean {
  return (
    address === 'localhost' ||
    address === '::1' ||
    /^127(?:\.\d{1,3}){3}$/.test(address) ||
    /^::ffff:127(?:\.\d{1,3}){3}$/i.test(address)
  );
}

/** The session of a stateless server's calls that name none, on a server without a token (one per namespace). */
const STATELESS_SESSION = 'mcp-stateless';

/**
 * A label standing for `token` in session ids (which tools may show, and stores keep): derived with
 * scrypt, so it is the same on every replica given the token, but neither shows the token nor
 * makes guessing it from the label cheap. Computed once per server.
 */
function tokenSessionLabel(token: string): string {
  return scryptSync(token, 'agent-toolbelt/mcp-session', 12).toString('hex');
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

function jsonError(
  res: http.ServerResponse,
  status: number,
  message: string,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
}
