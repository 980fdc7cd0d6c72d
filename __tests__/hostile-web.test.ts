/**
 * A hostile web server on loopback, one route per attack (slow drip, endless body, gzip bomb,
 * redirect loop, redirects to private addresses, lying content type, invalid UTF-8, pathological
 * nesting), fetched through registry.execute as a model's call would be: each ends in a clear,
 * bounded error or result. Only 127.0.0.1 is reachable (ssrfPolicy allow 127.0.0.1/32), and every
 * socket the suite opens is checked to go there.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import http from 'node:http';
import zlib from 'node:zlib';
import type { AddressInfo } from 'node:net';
import { createRegistry, registerBuiltinTools, type ToolRegistryImpl } from '../src/index.js';
import { recordClientConnections } from './helpers.js';

const sockets = recordClientConnections();
const LOOPBACK_ONLY = { ssrfPolicy: { allow: ['127.0.0.1/32'] } };

let server: http.Server;
let base: string;
let registry: ToolRegistryImpl;
let bomb: Buffer;
/** Routes whose response the client abandoned (the server saw the connection close). */
const abandoned: string[] = [];

/** Writes 'a' forever (with backpressure) until the client leaves. */
function endless(res: http.ServerResponse): void {
  const chunk = Buffer.alloc(64 * 1024, 'a');
  const pump = () => {
    while (!res.destroyed) if (!res.write(chunk)) return void res.once('drain', pump);
  };
  pump();
}

