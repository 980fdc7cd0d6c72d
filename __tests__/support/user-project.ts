/**
 * A project as a user of the package has it: the packed tarball (`npm pack`) unpacked into
 * node_modules/agent-toolbelt, with its bin linked, so imports resolve through `exports` and
 * `toolbelt` runs the shipped dist/cli.js.
 *
 * Offline: `npm install ./agent-toolbelt-<v>.tgz --offline` needs every dependency's registry
 * metadata in the npm cache (ENOTCACHED otherwise), so instead the tarball is unpacked and the
 * package's dependencies and peers (only those: an undeclared import fails here as it would for a
 * user) are linked from this repo's node_modules.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync, existsSync, chmodSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ensureDist, ROOT } from './dist.js';

const run = promisify(execFile);

export interface PackedFile {
  path: string;
  size: number;
}

export interface Packed {
  tarball: string;
  files: PackedFile[];
  version: string;
}

/** Builds dist/ if needed, then `npm pack` into `dest` (scripts skipped: dist is already fresh). */
export async function packPackage(dest: string): Promise<Packed> {
  await ensureDist();
  const { stdout } = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dest], {
    cwd: ROOT,
    maxBuffer: 16 * 1024 * 1024,
  });
  const info = JSON.parse(stdout.slice(stdout.indexOf('['))) as {
    filename: string;
    version: string;
    files: PackedFile[];
  }[];
  return { tarball: path.join(dest, info[0].filename), files: info[0].files, version: info[0].version };
}

/** The package.json of this repo. */
export function repoPackage(): {
  name: string;
  version: string;
  exports: Record<string, unknown>;
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
  bin: Record<string, string>;
} {
  return JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as ReturnType<typeof repoPackage>;
}

function link(project: string, name: string): void {
  const from = path.join(project, 'node_modules', name);
  if (existsSync(from)) return;
  mkdirSync(path.dirname(from), { recursive: true });
  symlinkSync(path.join(ROOT, 'node_modules', name), from, 'dir');
}

/**
 * A fresh project in a temp dir with the packed package installed. `extra` names more packages to
 * link (e.g. `@types/node` for type-checking); the package's own dependencies and peers always are.
 * `type` is the project's module type: `module`, or `commonjs` (what `npm init -y` writes).
 */
export async function makeUserProject(
  tarball: string,
  extra: string[] = [],
  type: 'module' | 'commonjs' = 'module',
): Promise<string> {
  const project = mkdtempSync(path.join(os.tmpdir(), 'toolbelt-user-'));
  writeFileSync(
    path.join(project, 'package.json'),
    JSON.stringify({ name: 'user-project', private: true, type }, null, 2),
  );
  const pkgDir = path.join(project, 'node_modules', 'agent-toolbelt');
  mkdirSync(pkgDir, { recursive: true });
  await run('tar', ['-xzf', tarball, '-C', pkgDir, '--strip-components=1']);
  const pkg = repoPackage();
  for (const name of [...Object.keys(pkg.dependencies), ...Object.keys(pkg.peerDependencies), ...extra])
    link(project, name);
  const binDir = path.join(project, 'node_modules', '.bin');
  mkdirSync(binDir, { recursive: true });
  for (const [name, target] of Object.entries(pkg.bin)) {
    const bin = path.join(pkgDir, target);
    chmodSync(bin, 0o755);
    symlinkSync(path.relative(binDir, bin), path.join(binDir, name));
  }
  return project;
}
