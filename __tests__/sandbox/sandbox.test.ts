/**
 * The OS sandbox with the real bubblewrap: an escape corpus the bash parser cannot see through
 * (each attempt judged by the decoys' and servers' state afterwards, not by exit codes), the work
 * that must still succeed inside, the network door, and the process tree's end.
 * Skips (saying why) only where bwrap cannot run; CI installs it, and there a missing bwrap fails.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, lstatSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import dgram from 'node:dgram';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { createRegistry, registerBuiltinTools, type ToolRegistryType } from '../../src/index.js';
import type { SandboxOptions } from '../../src/sandbox/types.js';
import { closeServer, listenLoopback, tempDir, until } from '../support/helpers.js';
import { ensureDist, ROOT } from '../support/dist.js';

/** Whether bwrap can contain a command here; the reason when it cannot. */
function bwrapProblem(): string | undefined {
  const r = spawnSync(
    'bwrap',
    [
      '--ro-bind',
      '/',
      '/',
      '--dev',
      '/dev',
      '--proc',
      '/proc',
      '--unshare-all',
      '--die-with-parent',
      '--',
      '/bin/true',
    ],
    {
      encoding: 'utf8',
      timeout: 10_000,
    },
  );
  if (r.error) return `bwrap is not installed (${r.error.message})`;
  return r.status === 0 ? undefined : `bwrap cannot run here: ${r.stderr.trim()}`;
}
const problem = bwrapProblem();
if (problem && process.env.CI) throw new Error(`CI must run the sandbox suite, but ${problem}. Install bubblewrap.`);
if (problem) console.warn(`sandbox.test.ts skipped: ${problem}. Install bubblewrap (and socat) to run it.`);
const suite = problem ? describe.skip : describe;

const SECRETS = {
  ssh: 'DECOY-SSH-PRIVATE-KEY-7f3a',
  aws: 'DECOY-AWS-SECRET-91bc',
  gcloud: 'DECOY-GCLOUD-TOKEN-55de',
  env: 'DECOY-DOTENV-VALUE-a1b2',
  pem: 'DECOY-PEM-CERT-c3d4',
  envVar: 'DECOY-ENV-TOKEN-e5f6',
};
const BASHRC = '# the decoy home bashrc\n';
const MARKER = 31337;

let base: Awaited<ReturnType<typeof tempDir>>;
let ws: string;
let home: string;
let outside: string;
let registry: ToolRegistryType;
let decoy: ChildProcess;
const hits = { http: 0, tcp: 0, udp: 0, unix: 0 };
let forbiddenHttp: http.Server;
let forbiddenUrl: string;
let tcpServer: net.Server;
let tcpPort: number;
let udp: dgram.Socket;
let udpPort: number;
let unixServer: net.Server;
let unixPath: string;

async function bash(reg: ToolRegistryType, command: string, extra: Record<string, unknown> = {}, initCtx?: object) {
  return reg.execute('bash', { command, description: 'sandbox test', ...extra }, {}, initCtx ?? { workspaceRoot: ws });
}

