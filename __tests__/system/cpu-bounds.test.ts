/**
 * CPU bounds: work that used to freeze the whole process (a catastrophic-backtracking regex in the
 * JS grep backend, HTML -> markdown of a deeply nested page) finishes within its timeout while a
 * heartbeat timer in the same process keeps ticking. The assertion counts late heartbeats (gaps
 * between ticks, judged against a control heartbeat in another process), never wall-clock totals.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createRegistry, registerBuiltinTools } from '../../src/index.js';
import { tempDir } from '../support/helpers.js';

/** Heartbeat period. */
const TICK_MS = 10;
/**
 * A gap that counts as the event loop having been blocked: over 500 ms (the ~100 ms target has no
 * margin on a shared machine), and only when a control heartbeat ticking in another process kept
 * ticking over the same moment. A loaded 2-core machine stalls every process alike (a 404 ms gap
 * was seen at load 2, and a whole-window comparison still counted stalls the control happened to
 * miss): a gap of ours that overlaps a control gap of at least CONTROL_SHARE of its length is the
 * machine's, not ours. The unfixed code held this process's loop alone, for the whole work
 * (seconds to minutes), while the control ticked.
 */
const BLOCKED_GAP_MS = 500;
/** How much of our gap a control gap over the same moment must cover to excuse it. */
const CONTROL_SHARE = 0.5;
/** The single line of the long-line file. */
const LONG_LINE_CHARS = 50 * 1024 * 1024;
/** The control heartbeat: ticks like ours, prints its gaps over 50 ms (epoch ms intervals) when its stdin ends. */
const CONTROL_SCRIPT = `const t = () => performance.timeOrigin + performance.now();
let last = t(); const gaps = [];
const note = (now) => { if (now - last > 50) gaps.push([last, now]); last = now; };
setInterval(() => note(t()), ${TICK_MS});
process.stdout.write('ready\\n');
process.stdin.resume().on('end', () => { note(t()); process.stdout.write(JSON.stringify({ gaps }) + '\\n'); process.exit(0); });`;

type Gap = [start: number, end: number];
const now = () => performance.timeOrigin + performance.now();

/** Whether the control's gaps cover at least CONTROL_SHARE of `gap` (the machine stalled both). */
function excused(gap: Gap, control: readonly Gap[]): boolean {
  const covered = control.reduce((n, [s, e]) => n + Math.max(0, Math.min(e, gap[1]) - Math.max(s, gap[0])), 0);
  return covered >= CONTROL_SHARE * (gap[1] - gap[0]);
}

