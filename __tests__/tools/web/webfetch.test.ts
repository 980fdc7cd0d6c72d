import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import http from 'node:http';
import net from 'node:net';
import zlib from 'node:zlib';
import type { AddressInfo } from 'node:net';
import {
  WebfetchTool,
  MAX_RESPONSE_BYTES,
  MAX_TIMEOUT_SECONDS,
  DEFAULT_TIMEOUT_SECONDS,
} from '../../../src/tools/web/webfetch.js';
import { MAX_REDIRECTS } from '../../../src/net/redirects.js';
import { makeCtx, recordClientConnections } from '../../support/helpers.js';

// Every client socket this suite opens must connect to loopback only.
const sockets = recordClientConnections();
const connectedTo = sockets.addresses;

// A 1x1 transparent PNG.
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);

const PAGE = `<!doctype html><html><head><title>T</title><style>.x{color:red}</style>
<script>alert("evil script")</script></head><body>
<header><a href="/">SiteHeaderChrome</a></header>
<nav><a href="/a">NavChromeLink</a></nav>
<div role="navigation">RoleNavChrome</div>
<main><h1>Main Title</h1><p>Hello <b>bold</b> &amp; <a href="/docs/page?x=1">relative link</a>.</p>
<h2>Code</h2><pre><code class="language-js">const a = 1 &lt; 2;
console.log(a);</code></pre>
<ul><li>one</li><li>two</li></ul>
<iframe src="https://ads.example/">IframeText</iframe><noscript>NoscriptText</noscript>
<form><input name="q"><button>FormButton</button></form>
<object data="x.swf">ObjectText</object><embed src="y.swf">
</main><footer>FooterChrome</footer></body></html>`;

interface Hits {
  paths: string[];
}

/** Streams `total` bytes of 'a' in chunks, honouring backpressure, stopping when the client leaves. */
function streamBytes(res: http.ServerResponse, total: number, chunkSize = 64 * 1024): void {
  const chunk = Buffer.alloc(chunkSize, 'a');
  let sent = 0;
  const pump = () => {
    while (sent < total && !res.destroyed) {
      const n = Math.min(chunkSize, total - sent);
      sent += n;
      if (!res.write(n === chunkSize ? chunk : chunk.subarray(0, n))) return void res.once('drain', pump);
    }
    if (sent >= total) res.end();
  };
  res.on('close', () => (sent = total + 1));
  pump();
}

async function gzipOfZeros(bytes: number): Promise<Buffer> {
  const gz = zlib.createGzip({ level: 9 });
  const out: Buffer[] = [];
  gz.on('data', (c: Buffer) => out.push(c));
  const done = new Promise((r) => gz.on('end', r));
  const mb = Buffer.alloc(1024 * 1024);
  for (let left = bytes; left > 0; left -= mb.length) gz.write(left >= mb.length ? mb : mb.subarray(0, left));
  gz.end();
  await done;
  return Buffer.concat(out);
}

let server: http.Server;
let rawServer: net.Server;
let base: string;
let rawBase: string;
const hits: Hits = { paths: [] };
const slowClosed: string[] = [];
let bomb: Buffer;

