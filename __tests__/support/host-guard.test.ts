/**
 * The run's guards for the host (host-guard.mjs, setup-env.mjs), each proved by a child jest on a
 * fixture suite: a suite that leaves temp paths behind fails the run with their names, and a run
 * started with the package's variables set shows them to no suite and no child process.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT } from './dist.js';
import { tempDir } from './helpers.js';
import { pathToFileURL } from 'node:url';

// The child runs' jest cache: in the temp dir of this run, removed after.
let cache: Awaited<ReturnType<typeof tempDir>>;
let config: Record<string, unknown>;
beforeAll(async () => {
  const configUrl = pathToFileURL(path.join(ROOT, 'jest.config.js')).href;
  config = ((await import(configUrl)) as { default: Record<string, unknown> }).default;
  cache = await tempDir('host-guard-cache-');
});
afterAll(() => cache.cleanup());

/** Runs jest on the fixture suites matching `name` in __tests__/fixtures/host-guard/, with the real config's guards. */
function childJest(name: string, env: Record<string, string> = {}) {
  const childConfig = {
    ...config,
    rootDir: ROOT,
    cacheDirectory: cache.dir,
    testMatch: [`<rootDir>/__tests__/fixtures/host-guard/${name}.fixture.ts`],
  };
  const res = spawnSync(
    process.execPath,
    [
      '--experimental-vm-modules',
      '--no-warnings',
      path.join(ROOT, 'node_modules', 'jest', 'bin', 'jest.js'),
      '--config',
      JSON.stringify(childConfig),
      '--maxWorkers=1',
    ],
    { cwd: ROOT, encoding: 'utf8', env: { ...process.env, ...env }, timeout: 120_000 },
  );
  return { status: res.status, output: `${res.stdout}\n${res.stderr}` };
}

/** The private run dirs of child runs inside this run's temp dir (each child must remove its own). */
const childRunDirs = () => readdirSync(os.tmpdir()).filter((n) => n.startsWith('toolbelt-test-run-'));

describe('the temp-dir checks', () => {
  it("fail the run naming each path a suite left in its temp dir (its own results kept), in the run's, and (strict) in the OS temp dir", () => {
    const { status, output } = childJest('leaves-files', { TOOLBELT_TEST_TMP_STRICT: '1' });
    // The child's OS temp dir is this suite's: the file the fixture put there is this suite's to remove.
    const inOsTmp = path.join(os.tmpdir(), 'in-the-os-temp-dir.txt');
    rmSync(inOsTmp);
    expect(status).not.toBe(0);
    // The suite's own results stand (its test passed); the run fails, naming the suite and each path.
    expect(output).toMatch(/Tests:\s+1 passed, 1 total/);
    const suite =
      /Got error running globalTeardown - [^\n]*reason: host guard: __tests__\/fixtures\/host-guard\/leaves-files\.fixture\.ts left (\d+) path\(s\) in its temp dir[^\n]*\n((?: {2}.*\n)+)/.exec(
        output,
      );
    expect(suite?.[2].split('\n').map((l) => l.trim().replace(/-\w{6}\b/, '-XXXXXX'))).toEqual([
      'forgotten-dir-XXXXXX',
      'forgotten-dir-XXXXXX/nested',
      'forgotten-dir-XXXXXX/nested/inner.txt',
      'forgotten-file.txt',
      '',
    ]);
    expect(suite?.[1]).toBe('4');
    const run = /\n\nThe test run left (\d+) path\(s\) in its temp dir[^\n]*\n {2}(\S+)\n/.exec(output);
    expect(run?.slice(1)).toEqual(['1', 'outside-the-suite-dir.txt']);
    expect(output).toContain(`1 new entry appeared in ${os.tmpdir()} during the run`);
    expect(output).toContain(`\n  ${inOsTmp}`);
    expect(childRunDirs()).toEqual([]);
  });
});

describe('the environment the suites see', () => {
  it('a run started with the package variables set passes a suite asserting it sees none of them', () => {
    const { status, output } = childJest('env-blind', {
      AGENT_WORKSPACE_ROOT: '/',
      TOOLBELT_ALLOW_PRIVATE_NETWORK: '1',
      TOOLBELT_OUTPUT_DIR: '/',
      OPENAI_API_KEY: 'sk-host',
      SEARXNG_URL: 'http://127.0.0.1:9',
    });
    expect(output).toMatch(/Tests:\s+2 passed, 2 total/);
    expect(output).toContain(
      "host guard: cleared the host's AGENT_WORKSPACE_ROOT, OPENAI_API_KEY, SEARXNG_URL, TOOLBELT_ALLOW_PRIVATE_NETWORK, TOOLBELT_OUTPUT_DIR for this run",
    );
    expect(status).toBe(0);
    expect(childRunDirs()).toEqual([]);
  });
});
