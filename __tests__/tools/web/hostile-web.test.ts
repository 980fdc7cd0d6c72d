/**
 * A hostile web server on loopback, one route per attack (slow drip, endless body, gzip bomb,
 * redirect loop, redirects to private addresses, lying content type, invalid UTF-8, pathological
 * nesting, 1 MB pages built to make HTML conversion slow, the conversion limits at their edges),
 * fetched through registry.execute as a model's call would be: each ends in a clear, bounded error
 * or result; ordinary pages convert exactly as before the conversion bounds. Only 127.0.0.1 is reachable (ssrfPolicy allow 127.0.0.1/32), and every
 * socket the suite opens is checked to go there.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import http from 'node:http';
import zlib from 'node:zlib';
import type { AddressInfo } from 'node:net';
import { createRegistry, registerBuiltinTools, type Registry } from '../../../src/index.js';
import { MAX_HTML_ELEMENTS, MAX_HTML_PARSE_DEPTH, MAX_HTML_PARSE_ELEMENTS } from '../../../src/constants.js';
import { recordClientConnections } from '../../support/helpers.js';

const sockets = recordClientConnections();
const LOOPBACK_ONLY = { ssrfPolicy: { allow: ['127.0.0.1/32'] } };

let server: http.Server;
let base: string;
let registry: Registry;
/** A registry whose output cap is off, so a whole converted page can be checked. */
let wide: Registry;

/**
 * 1 MB pages of unclosed or repeated tags that cost 8-15 s of conversion (or hit its 15 s time
 * limit) before the pre-pass and the element caps: htmlparser2 is quadratic in unclosed nesting,
 * turndown linear but slow per element.
 */
const FLOODS: Record<string, string> = {
  div: '<div>x'.repeat(170_000),
  b: '<b>x'.repeat(250_000),
  p: '<p>x'.repeat(250_000),
  li: `<ul>${'<li>x'.repeat(200_000)}`,
  td: `<table>${'<tr><td>x'.repeat(100_000)}`,
};
/** `count` paragraphs numbered from 1: `count` elements once sanitised. */
const paragraphs = (count: number) => Array.from({ length: count }, (_, i) => `<p>${i + 1}</p>`).join('');
/** `<font>` (removed by sanitising, its content kept) nested `depth` deep around a bold word. */
const fonts = (depth: number) => `<p>${'<font>'.repeat(depth)}<b>bold</b> after`;
/** `count` numbered strings from `f`, joined by `sep`. */
const numbered = (count: number, f: (i: number) => string, sep = '') =>
  Array.from({ length: count }, (_, i) => f(i + 1)).join(sep);
/**
 * An old-style page that never closes its <p>, <li>, <tr>/<td> or <dt>/<dd>: 250 of each, so the
 * pre-pass's depth passes MAX_HTML_PARSE_DEPTH unless it applies the parser's implied closes.
 */
const UNCLOSED_PAGE = `<h1>FAQ</h1>${numbered(250, (i) => `<p>Answer ${i}`)}<ul>${numbered(250, (i) => `<li>Item ${i}`)}</ul><table>${numbered(250, (i) => `<tr><td>A${i}<td>B${i}`)}</table><dl>${numbered(250, (i) => `<dt>Term ${i}<dd>Def ${i}`)}</dl><p>End`;
/** Its markdown and text as converted before the pre-pass existed (checked against commit d91f7d0). */
const UNCLOSED_MARKDOWN = [
  '# FAQ',
  numbered(250, (i) => `Answer ${i}`, '\n\n'),
  numbered(250, (i) => `-   Item ${i}`, '\n'),
  numbered(250, (i) => `A${i}\n\nB${i}`, '\n\n'),
  numbered(250, (i) => `Term ${i}\n\nDef ${i}`, '\n\n'),
  'End',
].join('\n\n');
const UNCLOSED_TEXT = [
  'FAQ',
  numbered(250, (i) => `Answer ${i}`, '\n\n'),
  numbered(250, (i) => `Item ${i}`, '\n\n'),
  numbered(250, (i) => `A${i}B${i}`, '\n\n'),
  numbered(250, (i) => `Term ${i}\n\nDef ${i}`, '\n\n'),
  'End',
].join('\n\n');