beforeAll(async () => {
  bomb = await gzipOfZeros(50 * 1024 * 1024); // ~50 KB on the wire, 50 MB inflated
  server = http.createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://x');
    hits.paths.push(u.pathname);
    const n = Number(u.searchParams.get('n') ?? 0);
    switch (u.pathname) {
      case '/html':
        res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' }).end(PAGE);
        return;
      case '/text':
        res.writeHead(200, { 'Content-Type': 'text/plain' }).end('plain   text\nline two\n');
        return;
      case '/json':
        res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"a":1,"b":[true,null]}');
        return;
      case '/markdown':
        res.writeHead(200, { 'Content-Type': 'text/markdown' }).end('# Already markdown\n');
        return;
      case '/image.png':
        res.writeHead(200, { 'Content-Type': 'image/png', 'Content-Length': PNG.length }).end(PNG);
        return;
      case '/untyped-png':
        res.writeHead(200, { 'Content-Type': 'application/octet-stream' }).end(PNG);
        return;
      case '/pdf':
        res.writeHead(200, { 'Content-Type': 'application/pdf', 'Content-Length': 10 * 1024 * 1024 });
        streamBytes(res, 10 * 1024 * 1024);
        return;
      case '/binary':
        res.writeHead(200, { 'Content-Type': 'application/octet-stream' }).end(Buffer.from([0, 1, 2, 3, 0, 255, 254]));
        return;
      case '/latin1':
        res
          .writeHead(200, { 'Content-Type': 'text/plain; charset=iso-8859-1' })
          .end(Buffer.from([0x63, 0x61, 0x66, 0xe9])); // "café"
        return;
      case '/meta-charset':
        res
          .writeHead(200, { 'Content-Type': 'text/html' })
          .end(
            Buffer.concat([
              Buffer.from('<html><head><meta charset="windows-1252"></head><body><p>na'),
              Buffer.from([0xef, 0x76, 0x65]),
              Buffer.from('</p></body></html>'),
            ]),
          );
        return;
      case '/js-only':
        res.writeHead(200, { 'Content-Type': 'text/html' }).end('<html><body><script>render()</script></body></html>');
        return;
      case '/bytes': // n bytes with Content-Length
        res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': n });
        streamBytes(res, n);
        return;
      case '/chunked': // n bytes, no Content-Length
        res.writeHead(200, { 'Content-Type': 'text/plain' });
        streamBytes(res, n, Number(u.searchParams.get('chunk') ?? 64 * 1024));
        return;
      case '/declared-huge':
        res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': 50 * 1024 * 1024 });
        streamBytes(res, 50 * 1024 * 1024);
        return;
      case '/drop': // promises 100,000 bytes, sends 1,000, then drops the connection
        res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': '100000' });
        res.write(Buffer.alloc(1000, 'a'));
        setImmediate(() => res.socket?.destroy());
        return;
      case '/slow': {
        res.writeHead(200, { 'Content-Type': 'text/plain' });
        const timer = setInterval(() => res.write('tick\n'), 50);
        res.on('close', () => {
          clearInterval(timer);
          slowClosed.push(u.search);
        });
        return;
      }
      case '/gzip':
        res.writeHead(200, { 'Content-Type': 'text/html', 'Content-Encoding': 'gzip' }).end(zlib.gzipSync(PAGE));
        return;
      case '/br':
        res
          .writeHead(200, { 'Content-Type': 'text/plain', 'Content-Encoding': 'br' })
          .end(zlib.brotliCompressSync('brotli body'));
        return;
      case '/deflate':
        res
          .writeHead(200, { 'Content-Type': 'text/plain', 'Content-Encoding': 'deflate' })
          .end(zlib.deflateSync('zlib deflate body'));
        return;
      case '/deflate-raw':
        res
          .writeHead(200, { 'Content-Type': 'text/plain', 'Content-Encoding': 'deflate' })
          .end(zlib.deflateRawSync('raw deflate body'));
        return;
      case '/gzip-bytes': // gzip of n bytes of 'a'
        res
          .writeHead(200, { 'Content-Type': 'text/plain', 'Content-Encoding': 'gzip' })
          .end(zlib.gzipSync(Buffer.alloc(n, 'a')));
        return;
      case '/bomb':
        res
          .writeHead(200, { 'Content-Type': 'text/plain', 'Content-Encoding': 'gzip', 'Content-Length': bomb.length })
          .end(bomb);
        return;
      case '/bad-gzip':
        res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Encoding': 'gzip' }).end('this is not gzip');
        return;
      case '/status':
        res
          .writeHead(n, { 'Content-Type': 'text/html' })
          .end(`<html><body><h1>Error ${n}</h1><p>Something specific went wrong</p></body></html>`);
        return;
      case '/redirect': // a chain of n redirects ending at /text
        res.writeHead(302, { Location: n > 1 ? `/redirect?n=${n - 1}` : '/text' }).end();
        return;
      case '/loop':
        res.writeHead(301, { Location: '/loop' }).end();
        return;
      case '/headers': // the request headers a hop arrived with
        res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(req.headers));
        return;
      case '/to':
        res.writeHead(307, { Location: u.searchParams.get('url') ?? '/' }).end();
        return;
      default:
        res.writeHead(404).end('no such route');
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  // A server that lies: declares 1000 bytes, then keeps sending 6 MB.
  rawServer = net.createServer((socket) => {
    socket.on('error', () => undefined);
    socket.once('data', () => {
      socket.write('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\nConnection: close\r\n\r\n');
      const chunk = Buffer.alloc(64 * 1024, 'b');
      let sent = 0;
      const pump = () => {
        while (sent < 6 * 1024 * 1024 && !socket.destroyed) {
          sent += chunk.length;
          if (!socket.write(chunk)) return void socket.once('drain', pump);
        }
        socket.end();
      };
      pump();
    });
  });
  await new Promise<void>((r) => rawServer.listen(0, '127.0.0.1', r));
  rawBase = `http://127.0.0.1:${(rawServer.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  await new Promise((r) => rawServer.close(r));
  sockets.stop();
  // Nothing in this suite ever connected anywhere but loopback.
  expect(connectedTo.length).toBeGreaterThan(0);
  expect(connectedTo.filter((a) => a !== '127.0.0.1')).toEqual([]);
});

const LOOPBACK_ONLY = { ssrfPolicy: { allow: ['127.0.0.1/32'] } };

async function fetchWith(initCtx: Record<string, unknown>, args: Record<string, unknown>, ctx = makeCtx()) {
  const tool = await WebfetchTool.init(initCtx);
  return tool.execute(tool.parameters.parse(args), ctx);
}
const fetchLocal = (args: Record<string, unknown>, ctx = makeCtx()) =>
  fetchWith({ allowPrivateNetwork: true }, args, ctx);

describe('webfetch: network failures', () => {
  it('a connection dropped mid-body says so, with where the fetch was and how much it had read', async () => {
    await expect(fetchLocal({ url: `${base}/drop` })).rejects.toThrow(
      `webfetch of ${base}/drop failed: the connection was closed by the server while reading the body (after `,
    );
  });
});

describe('webfetch: formats and content types', () => {
  it('markdown (default) drops scripts, styles, iframes, forms and chrome; keeps atx headings, fenced code and absolute links', async () => {
    const res = await fetchLocal({ url: `${base}/html` });
    const md = res.output;
    expect(md).toMatch(/^# Main Title$/m);
    expect(md).toMatch(/^## Code$/m);
    expect(md).toContain('```js\nconst a = 1 < 2;\nconsole.log(a);\n```');
    expect(md).toContain(`[relative link](${base}/docs/page?x=1)`);
    expect(md).toMatch(/^- +one$/m);
    expect(md).toContain('Hello **bold** & ');
    expect(md).not.toMatch(/<\/?[a-z]/i);
    for (const gone of [
      'evil script',
      'color:red',
      'SiteHeaderChrome',
      'NavChromeLink',
      'RoleNavChrome',
      'IframeText',
      'NoscriptText',
      'FormButton',
      'ObjectText',
      'FooterChrome',
    ]) {
      expect([gone, md.includes(gone)]).toEqual([gone, false]);
    }
    expect(res.metadata).toMatchObject({
      status: 200,
      contentType: 'text/html',
      format: 'markdown',
      finalUrl: `${base}/html`,
      redirects: [],
    });
  });

  it('text strips every tag and tidies whitespace, one block per line', async () => {
    const res = await fetchLocal({ url: `${base}/html`, format: 'text' });
    expect(res.output).not.toMatch(/<\/?[a-z]/i);
    expect(res.output).toContain('Main Title\n');
    expect(res.output).toContain('Hello bold & relative link.');
    expect(res.output).toMatch(/^one$/m);
    expect(res.output).not.toMatch(/evil script|NavChromeLink|FooterChrome|FormButton/);
    expect(res.output).not.toMatch(/\n{3,}| {2,}/);
  });

  it('html returns the page as received', async () => {
    const res = await fetchLocal({ url: `${base}/html`, format: 'html' });
    expect(res.output).toBe(PAGE);
  });

  it('plain text, JSON and markdown are returned as text whatever the format', async () => {
    expect((await fetchLocal({ url: `${base}/text` })).output).toBe('plain   text\nline two\n');
    expect((await fetchLocal({ url: `${base}/json`, format: 'text' })).output).toBe('{"a":1,"b":[true,null]}');
    expect((await fetchLocal({ url: `${base}/markdown` })).output).toBe('# Already markdown\n');
  });

  it('an image comes back as an attachment (base64 + mime + uri)', async () => {
    const res = await fetchLocal({ url: `${base}/image.png` });
    expect(res.attachments).toEqual([
      { type: 'image', mime: 'image/png', data: PNG.toString('base64'), uri: `${base}/image.png` },
    ]);
    expect(res.output).toMatch(/image\/png.*attached/);
  });

  it('an image served as octet-stream is recognised by its bytes', async () => {
    const res = await fetchLocal({ url: `${base}/untyped-png` });
    expect(res.attachments?.[0]).toMatchObject({ type: 'image', mime: 'image/png' });
  });

  it('other binaries are refused clearly, and a declared binary is not downloaded', async () => {
    await expect(fetchLocal({ url: `${base}/pdf` })).rejects.toThrow(
      /is binary content \(application\/pdf, 10 MB\).*cannot return/,
    );
    await expect(fetchLocal({ url: `${base}/binary` })).rejects.toThrow(
      /is binary content \(application\/octet-stream, 7 bytes\)/,
    );
  });

  it('honours charset= in Content-Type and <meta charset> in the page', async () => {
    expect((await fetchLocal({ url: `${base}/latin1` })).output).toBe('café');
    expect((await fetchLocal({ url: `${base}/meta-charset` })).output).toBe('naïve');
  });

  it('says so when a page has no readable text left', async () => {
    const res = await fetchLocal({ url: `${base}/js-only` });
    expect(res.output).toMatch(/no readable text.*JavaScript.*format="html"/);
  });
});

// The gzip bomb, the slow drip, the redirect loop and redirects to private addresses are in
// hostile-web.test.ts, with the other hostile servers.
describe('webfetch: decompression', () => {
  it('gzip, br, zlib deflate and raw deflate are decoded', async () => {
    expect((await fetchLocal({ url: `${base}/gzip` })).output).toMatch(/^# Main Title$/m);
    expect((await fetchLocal({ url: `${base}/br` })).output).toBe('brotli body');
    expect((await fetchLocal({ url: `${base}/deflate` })).output).toBe('zlib deflate body');
    expect((await fetchLocal({ url: `${base}/deflate-raw` })).output).toBe('raw deflate body');
  });

  it('the cap applies to decompressed bytes: exactly 5 MB passes, one byte more fails', async () => {
    const ok = await fetchLocal({ url: `${base}/gzip-bytes?n=${MAX_RESPONSE_BYTES}` });
    expect(ok.output.length).toBe(MAX_RESPONSE_BYTES);
    await expect(fetchLocal({ url: `${base}/gzip-bytes?n=${MAX_RESPONSE_BYTES + 1}` })).rejects.toThrow(
      /too large.*5 MB limit.*after decompression/,
    );
  });

  it('a damaged gzip body is a clear error', async () => {
    await expect(fetchLocal({ url: `${base}/bad-gzip` })).rejects.toThrow(/gzip body .* could not be decompressed/);
  });
});

describe('webfetch: size limit', () => {
  it('a body of exactly 5 MB passes; 5 MB + 1 declared in Content-Length is refused before reading', async () => {
    const ok = await fetchLocal({ url: `${base}/bytes?n=${MAX_RESPONSE_BYTES}` });
    expect(ok.output.length).toBe(MAX_RESPONSE_BYTES);
    expect(ok.metadata.bytes).toBe(MAX_RESPONSE_BYTES);
    await expect(fetchLocal({ url: `${base}/bytes?n=${MAX_RESPONSE_BYTES + 1}` })).rejects.toThrow(
      /Content-Length 5242881 bytes exceeds the 5 MB limit. Nothing was read/,
    );
  });

  it('without Content-Length: exactly 5 MB passes, 5 MB + 1 streamed is stopped', async () => {
    expect((await fetchLocal({ url: `${base}/chunked?n=${MAX_RESPONSE_BYTES}` })).output.length).toBe(
      MAX_RESPONSE_BYTES,
    );
    await expect(fetchLocal({ url: `${base}/chunked?n=${MAX_RESPONSE_BYTES + 1}` })).rejects.toThrow(
      /too large: the body passed the 5 MB limit/,
    );
  });

  it('a 50 MB streamed body is stopped at the cap, and so is a declared one', async () => {
    await expect(fetchLocal({ url: `${base}/chunked?n=${50 * 1024 * 1024}` })).rejects.toThrow(
      /too large: the body passed the 5 MB limit/,
    );
    await expect(fetchLocal({ url: `${base}/declared-huge` })).rejects.toThrow(/Content-Length 52428800 bytes exceeds/);
  });

  it('a lying Content-Length never makes us read past what was declared', async () => {
    // The server declares 1000 bytes and then sends 6 MB: we keep exactly the declared 1000.
    const res = await fetchLocal({ url: `${rawBase}/` });
    expect(res.output).toBe('b'.repeat(1000));
    expect(res.metadata.bytes).toBe(1000);
  });

  it('reports progress in bytes, throttled rather than per chunk', async () => {
    const ctx = makeCtx();
    const chunks = (2 * 1024 * 1024) / (16 * 1024);
    await fetchLocal({ url: `${base}/chunked?n=${2 * 1024 * 1024}&chunk=${16 * 1024}` }, ctx);
    const byteUpdates = ctx.updates.map((u) => u.metadata?.bytes as number).filter((b) => typeof b === 'number');
    expect(byteUpdates.at(-1)).toBe(2 * 1024 * 1024);
    expect(byteUpdates.length).toBeGreaterThan(2);
    expect(byteUpdates.length).toBeLessThan(chunks / 2);
    // Non-decreasing.
    expect([...byteUpdates].sort((a, b) => a - b)).toEqual(byteUpdates);
  });
});

describe('webfetch: time', () => {
  it('ctx.abort stops a fetch in progress', async () => {
    const ctx = makeCtx();
    const pending = fetchLocal({ url: `${base}/slow?t=abort` }, ctx);
    // Abort once the first bytes were reported.
    await new Promise<void>((resolve) => {
      const check = setInterval(() => {
        if (ctx.updates.some((u) => ((u.metadata?.bytes as number) ?? 0) > 0)) {
          clearInterval(check);
          resolve();
        }
      }, 10);
    });
    ctx.abortNow();
    await expect(pending).rejects.toThrow(/was aborted while reading the body/);
  });

  it('an already-aborted call does nothing', async () => {
    const ctx = makeCtx();
    ctx.abortNow();
    const before = hits.paths.length;
    await expect(fetchLocal({ url: `${base}/text` }, ctx)).rejects.toThrow(/aborted before it started/);
    expect(hits.paths.length).toBe(before);
  });

  it('timeout: default 30, max 120, bad values are clear errors', async () => {
    const tool = await WebfetchTool.init({});
    expect(DEFAULT_TIMEOUT_SECONDS).toBe(30);
    expect(MAX_TIMEOUT_SECONDS).toBe(120);
    expect(tool.parameters.parse({ url: 'https://x.example', timeout: 120 }).timeout).toBe(120);
    for (const bad of [121, 0, -1, Number.NaN, Infinity]) {
      expect([bad, tool.parameters.safeParse({ url: 'https://x.example', timeout: bad }).success]).toEqual([
        bad,
        false,
      ]);
      // Direct callers that skip the schema get the tool's own error.
      await expect(tool.execute({ url: 'https://x.example', timeout: bad }, makeCtx())).rejects.toThrow(
        /timeout must be a number of seconds above 0 and at most 120/,
      );
    }
    expect(tool.timeout).toMatchObject({ managed: true });
  });
});

describe('webfetch: credentials in URLs', () => {
  it('never echoes user:password@ in results, progress or errors', async () => {
    const secret = 'hunter2-S3cret';
    const withCreds = base.replace('http://', `http://alice:${secret}@`);
    const ctx = makeCtx();
    const ok = await fetchLocal({ url: `${withCreds}/text` }, ctx);
    const seen = JSON.stringify([ok.title, ok.output, ok.metadata, ctx.updates]);
    expect(seen).not.toContain(secret);
    expect(seen).toContain('***@');
    for (const url of [`${withCreds}/status?n=404`, `${withCreds}/redirect?n=9`, `http://bob:${secret}@ not a url`]) {
      const err = await fetchLocal({ url }).then(
        (r) => JSON.stringify(r),
        (e: Error) => e.message,
      );
      expect(err).not.toContain(secret);
    }
    const blocked = await fetchWith({}, { url: `${withCreds}/text` }).then(
      (r) => JSON.stringify(r),
      (e: Error) => e.message,
    );
    expect(blocked).not.toContain(secret);
  });
});

