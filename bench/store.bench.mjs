// The store seam's cost per tool call. (1) todowrite, todoread and memory_append through the
// registry with LangGraph's InMemoryStore vs today's in-process state (todo lists in the registry's
// memory, notes as files): calls alternating one by one, each timed; the ratio is of the two
// sides' median call times, printed with its lowest and highest over ten consecutive blocks
// (target <= 1.1). (2) With PostgresStore on a loopback PostgreSQL this bench
// starts in a temp dir at PostgreSQL's default settings (synchronous_commit on; initdb + pg_ctl;
// skipped with the reason when PostgreSQL 15 is not installed): the statements each call sends,
// p50 and p99 of each call (target p50 <= 5 ms), and in the same run the floor under a write: a
// bare autocommit INSERT and a `SELECT 1` through the same pool, and pg_test_fsync's fdatasync time
// for this disk.
// Run: npm run build && node bench/store.bench.mjs [CALLS]   (STORE_BENCH_PG=0: without the PostgreSQL part)
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync, chownSync, mkdirSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { InMemoryStore } from '@langchain/langgraph';
import { createRegistry, registerBuiltinTools, openStore } from '../dist/index.js';

/** Calls of each tool per side (memory_append's in-process baseline fsyncs a file per call: a tenth). */
const CALLS = Number(process.argv[2] ?? 20_000);
/** Blocks the calls are cut into to show the spread of the ratio. */
const BLOCKS = 10;
const TOOLS = ['todowrite', 'todoread', 'memory_append'];
const ws = mkdtempSync(path.join(os.tmpdir(), 'toolbelt-bench-store-'));
process.once('exit', () => rmSync(ws, { recursive: true, force: true }));

function registry(store) {
  const r = createRegistry({ store, namespace: store ? ['bench'] : undefined, loopGuard: false });
  registerBuiltinTools(r, TOOLS);
  return r;
}
const initCtx = { workspaceRoot: ws };
let noteSeq = 0;
/** One call of `tool`; appends go to a fresh note every 20 calls, as an agent's notes grow slowly. */
function args(tool, i) {
  if (tool === 'todowrite')
    return {
      todos: [
        { id: '1', content: `step ${i}`, status: 'in_progress' },
        { id: '2', content: 'next', status: 'pending' },
      ],
    };
  if (tool === 'todowrite merge') return { todos: [{ id: '1', content: `step ${i}` }], merge: true };
  if (tool === 'todoread') return {};
  if (i % 20 === 0) noteSeq++;
  return { path: `n${noteSeq}.md`, entry: `- entry ${i}` };
}
const toolId = (tool) => tool.split(' ')[0];
/** One call of `tool`, timed (ms). */
async function timed(r, tool, i) {
  const t0 = performance.now();
  const res = await r.execute(toolId(tool), args(tool, i), { sessionID: 'bench' }, initCtx);
  const ms = performance.now() - t0;
  if (!res.success) throw new Error(res.error);
  return ms;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))];

const local = registry(undefined);
const engine = new InMemoryStore();
const inMemory = registry(engine);