/** A documentation page written the way real pages are: unclosed <p>, <li>, <dt>/<dd>, <tr>/<td> and <option>, a comment and a script holding tags, quoted '>' in attributes, inline <svg> with '/>'. */
const REALISTIC_PAGE = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Widgets &mdash; Guide</title>
<!-- build: <div class="x"> stray markup in a comment </div> -->
<style>p > b { color: red } /* <p> in a style */</style>
<script>if (a < b && c > d) document.write('<div><p>never shown');</script>
<link rel="stylesheet" href="/s.css"/></head>
<body><div id="page"><div class="container"><article>
<h1 title="a > b">Widgets</h1>
<p>Widgets are <em>small</em> parts. See <a href="https://example.com/docs?x=1&amp;y=2" title='say "hi"'>the docs</a>.
<p>A second paragraph, never closed
<p>A third, with a <br> break and an <img src="https://example.com/w.png" alt="widget"/> image.
<h2>Steps</h2>
<ol><li>Unpack the box<li>Read the <code>README</code><li>Assemble:
  <ul><li>base<li>arm<li>head</ul>
<li>Done</ol>
<dl><dt>Weight<dd>2 kg<dt>Size<dd>10 cm</dl>
<table><caption>Parts</caption><thead><tr><th>Part<th>Count</thead>
<tbody><tr><td>Bolt<td>4<tr><td>Nut<td>4</tbody></table>
<select><option>one<option selected>two<optgroup label="g"><option>three</select>
<p>An icon: <svg width="10" height="10"><circle cx="5" cy="5" r="4"/><title>dot</title></svg> inline.
<pre><code class="language-sh">npm install widgets &lt;latest&gt;
</code></pre>
<blockquote><p>Quoted, unclosed<p>and again</blockquote>
<textarea><p>not markup</p></textarea>
<div><div><div><p>Deep <b>bold <i>italic</b> crossed</i> text</div></div></div>
<p>Last paragraph &amp; done.
</article></div></div></body></html>
`;
/** Its markdown and text exactly as converted before the pre-pass existed (commit d91f7d0). */
const REALISTIC_MARKDOWN = `Widgets — Guide

# Widgets

Widgets are _small_ parts. See [the docs](https://example.com/docs?x=1&y=2 "say \\"hi\\"").

A second paragraph, never closed

A third, with a  
break and an ![widget](https://example.com/w.png) image.

## Steps

1.  Unpack the box
2.  Read the \`README\`
3.  Assemble:
    -   base
    -   arm
    -   head
4.  Done

Weight

2 kg

Size

10 cm

Parts

Part

Count

Bolt

4

Nut

4

An icon: inline.

\`\`\`sh
npm install widgets <latest>
\`\`\`

> Quoted, unclosed
> 
> and again

Deep **bold _italic_** crossed text

Last paragraph & done.`;
const REALISTIC_TEXT = `Widgets — Guide

Widgets

Widgets are small parts. See the docs.

A second paragraph, never closed

A third, with a
break and an image.

Steps

Unpack the box

Read the README

Assemble:

base

arm

head

Done

Weight

2 kg

Size

10 cm

Parts

PartCount

Bolt4

Nut4

An icon: inline.

npm install widgets <latest>

Quoted, unclosed

and again

Deep bold italic crossed text

Last paragraph & done.`;

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
      case '/flood':
        res.writeHead(200, { 'Content-Type': 'text/html' }).end(FLOODS[u.searchParams.get('tag') ?? '']);
        return;
      case '/paragraphs':
        res.writeHead(200, { 'Content-Type': 'text/html' }).end(paragraphs(Number(u.searchParams.get('n'))));
        return;
      case '/fonts':
        res.writeHead(200, { 'Content-Type': 'text/html' }).end(fonts(Number(u.searchParams.get('depth'))));
        return;
      case '/unclosed-old-style':
        res.writeHead(200, { 'Content-Type': 'text/html' }).end(UNCLOSED_PAGE);
        return;
      case '/realistic':
        res.writeHead(200, { 'Content-Type': 'text/html' }).end(REALISTIC_PAGE);
        return;
      default:
        res.writeHead(404).end('no such route');
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  registry = registerBuiltinTools(createRegistry(), ['webfetch']);
  wide = registerBuiltinTools(createRegistry({ truncate: { maxLines: 1e9, maxBytes: 1e9 } }), ['webfetch']);
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

  it('unclosed nested tags (20,000 levels): converted, the nesting past MAX_HTML_PARSE_DEPTH dropped before parsing', async () => {
    const res = await fetch({ url: `${base}/unclosed` });
    expect(res.error).toBeUndefined();
    expect(res.result.output).toContain('# Deep');
    expect(res.result.output).toContain('bottom');
    outcomes.push(`unclosed nesting -> ${res.result.output.length} chars of markdown`);
  });
});

