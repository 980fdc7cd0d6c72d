/**
 * Permission cases root cannot produce (root reads every directory) are skipped in their suites
 * when the suite runs as root, as CI does. Here, as root, each one runs again in a child jest as
 * `nobody` (setpriv, groups cleared) in a temp dir only nobody uses, and must pass: so removing,
 * say, glob's EACCES handling fails CI. Run as another user, the cases run in place and this suite
 * says so and skips.
 * Must not run anything as nobody but jest on the named cases.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { chownSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from '../support/dist.js';
import { tempDir } from '../support/helpers.js';

/** Each case: its suite and its test's full name (describe blocks and title). */
const CASES = [
  { file: '__tests__/tools/files/glob.test.ts', name: 'glob skips unreadable directories instead of failing' },
];

const AS_ROOT = process.getuid?.() === 0;
if (!AS_ROOT)
  process.stderr.write(
    `unprivileged.test: not root (uid ${process.getuid?.()}), so ${CASES.length} permission case(s) ran in their own suites.\n`,
  );

const NOBODY = { uid: 65534, gid: 65534 };
let home: Awaited<ReturnType<typeof tempDir>>;
let config: Record<string, unknown>;
/** Where nobody runs jest: the checkout itself, or a copy of it when nobody cannot reach it (a clone under /root). */
let checkout = ROOT;

/** A copy of what jest needs, readable by nobody: hard links where the file system allows them (fast), else copies. */
function copyCheckout(to: string): void {
  const parts = ['package.json', 'jest.config.js', 'tsconfig.json', 'src', '__tests__', 'node_modules'];
  for (const flags of [['-a', '-l'], ['-a']]) {
    const res = spawnSync('cp', [...flags, ...parts.map((p) => path.join(ROOT, p)), to], { encoding: 'utf8' });
    if (res.status === 0) return;
    spawnSync('rm', ['-rf', ...parts.map((p) => path.join(to, p))]);
  }
  throw new Error(`could not copy the checkout ${ROOT} to ${to} for nobody to read`);
}

beforeAll(async () => {
  const configUrl = pathToFileURL(path.join(ROOT, 'jest.config.js')).href;
  config = ((await import(configUrl)) as { default: Record<string, unknown> }).default;
  home = await tempDir('unprivileged-');
  chownSync(home.dir, NOBODY.uid, NOBODY.gid);
  if (AS_ROOT && !readableByNobody(path.join(ROOT, 'package.json'))) {
    checkout = path.join(home.dir, 'checkout');
    mkdirSync(checkout, { mode: 0o755 });
    copyCheckout(checkout);
  }
}, 120_000);
afterAll(() => home.cleanup());

/** Whether nobody can read `file` (every directory above it must let nobody through). */
function readableByNobody(file: string): boolean {
  const res = spawnSync('setpriv', ['--reuid=nobody', '--regid=nogroup', '--clear-groups', '--', 'test', '-r', file]);
  return res.status === 0;
}

function asNobody(command: string, args: string[]) {
  return spawnSync('setpriv', ['--reuid=nobody', '--regid=nogroup', '--clear-groups', '--', command, ...args], {
    cwd: checkout,
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', HOME: home.dir, TMPDIR: home.dir, LANG: 'C.UTF-8' },
    timeout: 180_000,
  });
}

(AS_ROOT ? describe : describe.skip)('permission cases, run as nobody because this run is root', () => {
  it('nobody can read the checkout (or its copy) and run node', () => {
    const res = asNobody(process.execPath, [
      '-e',
      `require('fs').accessSync(${JSON.stringify(path.join(checkout, 'package.json'))})`,
    ]);
    expect({ status: res.status, stderr: res.stderr, error: res.error?.message }).toEqual({
      status: 0,
      stderr: '',
      error: undefined,
    });
  });

  for (const { file, name } of CASES) {
    it(`${file}: "${name}" passes as nobody`, () => {
      const childConfig = { ...config, rootDir: checkout, cacheDirectory: path.join(home.dir, 'jest-cache') };
      const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      const res = asNobody(process.execPath, [
        '--experimental-vm-modules',
        '--no-warnings',
        path.join(checkout, 'node_modules', 'jest', 'bin', 'jest.js'),
        '--config',
        JSON.stringify(childConfig),
        '--runTestsByPath',
        path.join(checkout, file),
        '--testNamePattern',
        `^${escaped}$`,
        '--json',
        '--maxWorkers=1',
      ]);
      const report = (() => {
        try {
          return JSON.parse(res.stdout) as {
            testResults: Array<{
              assertionResults: Array<{ fullName: string; status: string; failureMessages: string[] }>;
            }>;
          };
        } catch {
          return undefined;
        }
      })();
      const results = report?.testResults.flatMap((r) => r.assertionResults).filter((a) => a.status !== 'pending');
      expect({
        status: res.status,
        ran: results?.map((a) => ({ fullName: a.fullName, status: a.status, failures: a.failureMessages })),
        ...(report ? {} : { stdout: res.stdout.slice(0, 2000), stderr: res.stderr.slice(-3000) }),
      }).toEqual({ status: 0, ran: [{ fullName: name, status: 'passed', failures: [] }] });
    });
  }
});
