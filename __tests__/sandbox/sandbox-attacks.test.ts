/**
 * Issue 31's attacks on the OS sandbox, each class with its variants, against the real bubblewrap
 * and socat: a hidden secret moved by a contained command (renamed, moved into node_modules or .git,
 * hard-linked, an ancestor renamed) never becomes readable; credential variables (by name, and URL
 * credentials in any value) never enter; the proxy judges the address it connects to (loopback,
 * private, mapped forms, a wildcard name, a trailing dot, a second lookup); code the host runs later
 * (git config and hooks, .envrc, editor folders) cannot be planted, while git keeps working; a
 * command's writes to its private /tmp under a host path are said in one line.
 * Skips (saying why) only where bwrap cannot run; CI installs it, and there a missing bwrap fails.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { link, mkdir, rename, writeFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { createRegistry, registerBuiltinTools, type ToolRegistryType } from '../../src/index.js';
import type { SandboxOptions } from '../../src/sandbox/types.js';
import { FilteringProxy } from '../../src/sandbox/proxy.js';
import { closeServer, listenLoopback, tempDir } from '../support/helpers.js';

function bwrapProblem(): string | undefined {
  const r = spawnSync('bwrap', ['--ro-bind', '/', '/', '--dev', '/dev', '--unshare-all', '--', '/bin/true'], {
    encoding: 'utf8',
  });
  if (r.error) return `bwrap is not installed (${r.error.message})`;
  if (r.status !== 0) return `bwrap cannot run here: ${r.stderr.trim()}`;
  return spawnSync('socat', ['-V']).error ? 'socat is not installed' : undefined;
}
const problem = bwrapProblem();
if (problem && process.env.CI) throw new Error(`CI must run the sandbox attack suite, but ${problem}.`);
if (problem) console.warn(`sandbox-attacks.test.ts skipped: ${problem}. Install bubblewrap and socat to run it.`);
const suite = problem ? describe.skip : describe;

const SECRET = 'DECOY-MOVED-SECRET-4d2c';
const DEEP = 'DECOY-DEEP-KEY-8e1f';

/** A registry whose bash runs in the sandbox (mode required) with `home` as its home, plus `extra` options. */
function contained(home: string, extra: SandboxOptions = {}): ToolRegistryType {
  const sandbox: SandboxOptions = {
    ...extra,
    mode: 'required',
    filesystem: { ...extra.filesystem, home },
  };
  return registerBuiltinTools(createRegistry({ sandbox }), ['bash']);
}

async function run(reg: ToolRegistryType, ws: string, command: string) {
  const r = await reg.execute('bash', { command, description: 'attack' }, {}, { workspaceRoot: ws });
  return { output: r.result.output, exitCode: r.result.metadata.exitCode as number | null, success: r.success };
}

function sha(file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}