const fetchWhole = (args: Record<string, unknown>) => wide.execute('webfetch', args, {}, LOOPBACK_ONLY);
const MARKDOWN_CUT = `(The page has more than ${MAX_HTML_ELEMENTS.toLocaleString('en-US')} elements; the rest was not converted. Use format="text"`;
const PARSE_CUT = `(The page has more than ${MAX_HTML_PARSE_ELEMENTS.toLocaleString('en-US')} elements; the rest was not converted. Fetch a more specific URL`;
const count = (text: string, word: string) => text.split(word).length - 1;

describe('a page built to make conversion slow', () => {
  // Before the pre-pass and the caps: div and b hit the 15 s conversion limit, p/li/td took 9-11 s.
  it.each([
    // tag, markdown cut at MAX_HTML_ELEMENTS?, the x's kept (every one when not cut)
    ['div', false, 170_000],
    ['b', false, 250_000],
    ['p', true, MAX_HTML_ELEMENTS],
    ['li', true, MAX_HTML_ELEMENTS - 1], // the <ul> is one of the elements
    ['td', true, (MAX_HTML_ELEMENTS - 1) / 2 - 0.5], // the <table>, then a <tr> and a <td> per x
  ])('1 MB of <%s>: converted within the time limit, the text kept or the cut said', async (tag, cut, xs) => {
    const res = await fetchWhole({ url: `${base}/flood?tag=${tag}` });
    expect(res.error).toBeUndefined();
    expect(res.success).toBe(true);
    const output = res.result.output;
    expect(res.result.metadata.truncatedAtElements).toBe(cut ? MAX_HTML_ELEMENTS : undefined);
    expect(output.startsWith(MARKDOWN_CUT)).toBe(cut);
    expect(count(cut ? output.slice(output.indexOf(')\n\n')) : output, 'x')).toBe(xs);
    outcomes.push(`1 MB of <${tag}> -> ${output.length} chars of markdown${cut ? ', cut at MAX_HTML_ELEMENTS' : ''}`);
  });

  it('1 MB of <div> as text: converted whole', async () => {
    const res = await fetchWhole({ url: `${base}/flood?tag=div`, format: 'text' });
    expect(res.success).toBe(true);
    expect(res.result.metadata.truncatedAtElements).toBeUndefined();
    expect(count(res.result.output, 'x')).toBe(170_000);
  });

  it('1 MB of <li> as text: cut at MAX_HTML_PARSE_ELEMENTS (the <ul> and 199,999 items), and the output says so', async () => {
    const res = await fetchWhole({ url: `${base}/flood?tag=li`, format: 'text' });
    expect(res.success).toBe(true);
    expect(res.result.metadata.truncatedAtElements).toBe(MAX_HTML_PARSE_ELEMENTS);
    const output = res.result.output;
    expect(output.startsWith(PARSE_CUT)).toBe(true);
    expect(count(output.slice(output.indexOf(')\n\n')), 'x')).toBe(MAX_HTML_PARSE_ELEMENTS - 1);
    outcomes.push(`1 MB of <li> as text -> ${output.length} chars, cut at MAX_HTML_PARSE_ELEMENTS`);
  });

  it('a realistic page (unclosed <p>, <li>, <dt>, <td>, <option>; tags in a comment and a script) converts byte for byte as before', async () => {
    const markdown = await fetch({ url: `${base}/realistic` });
    expect(markdown.result.output).toBe(REALISTIC_MARKDOWN);
    const text = await fetch({ url: `${base}/realistic`, format: 'text' });
    expect(text.result.output).toBe(REALISTIC_TEXT);
    expect(markdown.result.metadata.truncatedAtElements).toBeUndefined();
  });

  it('250 each of unclosed <p>, <li>, <tr>/<td> and <dt>/<dd> (past MAX_HTML_PARSE_DEPTH if not closed) convert exactly as before', async () => {
    const markdown = await fetchWhole({ url: `${base}/unclosed-old-style` });
    expect(markdown.result.output).toBe(UNCLOSED_MARKDOWN);
    const text = await fetchWhole({ url: `${base}/unclosed-old-style`, format: 'text' });
    expect(text.result.output).toBe(UNCLOSED_TEXT);
  });
});

