/**
 * The sandbox engine missing, broken and hanging (PATH scrubbed of bwrap, or a fake `bwrap` that
 * fails, hangs, or passes the probe and then fails), the modes (`off` default, `auto` falls back and
 * says so once, `required` refuses with the install command), `initCtx.sandbox`, what bash's
 * description says, the proxy's allowlist, and the policy file's `"sandbox"` key and its schema.
 */
import { describe, it, expect, beforeAll, afterAll, afterEach } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { chmod, mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createRegistry, registerBuiltinTools, type ToolRegistryType } from '../../src/index.js';
import type { ToolEvent } from '../../src/pipeline/types.js';
import type { SandboxOptions } from '../../src/sandbox/types.js';
import { SANDBOX_PROBE_TIMEOUT_MS } from '../../src/sandbox/runtime.js';
import { hostAllowed } from '../../src/sandbox/proxy.js';
import { findHiddenPaths, SECRET_SCAN_HOME_DEPTH } from '../../src/sandbox/secrets.js';
import { explainRefusals, MAX_SANDBOX_EXPLANATIONS } from '../../src/sandbox/explain.js';
import { policyProblems } from '../../src/policy/rules.js';
import { tempDir } from '../support/helpers.js';

const hasBwrap = spawnSync('bwrap', ['--version']).status === 0;
if (!hasBwrap && process.env.CI) throw new Error('CI must run the sandbox engine suite: install bubblewrap.');
if (!hasBwrap)
  console.warn('sandbox-engine.test.ts: the tests that need a working bwrap are skipped: bwrap is not installed.');
const withBwrap = hasBwrap ? it : it.skip;

let base: Awaited<ReturnType<typeof tempDir>>;
let ws: string;
let noBwrapPath: string;
const originalPath = process.env.PATH;
const registries: ToolRegistryType[] = [];

beforeAll(async () => {
  base = await tempDir('sandbox-engine-');
  ws = path.join(base.dir, 'ws');
  await mkdir(ws);
  // PATH without bwrap: one directory of links to every other executable on the real PATH.
  noBwrapPath = path.join(base.dir, 'path-without-bwrap');
  await mkdir(noBwrapPath);
  const seen = new Set<string>();
  for (const dir of (originalPath ?? '').split(':')) {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      continue;
    }
    for (const name of names) {
      if (name === 'bwrap' || seen.has(name)) continue;
      seen.add(name);
      await symlink(path.join(dir, name), path.join(noBwrapPath, name));
    }
  }
});

afterEach(async () => {
  process.env.PATH = originalPath;
  await Promise.all(registries.splice(0).map((r) => r.dispose()));
});

afterAll(() => base.cleanup());

/** A PATH whose `bwrap` is the given shell script (and everything else as before). */
async function fakeBwrap(name: string, script: string): Promise<string> {
  const dir = path.join(base.dir, name);
  await mkdir(dir);
  await writeFile(path.join(dir, 'bwrap'), `#!/bin/sh\n${script}\n`);
  await chmod(path.join(dir, 'bwrap'), 0o755);
  return `${dir}:${noBwrapPath}`;
}

function registryWith(sandbox: SandboxOptions | undefined) {
  const r = registerBuiltinTools(createRegistry({ sandbox }));
  const events: ToolEvent[] = [];
  r.subscribe((e) => events.push(e));
  registries.push(r);
  return { registry: r, sandboxEvents: () => events.filter((e) => e.type === 'sandbox') };
}

const run = (r: ToolRegistryType, command: string, initCtx: object = { workspaceRoot: ws }) =>
  r.execute('bash', { command, description: 'engine test' }, {}, initCtx);

describe('without bwrap on PATH', () => {
  it('auto runs commands uncontained, says why once (event and description), and names the package', async () => {
    process.env.PATH = noBwrapPath;
    const { registry, sandboxEvents } = registryWith({ mode: 'auto' });
    const first = await run(registry, 'echo hello');
    const second = await run(registry, 'echo again');
    expect([first.result.output, first.result.metadata.sandboxed]).toEqual(['hello\n', false]);
    expect(second.result.output).toBe('again\n');
    const events = sandboxEvents();
    expect(events).toHaveLength(1);
    const status = events[0].sandbox;
    expect(status).toMatchObject({ mode: 'auto', enabled: false, engine: null });
    expect(status.reason).toBe(
      "No sandbox: bubblewrap (`bwrap`) was not found on PATH, so commands run uncontained with the host user's rights; install the bubblewrap package (Debian/Ubuntu: `sudo apt-get install bubblewrap`; Fedora: `sudo dnf install bubblewrap`) to contain them.",
    );
    const bash = await registry.initialized('bash', { workspaceRoot: ws });
    expect(bash.description).toContain("No OS sandbox: commands run with the host user's full rights");
  });

  it('required refuses to run bash, naming the package and the command that installs it', async () => {
    process.env.PATH = noBwrapPath;
    const { registry } = registryWith({ mode: 'required' });
    await writeFile(path.join(ws, 'untouched'), 'before');
    const res = await run(registry, 'echo changed > untouched');
    expect(res.success).toBe(false);
    expect(res.result.output).toContain(
      'The command was not run. The sandbox is required but cannot run: bubblewrap (`bwrap`) was not found on PATH; install the bubblewrap package (Debian/Ubuntu: `sudo apt-get install bubblewrap`',
    );
    expect(readFileSync(path.join(ws, 'untouched'), 'utf8')).toBe('before');
    // grep's rg is held to the same mode.
    const grep = await registry.execute(
      'grep',
      { pattern: 'before' },
      {},
      { workspaceRoot: ws, rgPath: '/usr/bin/rg' },
    );
    expect(grep.success).toBe(false);
    expect(grep.result.output).toContain('bubblewrap (`bwrap`) was not found on PATH');
  });
});