/** Starts a heartbeat here and a control one in a child process; `stop()` counts our gaps over the limit the control did not share. */
async function heartbeat(): Promise<{
  stop: () => Promise<{ ticks: number; blocked: number; maxGapMs: number; controlMaxGapMs: number }>;
}> {
  const control = spawn(process.execPath, ['-e', CONTROL_SCRIPT], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  control.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  await new Promise<void>((resolve, reject) => {
    control.once('error', reject);
    control.stdout.on('data', () => out.includes('ready') && resolve());
  });
  let last = now();
  let ticks = 0;
  const gaps: Gap[] = [];
  const timer = setInterval(() => {
    const t = now();
    gaps.push([last, t]);
    last = t;
    ticks++;
  }, TICK_MS);
  return {
    stop: async () => {
      clearInterval(timer);
      gaps.push([last, now()]);
      const exited = new Promise((resolve) => control.once('exit', resolve));
      control.stdin.end();
      await exited;
      const controlGaps = (JSON.parse(out.slice(out.indexOf('{'))) as { gaps: Gap[] }).gaps;
      const long = gaps.filter(([s, e]) => e - s > BLOCKED_GAP_MS);
      return {
        ticks,
        blocked: long.filter((g) => !excused(g, controlGaps)).length,
        maxGapMs: Math.max(...gaps.map(([s, e]) => e - s)),
        controlMaxGapMs: Math.max(0, ...controlGaps.map(([s, e]) => e - s)),
      };
    },
  };
}

let base: { dir: string; cleanup: () => Promise<void> };
let server: http.Server;
let origin: string;

/** `<ul><li>` nested `depth` deep, `copies` times (the 0.4 MB page of the attack review is depth 1000 x 20). */
function nestedLists(depth: number, copies: number): string {
  const one = '<ul><li>item '.repeat(depth) + 'deepest' + '</li></ul>'.repeat(depth);
  return `<!doctype html><html><body><h1>Nested</h1>${one.repeat(copies)}</body></html>`;
}

beforeAll(async () => {
  base = await tempDir('cpu-bounds-');
  // Lines of 5,000 'a's: the JS backend matches one line in one go, so the longest line bounds a slice
  // (docs/security.md gives the per-byte cost of the slowest patterns).
  await writeFile(path.join(base.dir, 'redos.txt'), `${'a'.repeat(5_000)}!\n`.repeat(40));
  // One line of 50 MB (a minified bundle, a data dump): matched off the main thread.
  await mkdir(path.join(base.dir, 'long'));
  await writeFile(
    path.join(base.dir, 'long', 'one-line.txt'),
    `start ${'a'.repeat(LONG_LINE_CHARS)} needle end\nnext line\n`,
  );
  const pages: Record<string, string> = {
    '/deep-1000': nestedLists(1000, 1),
    '/deep-20000': nestedLists(20_000, 1),
    '/review-page': nestedLists(1000, 20),
  };
  server = http.createServer((req, res) => {
    const page = pages[req.url ?? ''];
    if (!page) return void res.writeHead(404).end();
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' }).end(page);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  await base.cleanup();
});

describe('CPU bounds', () => {
  it.each([['(a+)+$'], ['(a|a)*$'], ['(a*)*b'], ['(\\w+\\s?)+$'], ['(.*a){12}x'], ['^(a|aa)+$']])(
    'grep (JS backend) with the ReDoS pattern %s finishes and the heartbeat keeps ticking',
    async (pattern) => {
      const registry = registerBuiltinTools(createRegistry({ timeoutMs: 20_000 }), ['grep']);
      const beat = await heartbeat();
      const res = await registry.execute('grep', { pattern }, {}, { workspaceRoot: base.dir, grepBackend: 'js' });
      const hb = await beat.stop();
      console.log(
        `grep ${pattern}: ${res.status}; heartbeat ${hb.ticks} ticks, ${hb.blocked} blocked, max gap ${Math.round(hb.maxGapMs)} ms (control ${Math.round(hb.controlMaxGapMs)} ms)`,
      );
      expect(res.success).toBe(true);
      expect(hb).toMatchObject({ blocked: 0 });
    },
  );

  it.each([
    ['needle', 'a literal (V8)', true],
    ['ne+dle end$', 'a regex (re2js)', true],
    ['(a+)+$', 'the ReDoS pattern', false],
  ])(
    'grep (JS backend) for %s over one 50 MB line: %s, and the heartbeat keeps ticking',
    async (pattern, _what, completes) => {
      const registry = registerBuiltinTools(createRegistry({ timeoutMs: 60_000 }), ['grep']);
      const beat = await heartbeat();
      const res = await registry.execute(
        'grep',
        { pattern, path: 'long' },
        {},
        { workspaceRoot: base.dir, grepBackend: 'js' },
        // The ReDoS pattern on 50 MB would take minutes even in linear time: the timeout ends it.
        completes ? {} : { timeoutMs: 2_000 },
      );
      const hb = await beat.stop();
      console.log(
        `grep ${pattern} over a 50 MB line: ${res.status}; heartbeat ${hb.ticks} ticks, ${hb.blocked} blocked, max gap ${Math.round(hb.maxGapMs)} ms (control ${Math.round(hb.controlMaxGapMs)} ms)`,
      );
      if (completes) {
        expect(res.error).toBeUndefined();
        expect(res.result.output).toMatch(/one-line\.txt/);
        expect(res.result.output).toMatch(/\b1: start aaaa/);
        expect(res.result.output).not.toMatch(/next line/);
      } else if (res.status === 'completed') {
        // Linear time can finish 50 MB inside the timeout on an idle machine: then the answer must
        // be right (the line ends in "end", so `(a+)+$` matches nothing).
        expect(res.result.output).toMatch(/^No (matches|files) found/);
      } else {
        expect(res.error).toMatch(/timed out after 2000 ms/);
      }
      expect(hb).toMatchObject({ blocked: 0 });
    },
  );

  it.each([
    ['/deep-1000', 'whole'],
    ['/review-page', 'cut at the output cap'],
    ['/deep-20000', 'cut at the output cap'],
  ] as const)(
    'webfetch of the nested page %s converts (no stack overflow), the output %s, and the heartbeat keeps ticking',
    async (page, shown) => {
      const registry = registerBuiltinTools(createRegistry(), ['webfetch']);
      const beat = await heartbeat();
      const res = await registry.execute(
        'webfetch',
        { url: `${origin}${page}`, format: 'markdown' },
        {},
        { allowPrivateNetwork: true },
      );
      const hb = await beat.stop();
      console.log(
        `webfetch ${page}: ${res.status}; heartbeat ${hb.ticks} ticks, ${hb.blocked} blocked, max gap ${Math.round(hb.maxGapMs)} ms (control ${Math.round(hb.controlMaxGapMs)} ms)`,
      );
      expect(res.error).toBeUndefined();
      expect(res.result.output).toContain('# Nested');
      // The deepest text is in the output, or (cut at the cap) in the full output saved beside it.
      const saved = res.result.metadata.outputPath as string | undefined;
      expect({ page, shown: saved === undefined ? 'whole' : 'cut at the output cap' }).toEqual({ page, shown });
      expect(saved === undefined ? res.result.output : await readFile(saved, 'utf8')).toContain('deepest');
      expect(res.result.output).toContain('-   item');
      expect(res.result.output).not.toMatch(/Maximum call stack/);
      expect(hb).toMatchObject({ blocked: 0 });
    },
  );
});