beforeAll(async () => {
  // 100 MB of zeros: ~100 KB on the wire.
  bomb = zlib.gzipSync(Buffer.alloc(100 * 1024 * 1024), { level: 9 });
  server = http.createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://x');
    res.on('close', () => {
      if (!res.writableFinished) abandoned.push(u.pathname);
    });
    switch (u.pathname) {
      case '/drip': {
        // One byte every 100 ms, forever: never idle long enough for an idle timeout to fire.
        res.writeHead(200, { 'Content-Type': 'text/plain' });
        const timer = setInterval(() => res.write('.'), 100);
        res.on('close', () => clearInterval(timer));
        return;
      }
      case '/endless':
        res.writeHead(200, { 'Content-Type': 'text/plain' });
        return endless(res);
      case '/bomb':
        res.writeHead(200, { 'Content-Type': 'text/html', 'Content-Encoding': 'gzip' }).end(bomb);
        return;
      case '/loop':
        res.writeHead(302, { Location: `/loop?n=${Number(u.searchParams.get('n') ?? 0) + 1}` }).end();
        return;
      case '/to':
        res.writeHead(307, { Location: u.searchParams.get('url') ?? '/' }).end();
        return;
      case '/binary-as-html':
        // Says HTML, sends an executable's bytes.
        res
          .writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' })
          .end(Buffer.concat([Buffer.from('\x7fELF\x02\x01\x01\0\0\0', 'latin1'), Buffer.alloc(4096, 0)]));
        return;
      case '/html-as-image':
        // Says PNG, sends a page.
        res.writeHead(200, { 'Content-Type': 'image/png' }).end('<html><body><p>not an image</p></body></html>');
        return;
      case '/bad-utf8':
        res
          .writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8' })
          .end(
            Buffer.concat([
              Buffer.from('before '),
              Buffer.from([0xff, 0xfe, 0xc3, 0x28, 0xed, 0xa0, 0x80]),
              Buffer.from(' after'),
            ]),
          );
        return;
      case '/unclosed':
        // 20,000 opening tags, never closed (a parser must not recurse per level).
        res.writeHead(200, { 'Content-Type': 'text/html' }).end(`<h1>Deep</h1>${'<div><span>'.repeat(10_000)}bottom`);
        return;
      default:
        res.writeHead(404).end('no such route');
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  registry = registerBuiltinTools(createRegistry(), ['webfetch']);
}, 60_000);

afterAll(async () => {
  sockets.stop();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

const fetch = (args: Record<string, unknown>) => registry.execute('webfetch', args, {}, LOOPBACK_ONLY);

const outcomes: string[] = [];
afterAll(() => {
  console.log(
    `hostile-web: ${outcomes.length} hostile responses, each a bounded result or a clear error:\n  ${outcomes.join('\n  ')}`,
  );
  // Every socket this suite opened went to the loopback server.
  expect([...new Set(sockets.addresses)]).toEqual(['127.0.0.1']);
});

describe('a hostile web server', () => {
  it('slow drip: the body never ends; the timeout ends the fetch and the server sees it go', async () => {
    const res = await fetch({ url: `${base}/drip`, timeout: 1 });
    expect(res.error).toMatch(/timed out after 1 s while reading the body, after \d+ bytes/);
    outcomes.push(`slow drip -> ${res.error}`);
    await waitFor(() => abandoned.includes('/drip'));
  });

  it('endless body: stopped at the size cap', async () => {
    const res = await fetch({ url: `${base}/endless` });
    expect(res.error).toMatch(/too large: the body passed the 5 MB limit/);
    outcomes.push(`endless body -> ${res.error}`);
    await waitFor(() => abandoned.includes('/endless'));
  });

  it('gzip bomb (100 KB -> 100 MB): stopped at the cap after decompression', async () => {
    const res = await fetch({ url: `${base}/bomb` });
    expect(res.error).toMatch(/too large: the body passed the 5 MB limit \(\d+ bytes after decompression read\)/);
    outcomes.push(`gzip bomb -> ${res.error}`);
  });

  it('redirect loop (a new URL each hop): refused after the redirect limit', async () => {
    const res = await fetch({ url: `${base}/loop` });
    expect(res.error).toMatch(/Too many redirects: more than 5/);
    outcomes.push(`redirect loop -> ${res.error}`);
  });

  it.each([
    ['http://169.254.169.254/latest/meta-data/', /169\.254\.169\.254 is a cloud metadata endpoint/],
    ['http://10.0.0.1/', /10\.0\.0\.1 is a private address/],
    ['http://[::ffff:a9fe:a9fe]/', /IPv4-mapped form of 169\.254\.169\.254/],
    ['http://metadata.google.internal/computeMetadata/v1/', /metadata\.google\.internal is a cloud metadata host name/],
    ['http://127.0.0.2/', /127\.0\.0\.2 is a loopback address/],
  ])('redirect to %s: refused before connecting', async (target, message) => {
    const before = sockets.addresses.length;
    const res = await fetch({ url: `${base}/to?url=${encodeURIComponent(target)}` });
    expect(res.error).toMatch(message);
    expect(res.error).toMatch(/No connection was made.*Reached through a redirect/);
    // Exactly one connection: the first hop, to the loopback server.
    expect(sockets.addresses.slice(before)).toEqual(['127.0.0.1']);
    outcomes.push(`redirect to ${target} -> ${res.error!.slice(0, 80)}...`);
  });

  it('wrong content type: binary bytes labelled text/html are refused, not converted', async () => {
    const res = await fetch({ url: `${base}/binary-as-html` });
    expect(res.success).toBe(false);
    expect(res.error).toMatch(/binary/i);
    expect(res.result.output).not.toContain('ELF');
    outcomes.push(`binary as text/html -> ${res.error}`);
  });

  it('wrong content type: a page labelled image/png is not passed off as an image', async () => {
    const res = await fetch({ url: `${base}/html-as-image` });
    expect(res.result.attachments).toBeUndefined();
    expect(res.error).toBeUndefined();
    expect(res.result.output).toBe('not an image');
    outcomes.push(`html as image/png -> converted as the page it is: ${JSON.stringify(res.result.output)}`);
  });

  it('invalid UTF-8: the bad bytes become U+FFFD and the rest of the text is kept', async () => {
    const res = await fetch({ url: `${base}/bad-utf8` });
    expect(res.error).toBeUndefined();
    expect(res.result.output).toMatch(/^before \uFFFD+.*\uFFFD+ after$/u);
    outcomes.push(`invalid UTF-8 -> ${JSON.stringify(res.result.output)}`);
  });

  it('unclosed nested tags (20,000 levels): converted, or stopped by the conversion time limit with a way out', async () => {
    const res = await fetch({ url: `${base}/unclosed` });
    if (res.success) {
      expect(res.result.output).toContain('# Deep');
      expect(res.result.output).toContain('bottom');
    } else {
      expect(res.error).toMatch(/took longer than \d+ s and was stopped\. Fetch it with format="html"/);
    }
    expect(res.result.output).not.toMatch(/Maximum call stack/);
    outcomes.push(`unclosed nesting -> ${res.success ? `${res.result.output.length} chars of markdown` : res.error}`);
  });
});

/** Polls `cond` on the event loop (the server's close event is asynchronous); fails after 5 s. */
async function waitFor(cond: () => boolean): Promise<void> {
  const until = Date.now() + 5_000;
  while (!cond()) {
    if (Date.now() > until) throw new Error('condition not met within 5 s');
    await new Promise((r) => setImmediate(r));
  }
}