describe('a broken bwrap', () => {
  it('one that fails: auto falls back and quotes its error; required refuses', async () => {
    process.env.PATH = await fakeBwrap('failing', 'echo "bwrap: setting up uid map: Permission denied" >&2; exit 1');
    const auto = registryWith({ mode: 'auto' });
    const res = await run(auto.registry, 'echo still runs');
    expect([res.result.output, res.result.metadata.sandboxed]).toEqual(['still runs\n', false]);
    expect(await auto.registry.sandboxStatus()).toMatchObject({ enabled: false });
    expect((await auto.registry.sandboxStatus()).reason).toContain(
      'failed a trivial command (bwrap: setting up uid map: Permission denied)',
    );
    const required = registryWith({ mode: 'required' });
    const refused = await run(required.registry, 'echo must not run');
    expect(refused.success).toBe(false);
    expect(refused.result.output).toContain('The sandbox is required but cannot run');
  });

  it(`one that hangs: the probe gives up after SANDBOX_PROBE_TIMEOUT_MS (${SANDBOX_PROBE_TIMEOUT_MS} ms) and leaves nothing running`, async () => {
    process.env.PATH = await fakeBwrap('hanging', 'exec sleep 31341');
    const { registry } = registryWith({ mode: 'auto' });
    const res = await run(registry, 'echo after the hang');
    expect([res.result.output, res.result.metadata.sandboxed]).toEqual(['after the hang\n', false]);
    expect((await registry.sandboxStatus()).reason).toContain(
      `did not finish a trivial command within ${SANDBOX_PROBE_TIMEOUT_MS} ms (the engine hangs)`,
    );
    const left = readdirSync('/proc').filter((p) => {
      try {
        return /^\d+$/.test(p) && readFileSync(`/proc/${p}/cmdline`, 'utf8').includes('31341');
      } catch {
        return false;
      }
    });
    expect(left).toEqual([]);
  }, 20_000);

  it('one that passes the probe and then fails: the command fails, it never runs uncontained', async () => {
    process.env.PATH = await fakeBwrap(
      'fails-later',
      'for last; do :; done; [ "$last" = "exit 0" ] && exit 0; echo "bwrap: Can\'t mount proc on /newroot/proc: Operation not permitted" >&2; exit 1',
    );
    const { registry } = registryWith({ mode: 'auto' });
    await writeFile(path.join(ws, 'kept'), 'before');
    const res = await run(registry, 'echo changed > kept');
    expect(res.result.metadata).toMatchObject({ sandboxed: true, exitCode: 1 });
    expect(res.result.output).toContain("bwrap: Can't mount proc");
    expect(readFileSync(path.join(ws, 'kept'), 'utf8')).toBe('before');
  });
});

describe('modes and options', () => {
  it('off is the library default: no probe, no containment, and the description says so', async () => {
    process.env.PATH = await fakeBwrap('never-called', `touch ${base.dir}/probed; exit 1`);
    const { registry } = registryWith(undefined);
    const res = await run(registry, 'echo plain');
    expect([res.result.output, res.result.metadata.sandboxed]).toEqual(['plain\n', false]);
    expect(readdirSync(base.dir)).not.toContain('probed');
    expect((await registry.sandboxStatus()).reason).toContain('sandbox.mode "off"');
  });

  withBwrap('initCtx.sandbox turns it on for one init context, and the description says what it contains', async () => {
    const { registry } = registryWith({ mode: 'off' });
    const on = {
      workspaceRoot: ws,
      sandbox: { mode: 'required' as const, network: { allowedDomains: ['example.com'] } },
    };
    const res = await run(registry, 'echo x > /etc/toolbelt-never', on);
    expect(res.result.metadata.sandboxed).toBe(true);
    expect(res.result.output).toContain('Read-only file system');
    const bash = await registry.initialized('bash', on);
    expect(bash.description).toContain('The OS sandbox is on: commands can write only inside the workspace');
    expect(bash.description).toContain('the network reaches only the allowed hosts through an HTTP(S) proxy');
    const plain = await run(registry, 'echo $0');
    expect(plain.result.metadata.sandboxed).toBe(false);
  });
});

