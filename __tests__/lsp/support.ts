/** Helpers of the LSP suites: whether a process (and its group) is gone, and the fake servers of the fault cases. */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';

function exists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whether process `pid` and every process of its group are gone within `limitMs` (looked at every 20 ms). */
export async function processGone(pid: number, limitMs = 10_000): Promise<boolean> {
  const started = Date.now();
  while (exists(pid) || exists(-pid)) {
    if (Date.now() - started > limitMs) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
  return true;
}

/**
 * What a fake server does wrong (fault cases only; everything else runs the real servers):
 * `crash` exits at start, `hang` never answers, `garbage` answers with bytes that are not LSP,
 * `flood` answers initialize and then publishes 100,000 diagnostics for each opened file (and for
 * 2,000 files nobody opened), `huge` sends one 40 MB message.
 */
export type Fault = 'crash' | 'hang' | 'garbage' | 'flood' | 'huge';

const SCRIPT = String.raw`
const fault = process.argv[2];
if (fault === 'crash') { process.stderr.write('fake: cannot start\n'); process.exit(3); }
if (fault === 'hang') { process.stdin.resume(); setInterval(() => {}, 1 << 30); }
if (fault === 'garbage') { process.stdin.on('data', () => process.stdout.write('this is not LSP\r\n\r\n')); }
const send = (m) => { const s = JSON.stringify({ jsonrpc: '2.0', ...m }); process.stdout.write('Content-Length: ' + Buffer.byteLength(s) + '\r\n\r\n' + s); };
let buf = Buffer.alloc(0);
if (fault === 'flood' || fault === 'huge') process.stdin.on('data', (c) => {
  buf = Buffer.concat([buf, c]);
  for (;;) {
    const h = buf.indexOf('\r\n\r\n');
    if (h < 0) return;
    const len = Number(/Content-Length: (\d+)/i.exec(buf.subarray(0, h).toString())[1]);
    if (buf.length < h + 4 + len) return;
    const m = JSON.parse(buf.subarray(h + 4, h + 4 + len).toString());
    buf = buf.subarray(h + 4 + len);
    if (m.method === 'initialize') send({ id: m.id, result: { capabilities: { textDocumentSync: 1 } } });
    else if (m.method === 'shutdown') send({ id: m.id, result: null });
    else if (m.method === 'exit') process.exit(0);
    else if (m.method === 'textDocument/didOpen' || m.method === 'textDocument/didChange') {
      const { uri, version } = m.params.textDocument;
      if (fault === 'huge') { send({ method: 'window/logMessage', params: { type: 3, message: 'x'.repeat(40 * 1024 * 1024) } }); continue; }
      for (let i = 0; i < 2000; i++) send({ method: 'textDocument/publishDiagnostics', params: { uri: uri + '.other' + i, diagnostics: [{ range: { start: { line: 0, character: 0 }, end: { line: 0, character: 1 } }, message: 'x' }] } });
      const diagnostics = [];
      for (let i = 0; i < 100000; i++) diagnostics.push({ range: { start: { line: 0, character: 0 }, end: { line: 0, character: 1 } }, severity: 1, code: 'F' + i, message: 'flood ' + i + ' ' + 'y'.repeat(2000 * (i === 0 ? 1 : 0)) });
      send({ method: 'textDocument/publishDiagnostics', params: { uri, version, diagnostics } });
    }
  }
});
`;

/** Writes the fake server into `dir`; returns the `initCtx.lsp` servers entry that runs it for `.fake` files. */
export async function fakeServer(dir: string, fault: Fault) {
  const file = path.join(dir, 'fake-server.cjs');
  await writeFile(file, SCRIPT);
  return { name: 'Fake', command: process.execPath, args: [file, fault], extensions: ['.fake'] };
}
