/**
 * What jest's global setup and teardown do to guard the host (jest.config.js names the two files):
 * - setup clears every variable the package reads (package-env.mjs; PATH kept) from the real
 *   process environment, which the workers and every child process they start inherit;
 * - setup gives the run a private temp dir (TMPDIR=<os temp>/toolbelt-test-run-XXXXXX), so what a
 *   suite creates there is the run's and nobody else's;
 * - teardown fails the run, listing the paths, when anything is left in that private dir or a
 *   suite reported paths left in its own dir inside it (environment.mjs); it removes the dir
 *   either way. Entries that appeared in the OS temp dir itself during the run
 *   (a child started without TMPDIR) are listed too; they fail the run only when
 *   TOOLBELT_TEST_TMP_STRICT=1 (CI: the machine is ours), since other processes share /tmp.
 * Must not remove anything outside the private dir.
 */
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { clearPackageVariables } from './package-env.mjs';

/** Name prefix of a run's private temp dir. */
export const RUN_DIR_PREFIX = 'toolbelt-test-run-';
/** In the run's dir: one JSON report per suite that left paths in its own temp dir (environment.mjs). */
export const REPORTS_DIR = '.suite-leftovers';
const STATE = Symbol.for('agent-toolbelt.host-guard');

/** At most this many leftover paths are spelled out in the failure; the rest are counted. */
const LISTED_LEFTOVERS = 40;

function entries(dir) {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** Every path under `dir` (depth-first, directories before their contents), for the failure message. */
export function walk(dir, out = []) {
  for (const name of entries(dir).sort()) {
    const p = path.join(dir, name);
    out.push(p);
    let st;
    try {
      st = lstatSync(p);
    } catch {
      continue;
    }
    if (st.isDirectory()) walk(p, out);
  }
  return out;
}

/** Removes `dir`, first giving back read/write/search on directories a test may have locked (chmod 000). */
export function removeAll(dir) {
  try {
    rmSync(dir, { recursive: true, force: true });
    return;
  } catch {
    // A non-root run cannot empty a directory a test left unreadable: open them up, then retry.
  }
  const open = (d) => {
    try {
      chmodSync(d, 0o700);
    } catch {
      return;
    }
    for (const name of entries(d)) {
      const p = path.join(d, name);
      try {
        if (lstatSync(p).isDirectory()) open(p);
      } catch {
        // gone meanwhile
      }
    }
  };
  open(dir);
  rmSync(dir, { recursive: true, force: true });
}

/** jest globalSetup: clear the package's variables, make the private temp dir, note the OS temp dir's entries. */
export function setup(_globalConfig, projectConfig) {
  const cleared = clearPackageVariables(process.env);
  if (cleared.length)
    process.stderr.write(
      `host guard: cleared the host's ${cleared.join(', ')} for this run (tests set what they use)\n`,
    );
  const osTmp = realpathSync(os.tmpdir());
  const before = new Set(entries(osTmp));
  const runDir = mkdtempSync(path.join(osTmp, RUN_DIR_PREFIX));
  // 0711: others may pass through to a directory of their own inside (the runs as `nobody`), not list it.
  chmodSync(runDir, 0o711);
  mkdirSync(path.join(runDir, REPORTS_DIR));
  const cache = projectConfig?.cacheDirectory;
  globalThis[STATE] = { osTmp, before, runDir, savedTmpdir: process.env.TMPDIR, cache };
  process.env.TMPDIR = runDir;
}

/** jest globalTeardown: throws (jest then exits non-zero) naming every path the run left behind. */
export function teardown() {
  const state = globalThis[STATE];
  if (!state) return;
  delete globalThis[STATE];
  const { osTmp, before, runDir, savedTmpdir, cache } = state;
  if (savedTmpdir === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = savedTmpdir;

  const reportsDir = path.join(runDir, REPORTS_DIR);
  const suites = entries(reportsDir)
    .sort()
    .map((name) => JSON.parse(readFileSync(path.join(reportsDir, name), 'utf8')));
  removeAll(reportsDir);
  // @swc/jest's native binding unpacks itself into swc-native-<uid> under TMPDIR: the transformer's
  // cache, not a suite's leftover.
  const leftovers = walk(runDir).filter((p) => !/^swc-native-\d+$/.test(path.relative(runDir, p).split(path.sep)[0]));
  removeAll(runDir);
  const cacheTop = cache && path.relative(osTmp, cache).split(path.sep)[0];
  const appeared = entries(osTmp)
    .filter((name) => !before.has(name) && name !== path.basename(runDir) && name !== cacheTop)
    .map((name) => path.join(osTmp, name))
    .sort();

  const problems = [];
  for (const { suite, leftovers: paths } of suites) {
    const shown = paths.slice(0, LISTED_LEFTOVERS).map((p) => `  ${p}`);
    if (paths.length > LISTED_LEFTOVERS) shown.push(`  ... and ${paths.length - LISTED_LEFTOVERS} more`);
    problems.push(
      `${suite} left ${paths.length} path(s) in its temp dir (now removed); it must remove what it makes in afterAll/afterEach (tempDir() from __tests__/support/helpers.ts gives a cleanup):\n${shown.join('\n')}`,
    );
  }
  if (leftovers.length) {
    const shown = leftovers.slice(0, LISTED_LEFTOVERS).map((p) => `  ${path.relative(runDir, p)}`);
    if (leftovers.length > LISTED_LEFTOVERS) shown.push(`  ... and ${leftovers.length - LISTED_LEFTOVERS} more`);
    problems.push(
      `The test run left ${leftovers.length} path(s) in its temp dir (TMPDIR=${runDir}, now removed); ` +
        `the suite that made them must remove them in afterAll/afterEach (tempDir() from __tests__/support/helpers.ts gives a cleanup):\n${shown.join('\n')}`,
    );
  }
  if (appeared.length) {
    const text =
      `${appeared.length} new entr${appeared.length === 1 ? 'y' : 'ies'} appeared in ${osTmp} during the run ` +
      `(a child process started without TMPDIR, or another process on this machine):\n${appeared.map((p) => `  ${p}`).join('\n')}`;
    if (process.env.TOOLBELT_TEST_TMP_STRICT === '1') problems.push(text);
    else process.stderr.write(`host guard (warning, TOOLBELT_TEST_TMP_STRICT unset): ${text}\n`);
  }
  if (problems.length) throw new Error(`host guard: ${problems.join('\n\n')}`);
}
