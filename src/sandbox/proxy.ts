/**
 * The sandbox's network door: an HTTP proxy on a unix socket (bound into the sandbox, where socat
 * bridges a loopback port to it) that lets through only the hosts in `network.allowedDomains`:
 * CONNECT tunnels for HTTPS and anything else, absolute-URL requests for plain HTTP. Every other
 * host gets a 403 whose body says why.
 * Must not start or configure the sandbox (runtime.ts) nor judge addresses beyond the allowlist.
 */
import http from 'node:http';
import net from 'node:net';
import { pipeline } from 'node:stream';

/** Most connections the proxy serves at once; more are refused with 503. */
export const MAX_PROXY_CONNECTIONS = 256;

/** Whether `host:port` is in the allowlist (`example.com`, `*.example.com`, `host:port`). */
export function hostAllowed(allowed: readonly string[], host: string, port: number): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return allowed.some((raw) => {
    const entry = raw.trim().toLowerCase();
    const m = /^(.*?)(?::(\d+))?$/.exec(entry.startsWith('[') ? entry.replace(/^\[(.*)\](.*)$/, '$1$2') : entry)!;
    const [name, wantPort] = [m[1], m[2]];
    if (wantPort !== undefined && Number(wantPort) !== port) return false;
    if (name.startsWith('*.')) return h.endsWith(name.slice(1)) && h.length > name.length - 1;
    return h === name;
  });
}

/** The sentence a refused request reads (the 403 body, which curl and friends print). */
export function refusalText(host: string, port: number, allowed: readonly string[]): string {
  return (
    `The sandbox refused a connection to ${host}:${port}: it is not in network.allowedDomains ` +
    `(${allowed.length ? allowed.join(', ') : 'empty: no network'}). Use an allowed host, or ask the user to add this one.`
  );
}

/** A running filtering proxy on a unix socket. */
export class FilteringProxy {
  private readonly server: http.Server;
  private readonly sockets = new Set<net.Socket>();

  private constructor(
    readonly socketPath: string,
    private readonly allowed: readonly string[],
  ) {
    this.server = http.createServer((req, res) => this.forward(req, res));
    this.server.on('connect', (req: http.IncomingMessage, socket: net.Socket, head: Buffer) =>
      this.tunnel(req, socket, head),
    );
    this.server.on('connection', (s: net.Socket) => {
      this.sockets.add(s);
      s.once('close', () => this.sockets.delete(s));
    });
    this.server.maxConnections = MAX_PROXY_CONNECTIONS;
  }

  /** Starts a proxy listening on `socketPath`; it never keeps the process alive. */
  static async start(socketPath: string, allowed: readonly string[]): Promise<FilteringProxy> {
    const proxy = new FilteringProxy(socketPath, allowed);
    await new Promise<void>((resolve, reject) => {
      proxy.server.once('error', reject);
      proxy.server.listen(socketPath, () => {
        proxy.server.off('error', reject);
        resolve();
      });
    });
    proxy.server.unref();
    return proxy;
  }

  /** Stops listening and ends every open connection. */
  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private tunnel(req: http.IncomingMessage, client: net.Socket, head: Buffer): void {
    const m = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(req.url ?? '');
    const host = m ? m[1].replace(/^\[|\]$/g, '') : '';
    const port = m ? Number(m[2]) : 0;
    client.on('error', () => client.destroy());
    if (!m || !hostAllowed(this.allowed, host, port)) {
      const body = m ? refusalText(host, port, this.allowed) : `Bad CONNECT target ${JSON.stringify(req.url)}.`;
      client.end(
        `HTTP/1.1 ${m ? '403 Forbidden' : '400 Bad Request'}\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
      return;
    }
    const upstream = net.connect(port, host, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length) upstream.write(head);
      pipeline(client, upstream, () => {});
      pipeline(upstream, client, () => {});
    });
    upstream.on('error', (err) => {
      if (!client.writableEnded && upstream.connecting)
        client.end(`HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\n\r\n${err.message}`);
      else client.destroy();
    });
  }

  private forward(req: http.IncomingMessage, res: http.ServerResponse): void {
    let url: URL;
    try {
      url = new URL(req.url ?? '');
    } catch {
      res.writeHead(400, { 'Content-Type': 'text/plain' }).end('The sandbox proxy takes absolute http:// URLs only.');
      return;
    }
    const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (url.protocol !== 'http:' || !hostAllowed(this.allowed, host, port)) {
      res.writeHead(403, { 'Content-Type': 'text/plain' }).end(refusalText(host, port, this.allowed));
      return;
    }
    const headers = { ...req.headers };
    delete headers['proxy-connection'];
    delete headers['proxy-authorization'];
    const out = http.request(
      { host, port, method: req.method, path: `${url.pathname}${url.search}`, headers },
      (upstream) => {
        res.writeHead(upstream.statusCode ?? 502, upstream.headers);
        pipeline(upstream, res, () => {});
      },
    );
    out.on('error', (err) => {
      if (!res.headersSent) res.writeHead(502, { 'Content-Type': 'text/plain' });
      res.end(`The sandbox proxy could not reach ${host}:${port}: ${err.message}`);
    });
    pipeline(req, out, () => {});
  }
}