suite('the sandbox contains what the parser cannot see (real bubblewrap)', () => {
  const sandbox = (): SandboxOptions => ({ mode: 'required', filesystem: { home } });

  beforeAll(async () => {
    base = await tempDir('sandbox-');
    ws = path.join(base.dir, 'ws');
    home = path.join(base.dir, 'home');
    outside = path.join(base.dir, 'outside');
    for (const d of [ws, outside, path.join(home, '.ssh'), path.join(home, '.aws'), path.join(home, '.config/gcloud')])
      await mkdir(d, { recursive: true });
    await writeFile(path.join(home, '.ssh/id_rsa'), SECRETS.ssh);
    await writeFile(path.join(home, '.aws/credentials'), SECRETS.aws);
    await writeFile(path.join(home, '.config/gcloud/credentials.db'), SECRETS.gcloud);
    await writeFile(path.join(home, '.bashrc'), BASHRC);
    await writeFile(path.join(ws, '.env.local'), SECRETS.env);
    await writeFile(path.join(ws, 'server.pem'), SECRETS.pem);
    await writeFile(path.join(ws, 'README.md'), 'workspace readme\n');
    await writeFile(path.join(outside, 'keep.txt'), 'outside\n');
    await symlink(path.join(home, '.ssh/id_rsa'), path.join(ws, 'key-link'));
    await symlink(outside, path.join(ws, 'outside-link'));
    process.env.TOOLBELT_TEST_API_TOKEN = SECRETS.envVar;

    forbiddenHttp = http.createServer((_req, res) => {
      hits.http++;
      res.end('forbidden server reached\n');
    });
    forbiddenUrl = await listenLoopback(forbiddenHttp);
    tcpServer = net.createServer((s) => {
      hits.tcp++;
      s.destroy();
    });
    await new Promise<void>((r) => tcpServer.listen(0, '127.0.0.1', r));
    tcpPort = (tcpServer.address() as net.AddressInfo).port;
    udp = dgram.createSocket('udp4');
    udp.on('message', () => hits.udp++);
    await new Promise<void>((r) => udp.bind(0, '127.0.0.1', r));
    udpPort = udp.address().port;
    // A daemon's socket in the home directory: a read-only mount does not stop connect().
    unixPath = path.join(home, 'agent.sock');
    unixServer = net.createServer((s) => {
      hits.unix++;
      s.destroy();
    });
    await new Promise<void>((r) => unixServer.listen(unixPath, r));
    decoy = spawn('sleep', ['1000'], { stdio: 'ignore' });
    registry = registerBuiltinTools(createRegistry({ sandbox: sandbox() }));
  });

  afterAll(async () => {
    delete process.env.TOOLBELT_TEST_API_TOKEN;
    decoy.kill('SIGKILL');
    await registry.dispose();
    await closeServer(forbiddenHttp);
    await new Promise((r) => tcpServer.close(r));
    await new Promise((r) => unixServer.close(r));
    udp.close();
    await base.cleanup();
  });

  /** Everything an escape would change, read from the host. */
  function escapes(output: string): string[] {
    const found: string[] = [];
    for (const [name, value] of Object.entries(SECRETS)) {
      const b64 = Buffer.from(value).toString('base64').slice(0, 16);
      if (output.includes(value) || output.includes(b64)) found.push(`output holds the ${name} secret`);
    }
    if (readFileSync(path.join(home, '.bashrc'), 'utf8') !== BASHRC) found.push('~/.bashrc changed');
    const out = readdirSync(outside).sort();
    if (JSON.stringify(out) !== JSON.stringify(['keep.txt'])) found.push(`../outside now holds ${out.join(', ')}`);
    if (readFileSync(path.join(outside, 'keep.txt'), 'utf8') !== 'outside\n') found.push('../outside/keep.txt changed');
    for (const f of readdirSync(ws)) {
      const p = path.join(ws, f);
      if (lstatSync(p).isSymbolicLink()) continue; // the planted links point at the decoys by design
      try {
        const text = readFileSync(p, 'utf8');
        for (const [name, value] of Object.entries(SECRETS))
          if (text.includes(value) && !['.env.local', 'server.pem'].includes(f))
            found.push(`${f} holds the ${name} secret`);
      } catch {
        // a directory, a socket or a link to somewhere unreadable
      }
    }
    for (const [k, v] of Object.entries(hits)) if (v) found.push(`the forbidden ${k} server was reached ${v} time(s)`);
    const status = readFileSync(`/proc/${decoy.pid}/status`, 'utf8');
    if (!/^State:\s+S/m.test(status)) found.push(`the decoy process is ${/^State:.*$/m.exec(status)?.[0]}`);
    if (!/^TracerPid:\s+0$/m.test(status)) found.push('the decoy process is being traced');
    if (sleepers(MARKER).length) found.push('a marked process outlived the command');
    return found;
  }

  /** `sleep <marker>` processes anywhere on the host. */
  function sleepers(marker: number): number[] {
    const pids: number[] = [];
    for (const e of readdirSync('/proc')) {
      if (!/^\d+$/.test(e)) continue;
      try {
        const argv = readFileSync(`/proc/${e}/cmdline`, 'utf8').split('\0');
        if (path.basename(argv[0]) === 'sleep' && argv[1] === String(marker)) pids.push(Number(e));
      } catch {
        // gone
      }
    }
    return pids;
  }

  const C_READ = `#include <stdio.h>
#include <stdlib.h>
int main(void) { char p[4096]; snprintf(p, sizeof p, "%s/.ssh/id_rsa", getenv("HOME")); FILE *f = fopen(p, "r"); if (!f) { perror(p); return 1; } int c; while ((c = fgetc(f)) != EOF) putchar(c); return 0; }`;
  const C_WRITE = `#include <stdio.h>
int main(void) { FILE *f = fopen("../outside/from-c", "w"); if (!f) { perror("../outside/from-c"); return 1; } fputs("pwned", f); fclose(f); return 0; }`;

  const corpus = (): Array<[string, string]> => [
    // reading secrets
    ['cat ssh key', 'cat ~/.ssh/id_rsa'],
    ['python reads ssh key', `python3 -c "print(open('$HOME/.ssh/id_rsa').read())"`],
    [
      'node reads ssh key',
      `node -e "console.log(require('fs').readFileSync(process.env.HOME + '/.ssh/id_rsa', 'utf8'))"`,
    ],
    ['perl reads ssh key', `perl -e 'open(F, "$ENV{HOME}/.ssh/id_rsa") or die "$!"; print <F>'`],
    ['base64 of ssh key', 'base64 ~/.ssh/id_rsa'],
    ['copy ssh key into the workspace', 'cp ~/.ssh/id_rsa ./copied-key; cat copied-key'],
    ['tar the ssh dir', 'tar cf - -C ~ .ssh | base64'],
    ['list and cat through find', 'find ~ -name "id_rsa*" -exec cat {} +'],
    ['aws credentials', 'cat ~/.aws/credentials'],
    ['gcloud credentials', 'cat ~/.config/gcloud/credentials.db'],
    ['dotenv in the workspace', 'cat .env.local'],
    ['python reads dotenv', `python3 -c "print(open('.env.local').read())"`],
    ['pem in the workspace', 'cat server.pem'],
    ['planted symlink to the key', 'cat key-link'],
    ['new symlink to the key', 'ln -sf ~/.ssh/id_rsa new-link && cat new-link'],
    ['/proc/self/root', 'cat /proc/self/root$HOME/.ssh/id_rsa'],
    ['/proc/1/root', 'cat /proc/1/root$HOME/.ssh/id_rsa'],
    [
      'written-then-run script reads',
      `printf '#!/bin/sh\\ncat "$HOME/.ssh/id_rsa"\\n' > r.sh && chmod +x r.sh && ./r.sh`,
    ],
    ['compiled program reads', `cat > r.c <<'EOF'\n${C_READ}\nEOF\ngcc r.c -o r && ./r`],
    ['environment variables', 'env; node -e "console.log(JSON.stringify(process.env))"'],
    ['unmount the mask in a new user namespace', 'unshare -Urm sh -c "umount $HOME/.ssh; cat $HOME/.ssh/id_rsa"'],
    // writing outside
    ['append to ~/.bashrc', 'echo pwned >> ~/.bashrc'],
    ['python appends to ~/.bashrc', `python3 -c "open('$HOME/.bashrc', 'a').write('pwned')"`],
    ['node appends to ~/.bashrc', `node -e "require('fs').appendFileSync(process.env.HOME + '/.bashrc', 'pwned')"`],
    ['perl appends to ~/.bashrc', `perl -e 'open(F, ">>$ENV{HOME}/.bashrc") or die "$!"; print F "pwned"'`],
    ['write ../outside', 'echo pwned > ../outside/escaped'],
    ['cd .. and write', 'cd .. && echo pwned > outside/escaped2'],
    ['copy a binary out', 'cp /bin/sh ../outside/sh'],
    ['write through a planted symlink', 'echo pwned > outside-link/escaped3'],
    [
      'written-then-run script writes',
      `printf '#!/bin/sh\\necho pwned > ../outside/escaped4\\n' > w.sh && chmod +x w.sh && ./w.sh`,
    ],
    ['compiled program writes', `cat > w.c <<'EOF'\n${C_WRITE}\nEOF\ngcc w.c -o w && ./w`],
    ['write through /proc/self/root', `echo pwned > /proc/self/root${outside}/escaped5`],
    ['write through the parent cwd', 'echo pwned > /proc/$PPID/cwd/../outside/escaped6'],
    ['every visible process cwd', 'for p in /proc/[0-9]*; do echo pwned > $p/cwd/../outside/escaped7; done; true'],
    ['mount over the outside dir', `mount -t tmpfs none ${outside} && echo pwned > ${outside}/escaped8`],
    [
      'unmount the private /tmp and the masks',
      `umount -l $HOME/.ssh; umount -l /tmp; cat ~/.ssh/id_rsa; echo pwned > ${outside}/escaped11`,
    ],
    ['remount the home writable', 'mount -o remount,rw,bind $HOME; echo pwned >> ~/.bashrc'],
    [
      'bind mount in a user namespace',
      `unshare -Urm sh -c "mount --bind /tmp ${outside} || true; echo pwned > ${outside}/escaped9"`,
    ],
    // network
    ['curl a loopback server', `curl -sS --max-time 5 ${forbiddenUrl}`],
    [
      'python socket to loopback',
      `python3 -c "import socket; socket.create_connection(('127.0.0.1', ${'$'}{PORT}), 5)"`,
    ],
    [
      'node socket to loopback',
      `node -e "require('net').connect(${'$'}{PORT}, '127.0.0.1').on('error', e => { console.error(e.message); process.exit(1) })"`,
    ],
    ['bash /dev/tcp', `exec 3<>/dev/tcp/127.0.0.1/${'$'}{PORT}`],
    ['perl socket', `perl -MIO::Socket::INET -e 'IO::Socket::INET->new("127.0.0.1:${'$'}{PORT}") or die "$!"'`],
    [
      'DNS query to a loopback resolver',
      `python3 -c "import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b'\\x12\\x34\\x01\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x07example\\x03com\\x00\\x00\\x01\\x00\\x01', ('127.0.0.1', ${'$'}{UDP}))"`,
    ],
    ['DNS resolution', 'getent hosts example.com && echo RESOLVED'],
    [
      'unix socket of a home daemon',
      `python3 -c "import socket; s = socket.socket(socket.AF_UNIX); s.connect('${'$'}{SOCK}')"`,
    ],
    ['curl through a guessed proxy', `curl -sS --max-time 5 -x http://127.0.0.1:3128 ${forbiddenUrl}`],
    // processes
    ['kill the decoy', 'kill -9 $DECOY'],
    ['python kills the decoy', 'python3 -c "import os; os.kill(int(os.environ[\'DECOY\']), 9)"'],
    ['stop the decoy', 'kill -STOP $DECOY'],
    [
      'ptrace the decoy',
      `python3 -c "import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); print(libc.ptrace(16, int(os.environ['DECOY']), 0, 0), ctypes.get_errno())"`,
    ],
    ['read the decoy environment', 'cat /proc/$DECOY/environ'],
    ['signal the parent', 'kill -9 $PPID; kill -9 1'],
    [
      'background job outlives the command',
      `setsid sleep ${MARKER} > /dev/null 2>&1 & nohup sleep ${MARKER} > /dev/null 2>&1 & echo started`,
    ],
    ['background writer', `(sleep 0.1; echo pwned > ../outside/escaped10) & disown; echo started`],
  ];

  it('has at least 40 attempts, and none of them escapes', async () => {
    const list = corpus();
    expect(list.length).toBeGreaterThanOrEqual(40);
    const failures: string[] = [];
    for (const [name, raw] of list) {
      const command = `export DECOY=${decoy.pid} PORT=${tcpPort} UDP=${udpPort} SOCK='${unixPath}'; ${raw}`;
      const res = await bash(registry, command);
      expect([name, res.result.metadata.sandboxed]).toEqual([name, true]);
      // Whatever the command left behind dies with its pid namespace, which the kernel tears down
      // as the sandbox's init exits (a moment after bwrap reports the shell's exit).
      await until(() => sleepers(MARKER).length === 0, `${name}: leftovers to end with the namespace`, 5_000).catch(
        () => undefined,
      );
      for (const e of escapes(res.result.output)) failures.push(`${name}: ${e}`);
    }
    expect(failures).toEqual([]);
  }, 180_000);

  it('a background job is contained too', async () => {
    const tools = await registry.tools({ ids: ['bash', 'bash_output'], initCtx: { workspaceRoot: ws } });
    const started = await tools
      .find((t) => t.name === 'bash')!
      .invoke({
        command: `cat ~/.ssh/id_rsa; echo pwned > ../outside/bg; echo pwned >> ~/.bashrc; echo job-done`,
        description: 'job',
        background: true,
      });
    const id = /job-[0-9a-f]+/.exec(String(started))![0];
    let all = '';
    for (;;) {
      const out = String(await tools.find((t) => t.name === 'bash_output')!.invoke({ id }));
      all += out;
      if (!/Still running/.test(out)) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(all).toContain('job-done');
    expect(escapes(all)).toEqual([]);
  });

  it('the secret is hidden with a sentence that says so, and a write outside says where writes may go', async () => {
    const read = await bash(registry, 'cat ~/.ssh/id_rsa');
    expect(read.result.output).toContain(
      `[sandbox: ${home}/.ssh/id_rsa is hidden by the sandbox: it usually holds secrets`,
    );
    const write = await bash(registry, 'echo x > /etc/toolbelt-sandbox-probe');
    expect(write.result.output).toContain('Read-only file system');
    expect(write.result.output).toContain(
      `[sandbox: /etc/toolbelt-sandbox-probe is outside the workspace: the sandbox allows writes only to ${ws} and a private /tmp`,
    );
    expect(existsSync('/etc/toolbelt-sandbox-probe')).toBe(false);
    const netRes = await bash(registry, `curl -sS --max-time 5 ${forbiddenUrl}`);
    expect(netRes.result.output).toContain('[sandbox: The sandbox has no network');
    expect(hits.http).toBe(0);
  });

  it('runs in its own pid namespace, with no capabilities and a private /tmp', async () => {
    const res = await bash(
      registry,
      'echo pid=$$; grep CapEff /proc/self/status; touch /tmp/mine; ls /tmp; ls /proc | grep -c "^[0-9]"',
    );
    expect(res.result.output).toMatch(/pid=\d\b/);
    expect(res.result.output).toMatch(/CapEff:\s+0000000000000000/);
    expect(res.result.output).toContain('mine');
    // A handful of processes, not the host's.
    const count = Number(res.result.output.trim().split('\n').pop());
    expect(count).toBeLessThan(10);
  });

  it('allowed work still works: files, tools, a Node project, make + cc, git', async () => {
    const project = path.join(ws, 'project');
    await mkdir(project, { recursive: true });
    await writeFile(
      path.join(project, 'package.json'),
      JSON.stringify({ name: 'p', type: 'module', scripts: { test: 'node --test' } }),
    );
    await writeFile(path.join(project, 'sum.js'), 'export const sum = (a, b) => a + b;\n');
    await writeFile(
      path.join(project, 'sum.test.js'),
      "import { test } from 'node:test';\nimport assert from 'node:assert';\nimport { sum } from './sum.js';\ntest('sum', () => assert.equal(sum(2, 3), 5));\n",
    );
    const nodeTest = await bash(registry, 'node --test 2>&1', { workdir: 'project' });
    expect(nodeTest.result.output).toMatch(/# pass 1/);
    expect(nodeTest.result.metadata.exitCode).toBe(0);

    await writeFile(
      path.join(project, 'hello.c'),
      '#include <stdio.h>\nint main(void) { puts("hello from cc"); return 0; }\n',
    );
    await writeFile(path.join(project, 'Makefile'), 'hello: hello.c\n\tcc -o hello hello.c\n');
    const made = await bash(registry, 'make && ./hello', { workdir: 'project' });
    expect(made.result.output).toContain('hello from cc');

    const git = await bash(
      registry,
      'git init -q && git add package.json sum.js && git -c user.name=t -c user.email=t@example.com commit -qm first && git log --oneline | wc -l',
      { workdir: 'project' },
    );
    expect(git.result.metadata.exitCode).toBe(0);
    expect(git.result.output.trim()).toBe('1');
    expect(existsSync(path.join(project, '.git/HEAD'))).toBe(true);

    const rw = await bash(
      registry,
      'echo written > notes.txt && cat notes.txt README.md && python3 -c "print(6*7)" && perl -e "print 7*6, qq(\\n)"',
    );
    expect(rw.result.output).toBe('written\nworkspace readme\n42\n42\n');
    expect(await readFile(path.join(ws, 'notes.txt'), 'utf8')).toBe('written\n');
  }, 60_000);

  it('grep runs rg contained: matches in the workspace, nothing from hidden secrets', async () => {
    await writeFile(path.join(ws, 'code.ts'), `const marker = "${SECRETS.env.slice(0, 12)}";\n`);
    const res = await registry.execute('grep', { pattern: 'DECOY-' }, {}, { workspaceRoot: ws });
    expect(res.success).toBe(true);
    expect(res.result.output).toContain('code.ts');
    expect(res.result.output).not.toContain(SECRETS.env);
    expect(res.result.output).not.toContain(SECRETS.pem);
  });

  it('a timeout and an abort still end the whole contained tree', async () => {
    const timed = await bash(registry, `sleep ${MARKER + 1} & sleep ${MARKER + 1}`, { timeout: 300 });
    expect(timed.result.metadata.killed).toBe('timeout');
    expect(sleepers(MARKER + 1)).toEqual([]);

    const controller = new AbortController();
    const running = registry.execute(
      'bash',
      { command: `sleep ${MARKER + 2} & echo up; wait`, description: 'abort me' },
      {},
      { workspaceRoot: ws },
      {
        signal: controller.signal,
        onToolResult: (u) =>
          u.status === 'running' && String(u.result.metadata.output ?? '').includes('up') && controller.abort(),
      },
    );
    const aborted = await running;
    expect(aborted.success).toBe(false);
    await until(() => sleepers(MARKER + 2).length === 0, 'the aborted tree to end');
  });

  it('the contained tree dies with its parent: a host killed with SIGKILL leaves no command running', async () => {
    await ensureDist();
    const script = `
      import { createRegistry, registerBuiltinTools } from ${JSON.stringify(path.join(ROOT, 'dist/index.js'))};
      const r = registerBuiltinTools(createRegistry({ sandbox: { mode: 'required', filesystem: { home: ${JSON.stringify(home)} } } }));
      r.execute('bash', { command: 'sleep ${MARKER + 4} & sleep ${MARKER + 4}', description: 'orphan' }, {}, { workspaceRoot: ${JSON.stringify(ws)} });
      setInterval(() => {}, 1000);
    `;
    // Its private files go under our temp dir: a SIGKILLed host cannot remove them itself.
    const tmp = path.join(base.dir, 'host-tmp');
    await mkdir(tmp);
    const host = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: 'ignore',
      env: { ...process.env, TMPDIR: tmp },
    });
    await until(() => sleepers(MARKER + 4).length === 2, 'the contained commands to start', 30_000);
    host.kill('SIGKILL');
    await until(() => sleepers(MARKER + 4).length === 0, 'the orphaned sandbox to end', 10_000);
  }, 60_000);

  it('bash_kill ends a contained background job and everything it started', async () => {
    const tools = await registry.tools({ ids: ['bash', 'bash_kill'], initCtx: { workspaceRoot: ws } });
    const started = String(
      await tools
        .find((t) => t.name === 'bash')!
        .invoke({ command: `setsid sleep ${MARKER + 3} & sleep ${MARKER + 3}`, description: 'job', background: true }),
    );
    await until(() => sleepers(MARKER + 3).length === 2, 'the job to start');
    await tools.find((t) => t.name === 'bash_kill')!.invoke({ id: /job-[0-9a-f]+/.exec(started)![0] });
    await until(() => sleepers(MARKER + 3).length === 0, 'the killed job to end');
  });
});