describe('webfetch: redirects', () => {
  it('follows exactly 5 redirects, refuses the 6th', async () => {
    const ok = await fetchLocal({ url: `${base}/redirect?n=${MAX_REDIRECTS}` });
    expect(ok.output).toBe('plain   text\nline two\n');
    expect(ok.metadata.redirects).toHaveLength(MAX_REDIRECTS);
    expect(ok.metadata.finalUrl).toBe(`${base}/text`);
    await expect(fetchLocal({ url: `${base}/redirect?n=${MAX_REDIRECTS + 1}` })).rejects.toThrow(
      /Too many redirects: more than 5/,
    );
  });

  it('a redirect back to a URL already requested is refused as a loop at once, naming the hop', async () => {
    const before = hits.paths.filter((p) => p === '/loop').length;
    await expect(fetchLocal({ url: `${base}/loop` })).rejects.toThrow(
      `Redirect loop: ${base}/loop redirected (HTTP 301) back to ${base}/loop, which was already requested: ${base}/loop -> ${base}/loop.`,
    );
    expect(hits.paths.filter((p) => p === '/loop').length).toBe(before + 1);
  });

  it('a hop to another origin keeps the content negotiation headers but not the password of the URL', async () => {
    const port = new URL(base).port;
    const other = `http://localhost:${port}/headers`;
    const withCreds = base.replace('http://', 'http://alice:pw-hop-secret@');
    const ok = await fetchLocal({ url: `${withCreds}/to?url=${encodeURIComponent(other)}` });
    expect(ok.metadata.redirects).toEqual([other]);
    const seen = JSON.parse(ok.output) as Record<string, string>;
    expect(seen).toMatchObject({
      'user-agent': expect.stringContaining('agent-toolbelt-webfetch'),
      accept: expect.stringContaining('text/markdown'),
      'accept-encoding': 'gzip, deflate, br',
      'accept-language': 'en;q=1.0, *;q=0.5',
    });
    expect(seen.authorization).toBeUndefined();
    // A redirect to a path on the same host still sends it; its echo is scrubbed (the base64 of
    // user:password is the password, encoded).
    const same = await fetchLocal({ url: `${withCreds}/to?url=/headers` });
    expect((JSON.parse(same.output) as Record<string, string>).authorization).toBe('Basic ***');
    expect(same.output).not.toContain(Buffer.from('alice:pw-hop-secret').toString('base64'));
  });

  it('a redirect to the metadata address is refused even with allowPrivateNetwork', async () => {
    await expect(
      fetchLocal({ url: `${base}/to?url=${encodeURIComponent('http://169.254.169.254/')}` }),
    ).rejects.toThrow(/cloud metadata endpoint.*stay blocked even with allowPrivateNetwork/);
  });

  it('a redirect to another scheme is refused', async () => {
    await expect(fetchLocal({ url: `${base}/to?url=${encodeURIComponent('file:///etc/passwd')}` })).rejects.toThrow(
      /file: is not a supported scheme/,
    );
  });
});