/** The median time (us) of the engine's own call for `tool` (the get or put the tool makes), less an awaited no-op's. */
async function engineCost(tool) {
  const ns = ['toolbelt', 'bench', '~todo'];
  const op =
    tool === 'todoread'
      ? () => engine.get(ns, 'bench')
      : () => engine.put(ns, 'engine-probe', { v: 1, todos: args('todowrite', 0).todos, rev: 'r' });
  const noop = async () => undefined;
  const a = [];
  const b = [];
  for (let i = 0; i < 20_000; i++) {
    let t = performance.now();
    await op();
    a.push(performance.now() - t);
    t = performance.now();
    await noop();
    b.push(performance.now() - t);
  }
  return (median(a) - median(b)) * 1000;
}
for (const tool of TOOLS) {
  const calls = tool === 'memory_append' ? Math.ceil(CALLS / 10) : CALLS;
  for (let i = 0; i < 500; i++) {
    await timed(local, tool, i);
    await timed(inMemory, tool, i);
  }
  // Call by call, alternating (the order swapped every call), each call timed: a preemption or a
  // GC pause lands on single calls, which the medians leave out.
  const a = [];
  const b = [];
  for (let i = 0; i < calls; i++) {
    if (i % 2) {
      b.push(await timed(local, tool, i));
      a.push(await timed(inMemory, tool, i));
    } else {
      a.push(await timed(inMemory, tool, i));
      b.push(await timed(local, tool, i));
    }
  }
  const ratio = median(a) / median(b);
  const size = Math.floor(calls / BLOCKS);
  const blocks = Array.from({ length: BLOCKS }, (_, k) => {
    const slice = (xs) => xs.slice(k * size, (k + 1) * size);
    return median(slice(a)) / median(slice(b));
  });
  const own =
    tool === 'memory_append'
      ? ''
      : `; of the ${((median(a) - median(b)) * 1000).toFixed(2)} us between them, InMemoryStore's own ${tool === 'todoread' ? 'get' : 'put'} takes ${(await engineCost(tool)).toFixed(2)} us`;
  console.log(
    `${tool.padEnd(13)} InMemoryStore ${(median(a) * 1000).toFixed(1)} us/call, in-process ${(median(b) * 1000).toFixed(1)} us/call (medians of ${calls} calls each), ` +
      `ratio = ${ratio.toFixed(2)} (blocks of ${size}: ${Math.min(...blocks).toFixed(2)}-${Math.max(...blocks).toFixed(2)}) (target <= 1.1) ${ratio <= 1.1 ? 'OK' : 'MISSED'}${own}`,
  );
}

// --- PostgreSQL on loopback -----------------------------------------------------------------
const BIN = '/usr/lib/postgresql/15/bin';
if (process.env.STORE_BENCH_PG === '0') {
  console.log('PostgresStore: skipped (STORE_BENCH_PG=0)');
} else if (!existsSync(`${BIN}/initdb`)) {
  console.log('PostgresStore: skipped, PostgreSQL 15 is not installed (apt-get install postgresql)');
} else {
  const pg = await startPostgres();
  try {
    const store = await openStore(pg.url);
    // Statements sent to the server: every query of every pooled connection, ours and the engine's.
    const pool = store.engine.core.pool;
    let statements = 0;
    const counted = new WeakSet();
    pool.on('acquire', (client) => {
      if (counted.has(client)) return;
      counted.add(client);
      const query = client.query.bind(client);
      client.query = (...a) => (statements++, query(...a));
    });
    const r = registry(store);
    const p50s = {};
    for (const tool of [...TOOLS, 'todowrite merge']) {
      const ms = [];
      const before = statements;
      for (let i = 0; i < 300; i++) {
        const t = performance.now();
        const res = await r.execute(toolId(tool), args(tool, i), { sessionID: 'bench' }, initCtx);
        ms.push(performance.now() - t);
        if (!res.success) throw new Error(res.error);
      }
      const perCall = (statements - before) / 300;
      const p50 = (p50s[tool] = pct(ms.slice(20), 50));
      console.log(
        `${tool.padEnd(15)} PostgresStore on loopback, default settings (synchronous_commit=on): ${perCall.toFixed(2)} statements/call, ` +
          `p50 ${p50.toFixed(2)} ms, p99 ${pct(ms.slice(20), 99).toFixed(2)} ms (target p50 <= 5 ms) ${p50 <= 5 ? 'OK' : 'MISSED'}`,
      );
    }
    // The floor under one write, through the same pool: a round trip, and a commit's flush.
    await pool.query('CREATE TABLE IF NOT EXISTS bench_flush_probe (i int)');
    const timed = async (sql, params) => {
      const ms = [];
      for (let i = 0; i < 300; i++) {
        const t = performance.now();
        await pool.query(sql, params);
        ms.push(performance.now() - t);
      }
      return pct(ms.slice(20), 50);
    };
    const select = await timed('SELECT 1', []);
    const insert = await timed('INSERT INTO bench_flush_probe VALUES ($1)', [1]);
    const fsync = pgTestFsync(pg.dir);
    console.log(
      `floor: SELECT 1 p50 ${select.toFixed(2)} ms (a round trip); bare autocommit INSERT p50 ${insert.toFixed(2)} ms (a round trip and a commit, which waits for the WAL flush); ` +
        `pg_test_fsync on this disk: fdatasync ${fsync ?? 'n/a'} ms per 8 kB write`,
    );
    const flush = Math.max(0, insert - select);
    for (const tool of ['todowrite', 'memory_append', 'todowrite merge']) {
      console.log(
        `${tool.padEnd(15)} p50 = ${p50s[tool].toFixed(2)} ms, of which ${flush.toFixed(2)} ms is the disk's flush (INSERT minus SELECT 1 p50); ${Math.max(0, p50s[tool] - flush).toFixed(2)} ms without it`,
      );
    }
    await store.close();
  } finally {
    pg.stop();
  }
}
rmSync(ws, { recursive: true, force: true });