suite('hiding follows the file: a hidden secret moved by a contained command stays unreadable', () => {
  let base: Awaited<ReturnType<typeof tempDir>>;
  let ws: string;
  let reg: ToolRegistryType;

  beforeAll(async () => {
    base = await tempDir('sandbox-move-');
    ws = path.join(base.dir, 'ws');
    await mkdir(path.join(ws, 'config'), { recursive: true });
    await mkdir(path.join(ws, 'a/b/c'), { recursive: true });
    await mkdir(path.join(ws, 'node_modules/pkg'), { recursive: true });
    await mkdir(path.join(base.dir, 'home'));
    await writeFile(path.join(ws, 'config/.env'), `TOKEN=${SECRET}\n`);
    await writeFile(path.join(ws, 'a/b/c/server.key'), DEEP);
    await writeFile(path.join(ws, 'config/app.json'), '{}\n');
    reg = contained(path.join(base.dir, 'home'));
  });
  afterAll(async () => {
    await reg.dispose();
    await base.cleanup();
  });

  // Each move is followed by commands that read wherever the file could have gone.
  const moves: Array<[string, string]> = [
    ['rename the directory', 'mv config renamed'],
    ['rename the file', 'mv config/.env config/plain.txt'],
    ['move the directory into node_modules', 'mv config node_modules/config'],
    ['move the file into node_modules', 'mv config/.env node_modules/pkg/settings'],
    ['move the directory into .git', 'mkdir -p .git && mv config .git/config-moved'],
    ['rename an ancestor two levels up', 'mv a z'],
    ['rename the parent of the deep key', 'mv a/b/c a/b/d'],
    ['hard link the file', 'ln config/.env hardlink.txt'],
    ['hard link tree copy', 'cp -al config linked-copy'],
    ['python os.rename', `python3 -c "import os; os.rename('config', 'py-renamed')"`],
    ['rename in a new user namespace', 'unshare -Urm sh -c "mv config ns-renamed"'],
    ['remove the directory and recreate it', 'rm -rf config; mkdir -p config && echo replaced > config/.env'],
    ['symlink to the file', 'ln -s config/.env link.txt'],
  ];

  it(`${moves.length} ways to move a hidden file, then reading every file in the workspace: the secret never shows`, async () => {
    const leaks: string[] = [];
    for (const [name, move] of moves) {
      const moved = await run(reg, ws, `${move}; true`);
      // A fresh command each time (a new namespace, and the scan looked again when its TTL allows).
      const sweep = await run(
        reg,
        ws,
        'find . -xdev \\( -type f -o -type l \\) -exec cat {} + 2>/dev/null; cat node_modules/pkg/settings 2>/dev/null; true',
      );
      for (const out of [moved.output, sweep.output])
        if (out.includes(SECRET) || out.includes(DEEP)) leaks.push(`${name}: ${out.slice(0, 200)}`);
    }
    expect(leaks).toEqual([]);
    // On the host the files are where they were, unchanged.
    expect(readFileSync(path.join(ws, 'config/.env'), 'utf8')).toBe(`TOKEN=${SECRET}\n`);
    expect(readFileSync(path.join(ws, 'a/b/c/server.key'), 'utf8')).toBe(DEEP);
  }, 120_000);

  it('a refused move says why, naming what the sandbox keeps in place', async () => {
    const r = await run(reg, ws, 'mv config renamed');
    expect(r.exitCode).not.toBe(0);
    expect(r.output).toContain('Device or resource busy');
    expect(r.output).toContain(
      `[sandbox: ${ws}/config cannot be moved or removed inside the sandbox: it is or holds ${ws}/config/.env, which the sandbox hides or protects`,
    );
    // Other files in the same directory stay writable, and other directories movable.
    const ok = await run(reg, ws, 'echo 1 > config/new.txt && mkdir free && mv free free2 && cat config/new.txt');
    expect([ok.exitCode, ok.output]).toEqual([0, '1\n']);
  });
  it('a secret moved on the host (by a file tool or the user) is hidden at its new path by the next command; a hard link the host made is hidden too', async () => {
    await mkdir(path.join(ws, 'host-moved'));
    await writeFile(path.join(ws, 'host-moved/.env.prod'), SECRET);
    await mkdir(path.join(ws, 'linked'));
    await writeFile(path.join(ws, 'linked/.env'), DEEP);
    await link(path.join(ws, 'linked/.env'), path.join(ws, 'linked/notes.txt'));
    // A registry of its own: its first scan sees these files.
    const fresh = contained(path.join(base.dir, 'home'));
    try {
      const first = await run(fresh, ws, 'cat host-moved/.env.prod linked/notes.txt; true');
      await rename(path.join(ws, 'host-moved'), path.join(ws, 'host-renamed'));
      const after = await run(fresh, ws, 'cat host-renamed/.env.prod; true');
      expect([first.output, after.output].join('\n')).not.toMatch(/DECOY-/);
      expect(after.output).toContain('Permission denied');
    } finally {
      await fresh.dispose();
    }
  });

  it('filesystem.allowWrite takes ~/ paths under the sandbox home', async () => {
    await mkdir(path.join(base.dir, 'home/.cache-x'), { recursive: true });
    const withCache = contained(path.join(base.dir, 'home'), { filesystem: { allowWrite: ['~/.cache-x'] } });
    try {
      const r = await run(withCache, ws, 'echo cached > ~/.cache-x/entry');
      expect(r.exitCode).toBe(0);
      expect(readFileSync(path.join(base.dir, 'home/.cache-x/entry'), 'utf8')).toBe('cached\n');
    } finally {
      await withCache.dispose();
    }
  });
});

