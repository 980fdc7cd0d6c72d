/** Builds dist/ (tsc + assets) when it is missing or older than src/, once across parallel jest workers. */
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const CLI = path.join(ROOT, 'dist', 'cli.js');
const LOCK = path.join(ROOT, 'dist', '.build-lock');
const STALE_LOCK_MS = 180_000;

function newestSource(dir: string): number {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) newest = Math.max(newest, newestSource(p));
    else if (/\.(ts|txt)$/.test(e.name)) newest = Math.max(newest, statSync(p).mtimeMs);
  }
  return newest;
}

function fresh(): boolean {
  return existsSync(CLI) && statSync(CLI).mtimeMs >= newestSource(path.join(ROOT, 'src'));
}

/** The src/ file a dist/ file was built from. */
export function sourceOf(distRel: string): string | undefined {
  // The CommonJS copies of the declarations (scripts/cjs-types.mjs) stand for the same sources.
  distRel = distRel.replace(/^dist\/cjs\/(.*\.d\.ts)$/, 'dist/$1');
  // .txt descriptions and plain-JS .mjs worker scripts are copied from src/ as they are.
  const m = /^dist\/(.*?)(\.d\.ts|\.js)(\.map)?$|^dist\/(.*\.(?:txt|mjs))$/.exec(distRel);
  if (!m) return undefined;
  return m[4] ? `src/${m[4]}` : `src/${m[1]}.ts`;
}

/** Makes sure dist/cli.js exists and is not older than any file in src/. */
export async function ensureDist(): Promise<void> {
  if (fresh()) return;
  mkdirSync(path.dirname(LOCK), { recursive: true });
  for (;;) {
    try {
      mkdirSync(LOCK);
      break;
    } catch {
      // another worker is building: wait for it (or take over a lock left by a killed run)
      if (existsSync(LOCK) && Date.now() - statSync(LOCK).mtimeMs > STALE_LOCK_MS)
        rmSync(LOCK, { recursive: true, force: true });
      await new Promise((r) => setTimeout(r, 200));
      if (fresh()) return;
    }
  }
  try {
    if (fresh()) return;
    try {
      await run(
        process.execPath,
        [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'],
        { cwd: ROOT },
      );
    } catch (err) {
      // Type errors in files under construction still emit JavaScript; only a missing cli.js is fatal.
      if (!existsSync(CLI)) throw err;
    }
    await run(process.execPath, [path.join(ROOT, 'scripts', 'copy-assets.mjs')], { cwd: ROOT });
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
}

/** What a run of the CLI printed and how it ended. */
export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the built CLI (`node dist/cli.js ...args`) in `cwd` with exactly `env`, stdin closed. */
export function runCli(args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
