/**
 * A real PostgreSQL 15 server for tests: `initdb` into a temp dir, `pg_ctl start` on a free
 * loopback port (password auth over TCP, so URLs carry a real password), stopped and removed by
 * `stop()` and, should a test crash first, by a process exit handler. As root the server runs as
 * the `postgres` user (or `nobody`); as any other user, as that user.
 * `startPostgres()` returns a reason instead when the binaries are not installed: the suite prints
 * it and skips.
 */
import { spawn, spawnSync } from 'node:child_process';
import { chown, writeFile, mkdir, readFile } from 'node:fs/promises';
import { existsSync, rmSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { tempDir } from './helpers.js';
import { openStore, type OpenedStore } from '../../src/index.js';

const BIN = '/usr/lib/postgresql/15/bin';

/** Why the Postgres cases cannot run here (undefined when they can); the suites print it and skip only those. */
export const PG_MISSING = existsSync(`${BIN}/initdb`)
  ? undefined
  : 'PostgreSQL 15 is not installed here (apt-get install postgresql); the Postgres engine is skipped';

/** What the store suites share: a temp workspace, and a server with an `openStore` on it when Postgres can run. */
export interface StoreFixture {
  ws: { dir: string; cleanup: () => Promise<void> };
  pg?: PgServer;
  pgStore?: OpenedStore;
}

/** Makes the fixture (a server that cannot start fails the suite: CI must run it). */
export async function startStoreFixture(prefix: string): Promise<StoreFixture> {
  const ws = await tempDir(prefix);
  if (PG_MISSING) return { ws };
  const started = await startPostgres();
  if ('skip' in started) throw new Error(started.skip);
  return { ws, pg: started, pgStore: await openStore(started.url) };
}

/** Closes the store, stops and removes the server, removes the workspace. */
export async function stopStoreFixture(f: Partial<StoreFixture>): Promise<void> {
  await f.pgStore?.close();
  await f.pg?.stop();
  await f.ws?.cleanup();
}

export interface PgServer {
  /** `postgres://toolbelt:<password>@127.0.0.1:<port>/postgres` */
  url: string;
  password: string;
  port: number;
  /** Stops the server, keeping its data (`start()` brings it back). */
  pause(): Promise<void>;
  /** Starts it again after `pause()`. */
  start(): Promise<void>;
  /** Stops it and removes its directory. */
  stop(): Promise<void>;
}

/** A running server, or the reason none can run here. */
export async function startPostgres(): Promise<PgServer | { skip: string }> {
  if (!existsSync(path.join(BIN, 'initdb')) || !existsSync(path.join(BIN, 'pg_ctl')))
    return { skip: `PostgreSQL 15 is not installed (${BIN}/initdb missing; apt-get install postgresql)` };
  const runAs = process.getuid?.() === 0 ? unprivilegedUser() : undefined;
  if (process.getuid?.() === 0 && !runAs)
    return { skip: 'running as root with no postgres or nobody user to run the server as' };
  const { dir, cleanup } = await tempDir('toolbelt-pg-');
  const data = path.join(dir, 'data');
  const sock = path.join(dir, 'sock');
  await mkdir(sock);
  const password = `pw-${Math.random().toString(36).slice(2)}-Secret`;
  await writeFile(path.join(dir, 'pwfile'), password);
  if (runAs) {
    for (const p of [dir, sock, path.join(dir, 'pwfile')]) await chown(p, runAs.uid, runAs.gid);
  }
  const exec = (cmd: string, args: string[]) => run(runAs, path.join(BIN, cmd), args);
  let port = await freePort();
  const onExit = () => {
    // Synchronous last resort: a crashed suite must not leave a server or its files behind.
    spawnSync(...command(runAs, path.join(BIN, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop']), {
      stdio: 'ignore',
    });
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', onExit);
  const init = await exec('initdb', [
    '-D',
    data,
    '-U',
    'toolbelt',
    `--pwfile=${path.join(dir, 'pwfile')}`,
    '--auth-local=trust',
    '--auth-host=scram-sha-256',
    '-E',
    'UTF8',
    '--no-sync',
  ]);
  if (init.code !== 0) {
    process.off('exit', onExit);
    await cleanup();
    return { skip: `initdb failed: ${init.output.slice(-400)}` };
  }
  const start = async () => {
    const r = await exec('pg_ctl', [
      '-D',
      data,
      '-l',
      path.join(dir, 'log'),
      '-w',
      '-o',
      `-p ${port} -k ${sock} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=60`,
      'start',
    ]);
    if (r.code !== 0) {
      const log = await readFile(path.join(dir, 'log'), 'utf8').catch(() => '');
      throw new Error(`pg_ctl start failed: ${r.output} ${log.slice(-400)}`);
    }
  };
  const pause = async () => {
    await exec('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']);
  };
  try {
    await start();
  } catch (err) {
    // The port was taken between probing and starting: one more try on another.
    port = await freePort();
    await start().catch(async () => {
      process.off('exit', onExit);
      await cleanup();
      throw err;
    });
  }
  return {
    url: `postgres://toolbelt:${password}@127.0.0.1:${port}/postgres`,
    password,
    port,
    pause,
    start,
    stop: async () => {
      await pause().catch(() => undefined);
      process.off('exit', onExit);
      await cleanup();
    },
  };
}

function unprivilegedUser(): { name: string; uid: number; gid: number } | undefined {
  for (const name of ['postgres', 'nobody']) {
    const r = spawnSync('id', ['-u', name], { encoding: 'utf8' });
    const g = spawnSync('id', ['-g', name], { encoding: 'utf8' });
    if (r.status === 0 && g.status === 0) return { name, uid: Number(r.stdout.trim()), gid: Number(g.stdout.trim()) };
  }
  return undefined;
}

function command(runAs: { uid: number; gid: number } | undefined, cmd: string, args: string[]): [string, string[]] {
  if (!runAs) return [cmd, args];
  return ['setpriv', [`--reuid=${runAs.uid}`, `--regid=${runAs.gid}`, '--clear-groups', cmd, ...args]];
}

function run(
  runAs: { uid: number; gid: number } | undefined,
  cmd: string,
  args: string[],
): Promise<{ code: number; output: string }> {
  const [c, a] = command(runAs, cmd, args);
  return new Promise((resolve) => {
    const child = spawn(c, a, { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C', LANG: 'C' }, cwd: '/' });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('error', (err) => resolve({ code: -1, output: String(err) }));
    child.on('close', (code) => resolve({ code: code ?? -1, output }));
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}