suite('credential variables never enter', () => {
  let base: Awaited<ReturnType<typeof tempDir>>;
  let reg: ToolRegistryType;
  const vars: Record<string, string> = {
    PGPASSWORD: 'DECOY-PG-1',
    GITHUB_AUTHTOKEN: 'DECOY-GH-2',
    MY_SECRET_VALUE: 'DECOY-SECRET-3',
    npm_config__authToken: 'DECOY-NPM-4',
    AWS_ACCESS_KEY_ID: 'DECOY-AWS-5',
    SERVICE_APIKEY: 'DECOY-APIKEY-6',
    TOOLBELT_STORE_URL: 'postgres://toolbelt:DECOY-STORE-7@db.internal:5432/tools',
    DATABASE_DSN: 'mysql://root:DECOY-MYSQL-8@127.0.0.1/app?ssl=true',
    MIRRORS: 'https://DECOY-TOKEN-9@git.example.com/a.git https://u:DECOY-PASS-10@b.example.com/',
    GIT_AUTHOR_NAME: 'Kept Author',
    PLAIN_URL: 'https://example.com/path@v1',
  };

  beforeAll(async () => {
    base = await tempDir('sandbox-env-');
    await mkdir(path.join(base.dir, 'home'));
    Object.assign(process.env, vars);
    reg = contained(path.join(base.dir, 'home'));
  });
  afterAll(async () => {
    for (const k of Object.keys(vars)) delete process.env[k];
    await reg.dispose();
    await base.cleanup();
  });

  it('by name (PGPASSWORD, *_AUTH*, ...) and by URL credentials in any value; the rest of the value and other variables stay', async () => {
    const r = await run(reg, base.dir, 'env');
    expect(r.output.match(/DECOY-[A-Z]+-\d+/g) ?? []).toEqual([]);
    expect(r.output).toContain('TOOLBELT_STORE_URL=postgres://db.internal:5432/tools\n');
    expect(r.output).toContain('DATABASE_DSN=mysql://127.0.0.1/app?ssl=true\n');
    expect(r.output).toContain('MIRRORS=https://git.example.com/a.git https://b.example.com/\n');
    expect(r.output).toContain('GIT_AUTHOR_NAME=Kept Author\n');
    expect(r.output).toContain('PLAIN_URL=https://example.com/path@v1\n');
  });
});

