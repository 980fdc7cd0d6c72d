/**
 * SANDBOX_TMP_BYTES with the real bubblewrap: a contained command may fill its private /tmp up to
 * exactly the limit, and one byte past it fails with the system's "No space left on device"
 * followed by a sentence saying what the limit is and where to write instead.
 * Skips (saying why) only where bwrap cannot run; CI installs it, and there a missing bwrap fails.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { createRegistry, registerBuiltinTools, type ToolRegistryType } from '../../src/index.js';
import { SANDBOX_TMP_BYTES } from '../../src/constants.js';
import { tempDir } from '../support/helpers.js';

const works =
  spawnSync('bwrap', ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--unshare-all', '--', '/bin/true'])
    .status === 0;
if (!works && process.env.CI) throw new Error('CI must run the sandbox /tmp suite: install bubblewrap.');
if (!works) console.warn('sandbox-tmp.test.ts skipped: bwrap cannot run here. Install bubblewrap to run it.');
const suite = works ? describe : describe.skip;

suite('SANDBOX_TMP_BYTES: the private /tmp of a contained command (real bubblewrap)', () => {
  let base: Awaited<ReturnType<typeof tempDir>>;
  let ws: string;
  let registry: ToolRegistryType;

  beforeAll(async () => {
    base = await tempDir('sandbox-tmp-');
    ws = path.join(base.dir, 'ws');
    await mkdir(ws);
    await mkdir(path.join(base.dir, 'home'));
    registry = registerBuiltinTools(
      createRegistry({ sandbox: { mode: 'required', filesystem: { home: path.join(base.dir, 'home') } } }),
      ['bash'],
    );
  });
  afterAll(async () => {
    await registry.dispose();
    await base.cleanup();
  });

  const bash = (command: string) =>
    registry.execute('bash', { command, description: 'fill /tmp' }, {}, { workspaceRoot: ws });

  it(`a file of exactly ${SANDBOX_TMP_BYTES} bytes fits in /tmp`, async () => {
    const r = await bash(`head -c ${SANDBOX_TMP_BYTES} /dev/zero > /tmp/edge && stat -c %s /tmp/edge`);
    expect([r.error, r.result.output.trim()]).toEqual([undefined, String(SANDBOX_TMP_BYTES)]);
  }, 120_000);

  it('one byte more fails with a sentence naming the limit and where to write instead', async () => {
    const r = await bash(`head -c ${SANDBOX_TMP_BYTES + 1} /dev/zero > /tmp/past`);
    expect(r.result.metadata.exitCode).toBe(1);
    expect(r.result.output).toContain('No space left on device');
    expect(r.result.output).toContain(
      `[sandbox: "No space left on device": inside the sandbox /tmp is a private memory-backed tmpfs of ${SANDBOX_TMP_BYTES / 1024 / 1024} MiB (SANDBOX_TMP_BYTES), emptied when the command ends, and the command wrote past it`,
    );
    expect(r.result.output).toContain('Write large files inside the workspace instead of /tmp.');
  }, 120_000);
});
