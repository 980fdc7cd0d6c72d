/**
 * The CLI's sandbox: `--sandbox auto|required|off` (default auto), the policy file's `"sandbox"`
 * key, one stderr line when auto finds no engine (PATH scrubbed of bwrap), `list --json`'s
 * `sandbox` field, and a refused write reaching the output with its explanation (real bubblewrap).
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ensureDist, CLI } from '../support/dist.js';
import { tempDir } from '../support/helpers.js';

const works = spawnSync('bwrap', ['--ro-bind', '/', '/', '--unshare-all', '--', '/bin/true']).status === 0;
if (!works && process.env.CI) throw new Error('CI must run the sandbox CLI suite: install bubblewrap.');
if (!works)
  console.warn('sandbox-cli.test.ts: the tests that need a working bwrap are skipped: bwrap cannot run here.');
const withBwrap = works ? it : it.skip;

let base: Awaited<ReturnType<typeof tempDir>>;
let ws: string;
let noBwrapPath: string;

function toolbelt(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd: ws,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: base.dir, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

beforeAll(async () => {
  await ensureDist();
  base = await tempDir('sandbox-cli-');
  ws = path.join(base.dir, 'ws');
  await mkdir(ws);
  noBwrapPath = path.join(base.dir, 'path');
  await mkdir(noBwrapPath);
  const seen = new Set<string>();
  for (const dir of (process.env.PATH ?? '').split(':')) {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      continue;
    }
    for (const n of names)
      if (n !== 'bwrap' && !seen.has(n) && seen.add(n)) await symlink(path.join(dir, n), path.join(noBwrapPath, n));
  }
}, 180_000);

afterAll(() => base.cleanup());

const bashArgs = (command: string) => ['run', 'bash', JSON.stringify({ command, description: 'cli sandbox test' })];

describe('toolbelt --sandbox', () => {
  it('refuses an unknown mode with the modes it takes', async () => {
    const r = await toolbelt(['list', '--sandbox', 'sometimes']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--sandbox "sometimes" is not a mode. Use one of auto, required, off.');
  });

  withBwrap('auto is the default: a write outside the workspace is refused and explained', async () => {
    // The default policy would deny this write before bash ran (it writes outside the workspace):
    // --no-policy leaves the sandbox as the only guard, which is what this test is about.
    const r = await toolbelt([...bashArgs('echo x > /etc/toolbelt-cli-probe'), '--no-policy']);
    // A non-zero exit is the command's result, not a failed call.
    expect(r.stdout).toContain('[exit code 1]');
    expect(r.stdout).toContain('Read-only file system');
    expect(r.stdout).toContain(
      '[sandbox: /etc/toolbelt-cli-probe is outside the workspace: the sandbox allows writes only to',
    );
    expect(r.stderr).not.toContain('No sandbox');
  });

  it('auto without bwrap runs the command and says why on stderr, in one line', async () => {
    const r = await toolbelt(bashArgs('echo uncontained'), { PATH: noBwrapPath });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('uncontained');
    const lines = r.stderr.split('\n').filter((l) => l.startsWith('toolbelt:'));
    expect(lines).toEqual([
      "toolbelt: No sandbox: bubblewrap (`bwrap`) was not found on PATH, so commands run uncontained with the host user's rights; install the bubblewrap package (Debian/Ubuntu: `sudo apt-get install bubblewrap`; Fedora: `sudo dnf install bubblewrap`) to contain them.",
    ]);
  });

  it('list --json gives bash and grep a sandbox field with the reason', async () => {
    const r = await toolbelt(['list', '--json'], { PATH: noBwrapPath });
    const tools = JSON.parse(r.stdout) as Array<{ name: string; sandbox?: { enabled: boolean; reason: string } }>;
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    expect(byName.bash.sandbox).toMatchObject({ mode: 'auto', enabled: false });
    expect(byName.bash.sandbox!.reason).toContain('bubblewrap (`bwrap`) was not found on PATH');
    expect(byName.grep.sandbox).toEqual(byName.bash.sandbox);
    expect(byName.read.sandbox).toBeUndefined();
  });

  it('the policy file\'s "sandbox" asks for required; --sandbox off overrides its mode', async () => {
    await writeFile(
      path.join(ws, 'toolbelt.policy.json'),
      JSON.stringify({ rules: [], sandbox: { mode: 'required' } }),
    );
    try {
      const refused = await toolbelt(bashArgs('echo never'), { PATH: noBwrapPath });
      expect(refused.code).toBe(1);
      expect(refused.stdout + refused.stderr).toContain(
        'The command was not run. The sandbox is required but cannot run',
      );
      expect(refused.stdout).not.toContain('never\n');
      const off = await toolbelt([...bashArgs('echo allowed'), '--sandbox', 'off'], { PATH: noBwrapPath });
      expect([off.code, off.stdout.trim()]).toEqual([0, 'allowed']);
    } finally {
      await writeFile(path.join(ws, 'toolbelt.policy.json'), JSON.stringify({ rules: [] }));
    }
  });
});