describe('webfetch: errors', () => {
  it.each([404, 500, 503, 429])('HTTP %i is an error with the status and a snippet', async (status) => {
    const err = (await fetchLocal({ url: `${base}/status?n=${status}` }).catch((e: Error) => e)) as Error;
    expect(err.message).toMatch(
      new RegExp(
        `^HTTP ${status} .* from ${base}/status\\?n=${status}\\. The response began: "Error ${status} Something specific went wrong"`,
      ),
    );
  });

  it('unsupported schemes and invalid URLs are clear errors', async () => {
    await expect(fetchLocal({ url: 'ftp://example.com/file' })).rejects.toThrow(
      /Unsupported URL scheme "ftp:".*only fetches http:\/\/ and https:\/\//,
    );
    await expect(fetchLocal({ url: 'file:///etc/passwd' })).rejects.toThrow(/Unsupported URL scheme "file:"/);
    await expect(fetchLocal({ url: 'example.com/page' })).rejects.toThrow(
      /Invalid URL.*Did you mean "https:\/\/example.com\/page"/,
    );
  });

  it('a refused connection is a clear error', async () => {
    const closed = net.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    await expect(fetchLocal({ url: `http://127.0.0.1:${port}/` })).rejects.toThrow(
      /connection to 127\.0\.0\.1:\d+ was refused/,
    );
  });
});

