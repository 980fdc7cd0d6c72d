// webfetch: our guarded fetch + sanitize + markdown of a local page, against bare `fetch` +
// turndown of the same page from the same loopback server, in the same process.
// Run: npx tsc -p tsconfig.build.json && node scripts/copy-assets.mjs && node bench/webfetch.bench.mjs
import http from 'node:http';
import zlib from 'node:zlib';
import TurndownService from 'turndown';
import { WebfetchTool } from '../dist/tools/web/webfetch.js';

const TARGET = 1.5; // ours may spend up to 1.5x the bare baseline (it sanitises and guards every hop)
const ROUNDS = Number(process.env.ROUNDS ?? 40);

function makePage(sections) {
  const parts = [
    '<!doctype html><html><head><title>Bench</title><style>body{font:14px sans-serif}</style><script>var x=1;</script></head><body>',
  ];
  parts.push(
    '<header><nav>' +
      Array.from({ length: 50 }, (_, i) => `<a href="/n${i}">Nav ${i}</a>`).join(' ') +
      '</nav></header><main>',
  );
  for (let i = 0; i < sections; i++) {
    parts.push(
      `<h2>Section ${i}</h2><p>Paragraph ${i} with <a href="/p/${i}">a link</a>, <b>bold</b> and <code>code()</code>. ${'Lorem ipsum dolor sit amet. '.repeat(8)}</p>`,
    );
    parts.push(
      `<ul><li>item a ${i}</li><li>item b ${i}</li></ul><pre><code class="language-js">function f${i}() { return ${i}; }</code></pre>`,
    );
  }
  parts.push('</main><footer>Footer</footer></body></html>');
  return parts.join('\n');
}

const page = makePage(300); // ~250 KB
const gz = zlib.gzipSync(page);
const server = http.createServer((req, res) => {
  const gzip = /gzip/.test(String(req.headers['accept-encoding'] ?? ''));
  res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', ...(gzip ? { 'Content-Encoding': 'gzip' } : {}) });
  res.end(gzip ? gz : page);
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const url = `http://127.0.0.1:${server.address().port}/page`;

const turndown = new TurndownService({ headingStyle: 'atx', codeBlockStyle: 'fenced' });
const baseline = async () => {
  const res = await fetch(url);
  return turndown.turndown(await res.text());
};
const tool = await WebfetchTool.init({ ssrfPolicy: { allow: ['127.0.0.1/32'] } });
const ctx = { sessionID: 'b', messageID: 'b', agent: 'bench', abort: new AbortController().signal, metadata() {} };
const ours = async () => (await tool.execute({ url }, ctx)).output;

async function time(fn) {
  const start = process.hrtime.bigint();
  for (let i = 0; i < ROUNDS; i++) await fn();
  return Number(process.hrtime.bigint() - start) / 1e6 / ROUNDS;
}

// Warm up both, then alternate to spread machine noise evenly.
await baseline();
const sample = await ours();
let b = 0;
let o = 0;
for (let k = 0; k < 3; k++) {
  b += await time(baseline);
  o += await time(ours);
}
b /= 3;
o /= 3;
server.close();
console.log(
  `page: ${(page.length / 1024).toFixed(0)} KB html (${(gz.length / 1024).toFixed(0)} KB gzip), ${ROUNDS}x3 rounds`,
);
console.log(`baseline (fetch + turndown): ${b.toFixed(2)} ms/page`);
console.log(`ours (webfetch markdown):    ${o.toFixed(2)} ms/page, output ${(sample.length / 1024).toFixed(0)} KB`);
console.log(
  `ratio = ours / baseline = ${(o / b).toFixed(2)} (target <= ${TARGET}) ${o / b <= TARGET ? 'OK' : 'MISSED'}`,
);