suite('the proxy judges the address it connects to', () => {
  let base: Awaited<ReturnType<typeof tempDir>>;
  let server: http.Server;
  let port: number;
  let hits = 0;

  beforeAll(async () => {
    base = await tempDir('sandbox-proxy-');
    await mkdir(path.join(base.dir, 'home'));
    server = http.createServer((_q, r) => {
      hits++;
      r.end('host loopback service reached\n');
    });
    port = Number(new URL(await listenLoopback(server)).port);
  });
  afterAll(async () => {
    await closeServer(server);
    await base.cleanup();
  });

  it('in the sandbox: names and spellings of the loopback, allowed by name, are refused over HTTP and CONNECT', async () => {
    const hosts = [
      'localhost',
      'localhost.',
      'LOCALHOST',
      '127.0.0.1',
      '127.1.2.3',
      '[::1]',
      '[::ffff:127.0.0.1]',
      '0.0.0.0',
    ];
    const reg = contained(path.join(base.dir, 'home'), {
      network: { allowedDomains: hosts.map((h) => `${h.replace(/\.$/, '')}:${port}`).concat(`localhost.:${port}`) },
    });
    try {
      const outputs: string[] = [];
      for (const h of hosts) {
        const url = `http://${h}:${port}/`;
        outputs.push(
          (await run(reg, base.dir, `curl -sS --max-time 10 ${url}; curl -sS --max-time 10 -p ${url}`)).output,
        );
      }
      expect(hits).toBe(0);
      expect(outputs.join('\n')).not.toContain('host loopback service reached');
      expect(outputs[0]).toContain(
        `The sandbox refused a connection to localhost:${port}: localhost resolved to 127.0.0.1, which is a loopback address (127.0.0.0/8)`,
      );
      expect(outputs[0]).toContain('sandbox.network.allowAddresses');
    } finally {
      await reg.dispose();
    }
  }, 60_000);

  it('in the sandbox: network.allowAddresses opens the range on purpose', async () => {
    const reg = contained(path.join(base.dir, 'home'), {
      network: { allowedDomains: [`localhost:${port}`], allowAddresses: ['127.0.0.0/8', '::1'] },
    });
    try {
      const before = hits;
      const r = await run(reg, base.dir, `curl -sS --max-time 10 http://localhost:${port}/`);
      expect(r.output).toBe('host loopback service reached\n');
      expect(hits).toBe(before + 1);
    } finally {
      await reg.dispose();
      hits = 0;
    }
  });

  /** A request through the proxy's unix socket: plain HTTP (absolute URL) or a CONNECT. */
  function viaProxy(socketPath: string, host: string, how: 'http' | 'connect'): Promise<string> {
    return new Promise((resolve) => {
      const req = http.request(
        how === 'http'
          ? { socketPath, method: 'GET', path: `http://${host}:${port}/`, headers: { host: `${host}:${port}` } }
          : { socketPath, method: 'CONNECT', path: `${host}:${port}` },
      );
      req.on('response', (res) => {
        let body = `${res.statusCode} `;
        res.setEncoding('utf8').on('data', (d: string) => (body += d));
        res.on('end', () => resolve(body));
      });
      req.on('connect', (res, socket) => {
        socket.destroy();
        resolve(`${res.statusCode} tunnel`);
      });
      req.on('error', (e) => resolve(`error ${e.message}`));
      req.end();
    });
  }

  it('wildcard-allowed names resolving to loopback, private, link-local, mapped and unspecified addresses are refused; one lookup, to the address checked', async () => {
    const answers: Record<string, string[]> = {
      'a.allowed.test': ['127.0.0.1'],
      'b.allowed.test': ['10.1.2.3'],
      'c.allowed.test': ['::1'],
      'd.allowed.test': ['::ffff:127.0.0.1'],
      'e.allowed.test': ['169.254.169.254'],
      'f.allowed.test': ['0.0.0.0'],
      'g.allowed.test': ['192.168.1.1', '172.16.0.1'],
      'h.allowed.test': ['fd00::1'],
      'i.allowed.test': ['::ffff:a01:203'],
    };
    let lookups = 0;
    const socketPath = path.join(base.dir, 'p1.sock');
    const proxy = await FilteringProxy.start(socketPath, ['*.allowed.test', `localhost:${port}`], [], (name) => {
      lookups++;
      // `localhost` answers a public address here: connecting by name (a second, system lookup) would reach the loopback.
      if (name === 'localhost') return Promise.resolve([{ address: '192.0.2.1', family: 4 }]);
      const list = answers[name.replace(/\.$/, '')];
      return list
        ? Promise.resolve(list.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })))
        : Promise.reject(new Error(`ENOTFOUND ${name}`));
    });
    try {
      const results: string[] = [];
      for (const name of Object.keys(answers))
        for (const spelled of [name, `${name}.`, name.toUpperCase()])
          for (const how of ['http', 'connect'] as const)
            results.push(`${spelled} ${how}: ${await viaProxy(socketPath, spelled, how)}`);
      expect(results.filter((r) => !/: 403 /.test(r))).toEqual([]);
      expect(results[0]).toContain('a.allowed.test resolved to 127.0.0.1, which is a loopback address');
      expect(lookups).toBe(results.length);
      // 192.0.2.1 is documentation space (refused too); what matters is that the loopback was never reached.
      lookups = 0;
      await viaProxy(socketPath, 'localhost', 'http');
      await viaProxy(socketPath, 'localhost', 'connect');
      expect(lookups).toBe(2);
      expect(hits).toBe(0);
    } finally {
      await proxy.close();
    }
  });

  it('the connection goes to the address that was checked, never to a second lookup of the name', async () => {
    // Two services on one port: the checked address (127.0.0.2, opened by allowAddresses) and the
    // loopback 127.0.0.1, where the system's own lookup of `localhost` would lead.
    const seen = { checked: 0, other: 0 };
    const checked = http.createServer((_q, r) => {
      seen.checked++;
      r.end('checked address\n');
    });
    await new Promise<void>((r) => checked.listen(0, '127.0.0.2', r));
    const p = (checked.address() as { port: number }).port;
    const other = http.createServer((_q, r) => {
      seen.other++;
      r.end('second lookup\n');
    });
    await new Promise<void>((r) => other.listen(p, '127.0.0.1', r));
    const socketPath = path.join(base.dir, 'p2.sock');
    let lookups = 0;
    const proxy = await FilteringProxy.start(socketPath, [`localhost:${p}`], ['127.0.0.2/32'], () => {
      lookups++;
      return Promise.resolve([{ address: '127.0.0.2', family: 4 }]);
    });
    const get = (how: 'http' | 'connect') =>
      new Promise<string>((resolve) => {
        const req = http.request(
          how === 'http'
            ? { socketPath, path: `http://localhost:${p}/`, headers: { host: `localhost:${p}` } }
            : { socketPath, method: 'CONNECT', path: `localhost:${p}` },
        );
        req.on('response', (res) => {
          let body = '';
          res.setEncoding('utf8').on('data', (d: string) => (body += d));
          res.on('end', () => resolve(body));
        });
        req.on('connect', (_res, socket) => {
          socket.end(`GET / HTTP/1.1\r\nHost: localhost:${p}\r\nConnection: close\r\n\r\n`);
          let raw = '';
          socket.setEncoding('utf8').on('data', (d: string) => (raw += d));
          socket.on('close', () => resolve(raw.split('\r\n\r\n').pop() ?? ''));
        });
        req.end();
      });
    try {
      expect([await get('http'), await get('connect')]).toEqual(['checked address\n', 'checked address\n']);
      expect([seen, lookups]).toEqual([{ checked: 2, other: 0 }, 2]);
    } finally {
      await proxy.close();
      await closeServer(checked);
      await closeServer(other);
    }
  });
});

