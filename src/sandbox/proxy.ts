/**
 * The sandbox's network door: an HTTP proxy on a unix socket (bound into the sandbox, where socat
 * bridges a loopback port to it) that lets through only the hosts in `network.allowedDomains`:
 * CONNECT tunnels for HTTPS and anything else, absolute-URL requests for plain HTTP. Every other
 * host gets a 403 whose body says why. An allowed name is resolved once, each answer judged by the
 * package's SSRF rules (loopback, private, link-local, unspecified, metadata and their mapped forms
 * refused unless `network.allowAddresses` names them), and the connection goes to the address that
 * passed: no second lookup.
 * Must not start or configure the sandbox (runtime.ts) nor define address rules (net/ssrf.ts does).
 */
import dns from 'node:dns';
import http from 'node:http';
import net from 'node:net';
import { pipeline } from 'node:stream';
import {
  checkAddress,
  compilePolicy,
  normaliseHost,
  type CompiledPolicy,
  type Resolver,
  type Verdict,
} from '../net/ssrf.js';

/** Most connections the proxy serves at once; more are refused with 503. */
export const MAX_PROXY_CONNECTIONS = 256;

/** Whether `host:port` is in the allowlist (`example.com`, `*.example.com`, `host:port`). */
export function hostAllowed(allowed: readonly string[], host: string, port: number): boolean {
  const h = normaliseHost(host);
  if (!h) return false;
  return allowed.some((raw) => {
    const entry = raw.trim().toLowerCase();
    const m = /^(.*?)(?::(\d+))?$/.exec(entry.startsWith('[') ? entry.replace(/^\[(.*)\](.*)$/, '$1$2') : entry)!;
    const [name, wantPort] = [normaliseHost(m[1]), m[2]];
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

/** The sentence a name or address refused by the address rules reads. */
export function addressRefusalText(host: string, port: number, verdict: Verdict): string {
  const via =
    normaliseHost(host) === verdict.address ? verdict.address : `${host} resolved to ${verdict.address}, which`;
  return (
    `The sandbox refused a connection to ${host}:${port}: ${via} is ${verdict.reason}, which the sandbox does not reach ` +
    '(it would reach the host or its network, not the internet). Use a public host, or ask the user to add the address ' +
    'to sandbox.network.allowAddresses.'
  );
}

/** Resolves `host` once and returns the first address the policy allows, or the refusal. */
async function resolveChecked(
  host: string,
  policy: CompiledPolicy,
  resolver: Resolver,
): Promise<{ address: string } | { refused: Verdict } | { error: string }> {
  const h = normaliseHost(host);
  if (net.isIP(h)) {
    const v = checkAddress(h, policy);
    return v.allowed ? { address: h } : { refused: v };
  }
  let answers: { address: string; family: number }[];
  try {
    answers = await resolver(h, 0);
  } catch (err) {
    return { error: `could not resolve ${h}: ${(err as Error).message}` };
  }
  const verdicts = answers.map((a) => checkAddress(a.address, policy));
  const ok = verdicts.find((v) => v.allowed);
  // The connection goes to the checked address itself (its textual form as ipaddr.js printed it
  // is the same address; the raw answer is used to keep its family).
  if (ok) return { address: answers[verdicts.indexOf(ok)].address };
  return {
    refused: verdicts[0] ?? { allowed: false, address: h, reason: 'a host with no addresses', category: 'invalid' },
  };
}

const systemResolver: Resolver = (hostname) => dns.promises.lookup(hostname, { all: true, verbatim: true });

/** A running filtering proxy on a unix socket. */
export class FilteringProxy {
  private readonly server: http.Server;
  private readonly sockets = new Set<net.Socket>();

  private readonly policy: CompiledPolicy;

  private constructor(
    readonly socketPath: string,
    private readonly allowed: readonly string[],
    allowAddresses: readonly string[],
    private readonly resolver: Resolver,
  ) {
    this.policy = compilePolicy({ allow: [...allowAddresses] });
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
  static async start(
    socketPath: string,
    allowed: readonly string[],
    allowAddresses: readonly string[] = [],
    /** How names are resolved (default `dns.lookup`, all answers); each request resolves once. */
    resolver: Resolver = systemResolver,
  ): Promise<FilteringProxy> {
    const proxy = new FilteringProxy(socketPath, allowed, allowAddresses, resolver);
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
    client.pause();
    void resolveChecked(host, this.policy, this.resolver).then((target) => {
      if (!('address' in target)) {
        const body =
          'refused' in target
            ? addressRefusalText(host, port, target.refused)
            : `The sandbox proxy could not reach ${host}:${port}: ${target.error}`;
        client.end(
          `HTTP/1.1 ${'refused' in target ? '403 Forbidden' : '502 Bad Gateway'}\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
        );
        return;
      }
      this.open(target.address, port, client, head);
    });
  }

  /** Connects a CONNECT tunnel to the checked address. */
  private open(address: string, port: number, client: net.Socket, head: Buffer): void {
    const upstream = net.connect(port, address, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length) upstream.write(head);
      pipeline(client, upstream, () => {});
      pipeline(upstream, client, () => {});
      client.resume();
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
    req.pause();
    void resolveChecked(host, this.policy, this.resolver).then((target) => {
      if (!('address' in target)) {
        res
          .writeHead('refused' in target ? 403 : 502, { 'Content-Type': 'text/plain' })
          .end(
            'refused' in target
              ? addressRefusalText(host, port, target.refused)
              : `The sandbox proxy could not reach ${host}:${port}: ${target.error}`,
          );
        return;
      }
      this.send(req, res, url, target.address, host, port);
    });
  }

  /** Sends a plain HTTP request to the checked address (the Host header keeps the name). */
  private send(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    url: URL,
    address: string,
    host: string,
    port: number,
  ): void {
    const headers = { ...req.headers };
    delete headers['proxy-connection'];
    delete headers['proxy-authorization'];
    headers.host ??= url.host;
    const out = http.request(
      { host: address, port, method: req.method, path: `${url.pathname}${url.search}`, headers, agent: false },
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