suite('network.allowedDomains: only the allowed hosts, through the proxy', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let allowed: http.Server;
  let refused: http.Server;
  let allowedUrl: string;
  let refusedUrl: string;
  const seen = { allowed: 0, refused: 0 };
  let reg: ToolRegistryType;

  beforeAll(async () => {
    dir = await tempDir('sandbox-net-');
    allowed = http.createServer((_q, r) => {
      seen.allowed++;
      r.end('hello from the allowed host\n');
    });
    refused = http.createServer((_q, r) => {
      seen.refused++;
      r.end('refused host reached\n');
    });
    allowedUrl = await listenLoopback(allowed);
    refusedUrl = await listenLoopback(refused);
    reg = registerBuiltinTools(
      createRegistry({
        sandbox: {
          mode: 'required',
          filesystem: { home: dir.dir },
          network: { allowedDomains: [new URL(allowedUrl).host] },
        },
      }),
    );
  });

  afterAll(async () => {
    await reg.dispose();
    await closeServer(allowed);
    await closeServer(refused);
    await dir.cleanup();
  });

  it('reaches the allowed host over HTTP and a CONNECT tunnel; the other gets a 403 that says why', async () => {
    const ok = await bash(
      reg,
      `curl -sS --max-time 10 ${allowedUrl}/ && curl -sS --max-time 10 -p ${allowedUrl}/`,
      {},
      { workspaceRoot: dir.dir },
    );
    expect(ok.result.output).toBe('hello from the allowed host\nhello from the allowed host\n');
    expect(seen.allowed).toBe(2);

    const no = await bash(reg, `curl -sS --max-time 10 ${refusedUrl}/`, {}, { workspaceRoot: dir.dir });
    expect(no.result.output).toContain(
      `The sandbox refused a connection to ${new URL(refusedUrl).host}: it is not in network.allowedDomains`,
    );
    const tunnel = await bash(reg, `curl -sS --max-time 10 -p ${refusedUrl}/`, {}, { workspaceRoot: dir.dir });
    expect(tunnel.result.output).toMatch(/403/);
    expect(tunnel.result.output).toContain('[sandbox: The network is closed by the sandbox except these hosts');
    // A client that ignores HTTP_PROXY cannot go around it.
    const direct = await bash(
      reg,
      `curl -sS --noproxy '*' --max-time 5 ${refusedUrl}/`,
      {},
      { workspaceRoot: dir.dir },
    );
    expect(direct.result.metadata.exitCode).not.toBe(0);
    expect(seen.refused).toBe(0);
  });
});