suite('no planting code that the host runs later', () => {
  let base: Awaited<ReturnType<typeof tempDir>>;
  let ws: string;
  let sub: string;
  let reg: ToolRegistryType;
  const git = (cwd: string, ...args: string[]) =>
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], {
      cwd,
      encoding: 'utf8',
      env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1', HOME: path.join(base.dir, 'home') },
    });

  beforeAll(async () => {
    base = await tempDir('sandbox-plant-');
    ws = path.join(base.dir, 'ws');
    sub = path.join(ws, 'packages/inner');
    await mkdir(sub, { recursive: true });
    await mkdir(path.join(base.dir, 'home'));
    await writeFile(path.join(ws, 'README.md'), 'readme\n');
    git(ws, 'init', '-q');
    git(ws, 'add', 'README.md');
    git(ws, 'commit', '-qm', 'first');
    await writeFile(path.join(sub, 'x.txt'), 'x\n');
    git(sub, 'init', '-q');
    reg = contained(path.join(base.dir, 'home'));
  });
  afterAll(async () => {
    await reg.dispose();
    await base.cleanup();
  });

  const PLANT = (dir: string) => `touch ${dir}/PWNED`;
  const attempts = (): Array<[string, string]> => [
    ['hook by echo', `printf '#!/bin/sh\\n${PLANT(ws)}\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit`],
    ['hook by cp', `printf '#!/bin/sh\\n${PLANT(ws)}\\n' > h.sh; chmod +x h.sh; cp h.sh .git/hooks/post-commit`],
    ['hook by symlink', `ln -s ../../h.sh .git/hooks/pre-commit`],
    ['hooks dir replaced', 'rm -rf .git/hooks; mkdir .git/hooks && cp h.sh .git/hooks/pre-commit'],
    ['hooks dir renamed', 'mv .git/hooks .git/old-hooks; mkdir .git/hooks; cp h.sh .git/hooks/pre-commit'],
    ['git config fsmonitor', `git config core.fsmonitor '${PLANT(ws)}'`],
    ['git config hooksPath', 'mkdir -p myhooks && cp h.sh myhooks/pre-commit && git config core.hooksPath myhooks'],
    ['git config pager', `git config core.pager '${PLANT(ws)}; cat'`],
    ['append to .git/config', `printf '[core]\\n\\tfsmonitor = ${PLANT(ws)}\\n' >> .git/config`],
    ['python writes .git/config', `python3 -c "open('.git/config', 'a').write('[alias]\\n\\tst = !${PLANT(ws)}\\n')"`],
    [
      'config replaced by rename',
      `cp .git/config c2 && printf '[core]\\n\\tfsmonitor = ${PLANT(ws)}\\n' >> c2 && mv c2 .git/config`,
    ],
    ['.git renamed and replaced', `mv .git .git-old; git init -q . && git config core.fsmonitor '${PLANT(ws)}'`],
    [
      'commondir pointing at a planted repository',
      `mkdir -p /tmp/planted; cp -r .git/. planted-git 2>/dev/null; printf '[core]\\n\\tfsmonitor = ${PLANT(ws)}\\n' >> planted-git/config; echo ../planted-git > .git/commondir`,
    ],
    ['nested repository hook', `cp h.sh packages/inner/.git/hooks/pre-commit`],
    ['nested repository config', `git -C packages/inner config core.fsmonitor '${PLANT(sub)}'`],
    ['.envrc', `echo '${PLANT(ws)}' > .envrc`],
    [
      '.vscode tasks',
      `mkdir -p .vscode && echo '{"tasks":[{"command":"${PLANT(ws)}","runOptions":{"runOn":"folderOpen"}}]}' > .vscode/tasks.json`,
    ],
    ['.idea', 'mkdir -p .idea && echo x > .idea/workspace.xml'],
    ['.gitmodules', `printf '[submodule "x"]\\n\\tpath = x\\n\\turl = ext::sh -c ${PLANT(ws)}\\n' > .gitmodules`],
    ['.husky', 'mkdir -p .husky && cp h.sh .husky/pre-commit'],
    ['.mcp.json', `echo '{"mcpServers":{"x":{"command":"sh","args":["-c","${PLANT(ws)}"]}}}' > .mcp.json`],
  ];

  it("each attempt leaves the host's git config, hooks and start-up files as they were; host git runs nothing planted", async () => {
    const config = sha(path.join(ws, '.git/config'));
    const hooks = readdirSync(path.join(ws, '.git/hooks')).sort();
    const subConfig = sha(path.join(sub, '.git/config'));
    for (const [, command] of attempts()) await run(reg, ws, `${command}; true`);
    expect(sha(path.join(ws, '.git/config'))).toBe(config);
    expect(readdirSync(path.join(ws, '.git/hooks')).sort()).toEqual(hooks);
    expect(sha(path.join(sub, '.git/config'))).toBe(subConfig);
    expect(readdirSync(path.join(sub, '.git/hooks')).filter((h) => !h.endsWith('.sample'))).toEqual([]);
    for (const p of ['.envrc', '.vscode', '.idea', '.gitmodules', '.husky', '.mcp.json', '.git/commondir', '.git-old'])
      expect([p, existsSync(path.join(ws, p))]).toEqual([p, false]);
    // The host's own git, as the user would run it next.
    git(ws, 'status');
    await writeFile(path.join(ws, 'new.txt'), 'n\n');
    git(ws, 'add', 'new.txt');
    git(ws, 'commit', '-qm', 'host commit');
    git(sub, 'status');
    expect([existsSync(path.join(ws, 'PWNED')), existsSync(path.join(sub, 'PWNED'))]).toEqual([false, false]);
  }, 120_000);

  it("a refused write names the protected path in the command's error output", async () => {
    const hook = await run(reg, ws, 'echo x > .git/hooks/pre-commit');
    expect(hook.exitCode).not.toBe(0);
    expect(hook.output).toContain(
      `[sandbox: ${ws}/.git/hooks is protected by the sandbox: the host runs what it holds without asking`,
    );
    expect(hook.output).toContain('sandbox.filesystem.allowWrite');
    const cfg = await run(reg, ws, 'git config core.pager cat');
    expect(cfg.exitCode).not.toBe(0);
    expect(cfg.output).toContain(`[sandbox: ${ws}/.git/config is protected by the sandbox`);
    const envrc = await run(reg, ws, 'echo x > .envrc');
    expect(envrc.output).toContain(`[sandbox: ${ws}/.envrc is protected by the sandbox`);
  });

  it('git status, diff, log, add and commit keep working inside', async () => {
    await writeFile(path.join(ws, 'README.md'), 'readme changed\n');
    const r = await run(
      reg,
      ws,
      'git status --short && git diff --stat && git add README.md && git -c user.name=t -c user.email=t@example.com commit -qm inside && git log --oneline | wc -l',
    );
    expect(r.exitCode).toBe(0);
    expect(r.output).toContain('M README.md');
    expect(r.output.trim().split('\n').pop()).toBe('3');
  });

  it('filesystem.allowWrite opens one protected path on purpose, and only that one', async () => {
    const open = contained(path.join(base.dir, 'home'), {
      filesystem: { allowWrite: [path.join(ws, '.git/hooks')] },
    });
    try {
      const r = await run(open, ws, 'echo "#!/bin/sh" > .git/hooks/commit-msg && git config core.pager cat; true');
      expect(existsSync(path.join(ws, '.git/hooks/commit-msg'))).toBe(true);
      expect(r.output).toContain(`${ws}/.git/config is protected by the sandbox`);
    } finally {
      await open.dispose();
    }
  });
});