describe('webfetch: the SSRF guard is on by default', () => {
  const saved = process.env.TOOLBELT_ALLOW_PRIVATE_NETWORK;
  beforeAll(() => {
    delete process.env.TOOLBELT_ALLOW_PRIVATE_NETWORK;
  });
  afterAll(() => {
    if (saved === undefined) delete process.env.TOOLBELT_ALLOW_PRIVATE_NETWORK;
    else process.env.TOOLBELT_ALLOW_PRIVATE_NETWORK = saved;
  });

  it('blocks the loopback server by literal address, by name and in IPv6 form, without connecting', async () => {
    const before = { hits: hits.paths.length, sockets: connectedTo.length };
    const port = new URL(base).port;
    await expect(fetchWith({}, { url: `${base}/text` })).rejects.toThrow(
      /127\.0\.0\.1 is a loopback address.*allowPrivateNetwork: true.*TOOLBELT_ALLOW_PRIVATE_NETWORK=1/,
    );
    await expect(fetchWith({}, { url: `http://localhost:${port}/text` })).rejects.toThrow(
      /localhost resolved to 127\.0\.0\.1, which is a loopback address/,
    );
    await expect(fetchWith({}, { url: `http://[::ffff:127.0.0.1]:${port}/text` })).rejects.toThrow(
      /IPv4-mapped form of 127\.0\.0\.1/,
    );
    await expect(fetchWith({}, { url: `http://2130706433:${port}/text` })).rejects.toThrow(
      /127\.0\.0\.1 is a loopback address/,
    );
    expect(hits.paths.length).toBe(before.hits);
    expect(connectedTo.length).toBe(before.sockets);
  });

  it('TOOLBELT_ALLOW_PRIVATE_NETWORK=1 allows it', async () => {
    process.env.TOOLBELT_ALLOW_PRIVATE_NETWORK = '1';
    try {
      expect((await fetchWith({}, { url: `${base}/text` })).output).toBe('plain   text\nline two\n');
    } finally {
      delete process.env.TOOLBELT_ALLOW_PRIVATE_NETWORK;
    }
  });

  it('an allow list of 127.0.0.1/32 reaches the server through localhost', async () => {
    const port = new URL(base).port;
    expect((await fetchWith(LOOPBACK_ONLY, { url: `http://localhost:${port}/text` })).output).toBe(
      'plain   text\nline two\n',
    );
  });
});