describe('the conversion limits, at and past their edges', () => {
  it("a cut page's markdown still goes through the pipeline's output cap (the note first, the whole text in a file)", async () => {
    const res = await fetch({ url: `${base}/paragraphs?n=${MAX_HTML_ELEMENTS + 1}` });
    expect(res.result.metadata).toMatchObject({ truncated: true, truncatedAtElements: MAX_HTML_ELEMENTS });
    expect(res.result.metadata.outputPath).toEqual(expect.any(String));
    expect(res.result.output.startsWith(MARKDOWN_CUT)).toBe(true);
    expect(res.result.output.length).toBeLessThan(60 * 1024);
  });

  it('MAX_HTML_ELEMENTS paragraphs: all converted, no note', async () => {
    const res = await fetchWhole({ url: `${base}/paragraphs?n=${MAX_HTML_ELEMENTS}` });
    expect(res.result.metadata.truncatedAtElements).toBeUndefined();
    expect(res.result.output).not.toContain('(The page has more than');
    expect(res.result.output.endsWith(`\n\n${MAX_HTML_ELEMENTS}`)).toBe(true);
  });

  it('one paragraph more: cut before it, and the output says so first', async () => {
    const res = await fetchWhole({ url: `${base}/paragraphs?n=${MAX_HTML_ELEMENTS + 1}` });
    expect(res.success).toBe(true);
    expect(res.result.metadata.truncatedAtElements).toBe(MAX_HTML_ELEMENTS);
    const output = res.result.output;
    expect(output).toMatch(
      /^\(The page has more than 50,000 elements; the rest was not converted\. Use format="text" \(it reads up to 200,000 elements\), or fetch a more specific URL\.\)\n\n1\n\n2\n/,
    );
    expect(output.endsWith(`\n\n${MAX_HTML_ELEMENTS}`)).toBe(true);
    // The same page as text is whole.
    const text = await fetchWhole({ url: `${base}/paragraphs?n=${MAX_HTML_ELEMENTS + 1}`, format: 'text' });
    expect(text.result.output.endsWith(`\n\n${MAX_HTML_ELEMENTS + 1}`)).toBe(true);
    outcomes.push(`${MAX_HTML_ELEMENTS + 1} paragraphs -> ${output.slice(0, output.indexOf(')') + 1)}`);
  });

  it('MAX_HTML_PARSE_ELEMENTS paragraphs as text: all converted, no note', async () => {
    const res = await fetchWhole({ url: `${base}/paragraphs?n=${MAX_HTML_PARSE_ELEMENTS}`, format: 'text' });
    expect(res.result.metadata.truncatedAtElements).toBeUndefined();
    expect(res.result.output).not.toContain('(The page has more than');
    expect(res.result.output.endsWith(`\n\n${MAX_HTML_PARSE_ELEMENTS}`)).toBe(true);
  });

  it('one paragraph more, as text: cut before it, and the output says so first', async () => {
    const res = await fetchWhole({ url: `${base}/paragraphs?n=${MAX_HTML_PARSE_ELEMENTS + 1}`, format: 'text' });
    expect(res.result.metadata.truncatedAtElements).toBe(MAX_HTML_PARSE_ELEMENTS);
    expect(res.result.output.startsWith(`${PARSE_CUT}, or use format="html" for the raw page.)\n\n1\n\n2\n`)).toBe(
      true,
    );
    expect(res.result.output.endsWith(`\n\n${MAX_HTML_PARSE_ELEMENTS}`)).toBe(true);
  });

  it('an element nested MAX_HTML_PARSE_DEPTH deep in the raw page is kept', async () => {
    const res = await fetch({ url: `${base}/fonts?depth=${MAX_HTML_PARSE_DEPTH - 2}` });
    // <p>, then the <font>s, then <b> at depth MAX_HTML_PARSE_DEPTH.
    expect(res.result.output).toBe('**bold** after');
  });

  it('one level deeper it is dropped with its end tag, and its text is kept', async () => {
    const res = await fetch({ url: `${base}/fonts?depth=${MAX_HTML_PARSE_DEPTH - 1}` });
    expect(res.result.output).toBe('bold after');
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
