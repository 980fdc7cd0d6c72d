// The store seam's cost per tool call. (1) todowrite, todoread and memory_append through the
// registry with LangGraph's InMemoryStore vs today's in-process state (todo lists in the registry's
// memory, notes as files), interleaved rounds, CPU time, ratio per tool (target <= 1.1).
// (2) With PostgresStore on a loopback PostgreSQL this bench starts in a temp dir (initdb +
// pg_ctl; skipped with the reason when PostgreSQL 15 is not installed): p50 and p99 of each call
// (target p50 <= 5 ms).
// Run: npm run build && node bench/store.bench.mjs [N]
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync, chownSync, mkdirSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { InMemoryStore } from '@langchain/langgraph';
import { createRegistry, registerBuiltinTools, openStore } from '../dist/index.js';

const N = Number(process.argv[2] ?? 2000);
const ROUNDS = 10;
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
  if (tool === 'todoread') return {};
  if (i % 20 === 0) noteSeq++;
  return { path: `n${noteSeq}.md`, entry: `- entry ${i}` };
}
async function cpu(r, tool, n) {
  const start = process.cpuUsage();
  for (let i = 0; i < n; i++) {
    const res = await r.execute(tool, args(tool, i), { sessionID: 'bench' }, initCtx);
    if (!res.success) throw new Error(res.error);
  }
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))];

const local = registry(undefined);
const inMemory = registry(new InMemoryStore());
for (const tool of TOOLS) {
  await cpu(local, tool, 200);
  await cpu(inMemory, tool, 200);
  const ratios = [];
  let a = 0;
  let b = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const x = await cpu(inMemory, tool, N / ROUNDS);
    const y = await cpu(local, tool, N / ROUNDS);
    a += x;
    b += y;
    ratios.push(x / y);
  }
  const ratio = median(ratios);
  console.log(
    `${tool.padEnd(13)} InMemoryStore ${((a / N) * 1000).toFixed(1)} us/call, in-process ${((b / N) * 1000).toFixed(1)} us/call, ratio = ${ratio.toFixed(2)} (target <= 1.1) ${ratio <= 1.1 ? 'OK' : 'MISSED'}`,
  );
}

// --- PostgreSQL on loopback -----------------------------------------------------------------
const BIN = '/usr/lib/postgresql/15/bin';
if (!existsSync(`${BIN}/initdb`)) {
  console.log('PostgresStore: skipped, PostgreSQL 15 is not installed (apt-get install postgresql)');
} else {
  const pg = await startPostgres();
  try {
    const store = await openStore(pg.url);
    const r = registry(store);
    for (const tool of TOOLS) {
      const ms = [];
      for (let i = 0; i < 300; i++) {
        const t = performance.now();
        const res = await r.execute(tool, args(tool, i), { sessionID: 'bench' }, initCtx);
        ms.push(performance.now() - t);
        if (!res.success) throw new Error(res.error);
      }
      const p50 = pct(ms.slice(20), 50);
      console.log(
        `${tool.padEnd(13)} PostgresStore on loopback (synchronous_commit=off: the disk's flush is not ours to measure): p50 ${p50.toFixed(2)} ms, p99 ${pct(ms.slice(20), 99).toFixed(2)} ms (target p50 <= 5 ms) ${p50 <= 5 ? 'OK' : 'MISSED'}`,
      );
    }
    // Undo history on the store: each write saves one ~undo record (its earlier 1 KB content, base64)
    // and then trims the namespace's records past MAX_UNDO_RECORDS, vs the same writes without a store.
    for (const [label, st] of [
      ['in-process', undefined],
      ['PostgresStore', store],
    ]) {
      const w = createRegistry({ store: st, namespace: st ? ['bench-undo'] : undefined, loopGuard: false });
      registerBuiltinTools(w, ['write', 'read']);
      const file = `undo-${label}.txt`;
      writeFileSync(path.join(ws, file), 'x'.repeat(1024));
      await w.execute('read', { filePath: file }, { sessionID: 'bench' }, initCtx);
      const ms = [];
      for (let i = 0; i < 300; i++) {
        const t = performance.now();
        const res = await w.execute(
          'write',
          { filePath: file, content: `${i}`.padEnd(1024, 'y') },
          { sessionID: 'bench' },
          initCtx,
        );
        ms.push(performance.now() - t);
        if (!res.success) throw new Error(res.error);
      }
      console.log(
        `write (undo record) ${label.padEnd(13)}: p50 ${pct(ms.slice(20), 50).toFixed(2)} ms, p99 ${pct(ms.slice(20), 99).toFixed(2)} ms`,
      );
    }
    await store.close();
  } finally {
    pg.stop();
  }
}
rmSync(ws, { recursive: true, force: true });

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
    `-p ${port} -k ${sock} -c listen_addresses=127.0.0.1 -c synchronous_commit=off`,
    'start',
  ]);
  return {
    url: `postgres://bench:bench-pw@127.0.0.1:${port}/postgres`,
    stop: () => (process.off('exit', stop), stop()),
  };
}