/** pg_test_fsync's fdatasync time (ms per write) for a file in `dir` (the data directory's disk), or undefined. */
function pgTestFsync(dir) {
  const r = spawnSync(`${BIN}/pg_test_fsync`, ['-s', '1', '-f', path.join(dir, 'fsync-probe')], { encoding: 'utf8' });
  const line = /one 8kB write[\s\S]*?fdatasync\s+([\d.]+) ops\/sec\s+([\d.]+) usecs\/op/.exec(r.stdout ?? '');
  return line ? (Number(line[2]) / 1000).toFixed(2) : undefined;
}

/** A throwaway server: initdb into a temp dir, pg_ctl start on a free loopback port (as postgres when root). */
async function startPostgres() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'toolbelt-bench-pg-'));
  const asUser = process.getuid() === 0 ? ['setpriv', '--reuid=postgres', '--regid=postgres', '--clear-groups'] : [];
  if (asUser.length) {
    const id = (flag) => Number(spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' }).stdout.trim());
    chownSync(dir, id('-u'), id('-g'));
  }
  const exec = (cmd, argv) => {
    const all = [...asUser, `${BIN}/${cmd}`, ...argv];
    const r = spawnSync(all[0], all.slice(1), { encoding: 'utf8', env: { PATH: process.env.PATH, LC_ALL: 'C' } });
    if (r.status !== 0) throw new Error(`${cmd} failed: ${r.stderr}`);
  };
  const port = await new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const p = s.address().port;
      s.close(() => resolve(p));
    });
  });
  const data = path.join(dir, 'data');
  const sock = path.join(dir, 'sock');
  mkdirSync(sock);
  writeFileSync(path.join(dir, 'pw'), 'bench-pw');
  if (asUser.length) {
    const id = (flag) => Number(spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' }).stdout.trim());
    chownSync(sock, id('-u'), id('-g'));
    chownSync(path.join(dir, 'pw'), id('-u'), id('-g'));
  }
  const stop = () => {
    spawnSync(
      ...[asUser.length ? 'setpriv' : `${BIN}/pg_ctl`],
      [...asUser.slice(1), ...(asUser.length ? [`${BIN}/pg_ctl`] : []), '-D', data, '-m', 'immediate', '-w', 'stop'],
      { stdio: 'ignore' },
    );
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', stop);
  exec('initdb', [
    '-D',
    data,
    '-U',
    'bench',
    `--pwfile=${path.join(dir, 'pw')}`,
    '--auth-local=trust',
    '--auth-host=scram-sha-256',
    '--no-sync',
  ]);
  exec('pg_ctl', [
    '-D',
    data,
    '-l',
    path.join(dir, 'log'),
    '-w',
    '-o',
    `-p ${port} -k ${sock} -c listen_addresses=127.0.0.1`,
    'start',
  ]);
  return {
    dir,
    url: `postgres://bench:bench-pw@127.0.0.1:${port}/postgres`,
    stop: () => (process.off('exit', stop), stop()),
  };
}