suite('writes that vanish: the private /tmp under a host path', () => {
  let base: Awaited<ReturnType<typeof tempDir>>;
  let ws: string;
  let reg: ToolRegistryType;

  beforeAll(async () => {
    base = await tempDir('sandbox-vanish-');
    ws = path.join(base.dir, 'ws');
    await mkdir(ws);
    await mkdir(path.join(base.dir, 'elsewhere'));
    await mkdir(path.join(base.dir, 'home'));
    reg = contained(path.join(base.dir, 'home'));
  });
  afterAll(async () => {
    await reg.dispose();
    await base.cleanup();
  });

  it('a file written where the host has the directory gets one line; scratch files of its own do not', async () => {
    // `base.dir` is under the host's /tmp: inside, it is part of the private /tmp.
    expect(base.dir.startsWith('/tmp/')).toBe(true);
    const r = await run(
      reg,
      ws,
      `mkdir -p ${base.dir}/elsewhere && echo hi > ${base.dir}/elsewhere/out.txt && echo ok`,
    );
    expect(r.exitCode).toBe(0);
    expect(existsSync(path.join(base.dir, 'elsewhere/out.txt'))).toBe(false);
    const lines = r.output.split('\n').filter((l) => l.startsWith('[sandbox:'));
    expect(lines).toEqual([
      `[sandbox: ${base.dir}/elsewhere/out.txt went to the command's private /tmp, which is emptied when the command ends: the host's /tmp never sees it. Write inside the workspace, or ask the user to add the directory to sandbox.filesystem.allowWrite.]`,
    ]);
    const own = await run(
      reg,
      ws,
      'mkdir -p /tmp/toolbelt-scratch-own-9 && echo x > /tmp/toolbelt-scratch-own-9/f && echo y > /tmp/plain-own-9.txt && echo z > in-ws.txt',
    );
    expect(own.output).not.toContain('[sandbox:');
  });
});