describe('limits', () => {
  it(`SECRET_SCAN_HOME_DEPTH (${SECRET_SCAN_HOME_DEPTH}): a secret that deep in the home directory is hidden, one level deeper is not scanned`, async () => {
    const home = path.join(base.dir, 'depth-home');
    const at = path.join(home, ...Array.from({ length: SECRET_SCAN_HOME_DEPTH - 1 }, (_, i) => `d${i}`));
    await mkdir(path.join(at, 'deeper'), { recursive: true });
    await writeFile(path.join(at, 'at-edge.pem'), 'x');
    await writeFile(path.join(at, 'deeper', 'past-edge.pem'), 'x');
    const found = await findHiddenPaths({ roots: [], home, denyRead: [] });
    expect(found.files).toEqual([path.join(at, 'at-edge.pem')]);
  });

  it(`MAX_SANDBOX_EXPLANATIONS (${MAX_SANDBOX_EXPLANATIONS}): at most that many sentences however many refusals`, () => {
    const lines = (n: number) =>
      Array.from({ length: n }, (_, i) => `touch: cannot touch '/etc/f${i}': Read-only file system`).join('\n');
    const cx = { cwd: '/w', writable: ['/w'], hidden: { files: [], dirs: [] }, allowedDomains: [] };
    expect(explainRefusals(lines(MAX_SANDBOX_EXPLANATIONS), cx)).toHaveLength(MAX_SANDBOX_EXPLANATIONS);
    expect(explainRefusals(lines(MAX_SANDBOX_EXPLANATIONS + 1), cx)).toHaveLength(MAX_SANDBOX_EXPLANATIONS);
    expect(explainRefusals(lines(MAX_SANDBOX_EXPLANATIONS + 1), cx)[0]).toBe(
      '/etc/f0 is outside the workspace: the sandbox allows writes only to /w and a private /tmp (emptied when the command ends). Write inside the workspace instead, or ask the user to add the directory to sandbox.filesystem.allowWrite.',
    );
  });
});

describe('the proxy allowlist', () => {
  it('matches names, *.wildcards and host:port, nothing else', () => {
    const allowed = ['example.com', '*.github.com', '127.0.0.1:8080'];
    expect(hostAllowed(allowed, 'example.com', 443)).toBe(true);
    expect(hostAllowed(allowed, 'EXAMPLE.com', 80)).toBe(true);
    expect(hostAllowed(allowed, 'sub.example.com', 443)).toBe(false);
    expect(hostAllowed(allowed, 'api.github.com', 443)).toBe(true);
    expect(hostAllowed(allowed, 'github.com', 443)).toBe(false);
    expect(hostAllowed(allowed, 'evilgithub.com', 443)).toBe(false);
    expect(hostAllowed(allowed, '127.0.0.1', 8080)).toBe(true);
    expect(hostAllowed(allowed, '127.0.0.1', 8081)).toBe(false);
    expect(hostAllowed([], 'example.com', 443)).toBe(false);
  });
});

describe('the "sandbox" key of toolbelt.policy.json', () => {
  const cases: Array<[unknown, boolean]> = [
    [{ rules: [], sandbox: { mode: 'required' } }, true],
    [
      {
        rules: [],
        sandbox: {
          mode: 'auto',
          filesystem: { allowWrite: ['/var/cache/build'], denyRead: ['~/.secrets', '*.token'], home: '/home/me' },
          network: { allowedDomains: ['registry.npmjs.org'] },
          autoAllow: true,
        },
      },
      true,
    ],
    [{ rules: [], sandbox: { mode: 'sometimes' } }, false],
    [{ rules: [], sandbox: { filesystem: { allowWrite: '/tmp' } } }, false],
    [{ rules: [], sandbox: { network: { allowedDomains: [''] } } }, false],
    [{ rules: [], sandbox: { colour: 'red' } }, false],
    [{ rules: [], sandbox: { autoAllow: 'yes' } }, false],
    [{ rules: [], sandbox: 'on' }, false],
  ];

  it('is validated with the policy, naming the field', () => {
    for (const [value, ok] of cases)
      expect([JSON.stringify(value), policyProblems(value).length === 0]).toEqual([JSON.stringify(value), ok]);
    expect(policyProblems({ rules: [], sandbox: { mode: 'sometimes' } })).toEqual([
      { path: 'sandbox.mode', message: '"sometimes" is not a mode; use one of auto, required, off' },
    ]);
  });

  it('and the shipped JSON Schema agrees', async () => {
    const { default: Ajv } = (await import('ajv')) as unknown as {
      default: new (o: object) => { compile(s: object): (v: unknown) => boolean };
    };
    const schema = JSON.parse(readFileSync(path.join(process.cwd(), 'docs', 'toolbelt.policy.schema.json'), 'utf8'));
    const validate = new Ajv({ strict: false }).compile(schema);
    for (const [value, ok] of cases)
      expect([JSON.stringify(value), validate(value)]).toEqual([JSON.stringify(value), ok]);
  });
});
