/**
 * The sandbox of one registry: finds bubblewrap on PATH and probes it once (a trivial command),
 * decides from the mode whether commands run contained, keeps the private directory (the
 * unreadable mask file, the proxy socket), the filtering proxy and the list of hidden secrets,
 * and turns a command into the bwrap command line that contains it.
 * Must not collect output or kill processes (the tools do, through process groups), nor build
 * bwrap's arguments itself (bwrap.ts) or scan for secrets (secrets.ts).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, promises as fs, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type {} from '../authoring/tool.js';
import type { Tool } from '../authoring/tool.js';
import { findExecutable } from '../platform/files.js';
import { bwrapArguments, innerCommand, normaliseRoots, proxyUrl } from './bwrap.js';
import { findHiddenPaths, type HiddenPaths } from './secrets.js';
import type { FilteringProxy } from './proxy.js';
import { sandboxNote } from './explain.js';
import type { SandboxMode, SandboxOptions, SandboxStatus } from './types.js';

declare module '../authoring/tool.js' {
  namespace Tool {
    interface InitContext {
      /** The OS sandbox for bash and the processes built-in tools start; overrides the registry's `sandbox` field by field. */
      sandbox?: SandboxOptions;
    }
  }
}

/** How long the probe (a trivial command in bwrap) may take before the engine counts as broken, in ms. */
export const SANDBOX_PROBE_TIMEOUT_MS = 5_000;
/** How long a scan for secret files is reused before the next command scans again, in ms. */
export const SECRET_SCAN_TTL_MS = 10_000;
/**
 * Environment variables a contained command does not get: names that usually hold credentials
 * (API keys, tokens, passwords). The sandbox hides secret files; these are the same in the environment.
 */
export const SANDBOX_SECRET_ENV = /(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?|AUTH)(?:_|$)/i;

/** What installs the engine, named in the `required` refusal. */
export const BWRAP_INSTALL_HINT =
  'install the bubblewrap package (Debian/Ubuntu: `sudo apt-get install bubblewrap`; Fedora: `sudo dnf install bubblewrap`)';
const SOCAT_INSTALL_HINT =
  'install the socat package (Debian/Ubuntu: `sudo apt-get install socat`; Fedora: `sudo dnf install socat`)';

/** The result of probing the engine once. */
interface Probe {
  bwrap?: string;
  socat?: string;
  /** Why bwrap cannot be used, when it cannot. */
  problem?: string;
}

/** A command line that runs one command contained, and what explains its refusals. */
export interface ContainedCommand {
  file: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  /** The note to append to a failed command's output, if the sandbox refused something. */
  explain(output: string): string | undefined;
}

/** The options in force for one init context: the registry's, overridden by `initCtx.sandbox`. */
export function mergeOptions(base: SandboxOptions | undefined, over: SandboxOptions | undefined): SandboxOptions {
  return {
    mode: over?.mode ?? base?.mode ?? 'off',
    filesystem: { ...base?.filesystem, ...over?.filesystem },
    network: { ...base?.network, ...over?.network },
    autoAllow: over?.autoAllow ?? base?.autoAllow ?? false,
  };
}

/** One registry's sandbox engine. */
export class SandboxRuntime {
  private probing?: Promise<Probe>;
  private dir?: string;
  private readonly proxies = new Map<string, Promise<FilteringProxy>>();
  private readonly scans = new Map<string, { at: number; hidden: Promise<HiddenPaths> }>();
  private readonly told = new Set<string>();
  private closed = false;

  constructor(
    /** The registry's options (`createRegistry({ sandbox })`). */
    readonly options: SandboxOptions | undefined = undefined,
    /** Told each distinct status once (the registry emits a `sandbox` event). */
    private readonly onStatus?: (status: SandboxStatus) => void,
  ) {}

  /** The options for calls made under `initCtx`. */
  optionsFor(initCtx?: Tool.InitContext): SandboxOptions {
    return mergeOptions(this.options, initCtx?.sandbox);
  }

  /** Whether commands run contained under `options`, and why; probes the engine on first use. */
  async status(options: SandboxOptions = this.optionsFor()): Promise<SandboxStatus> {
    const mode: SandboxMode = options.mode ?? 'off';
    const domains = options.network?.allowedDomains ?? [];
    let status: SandboxStatus;
    if (mode === 'off') {
      status = {
        mode,
        enabled: false,
        engine: null,
        network: 'off',
        reason: 'The sandbox is off (sandbox.mode "off"): commands run with the host user\'s rights.',
      };
    } else {
      const probe = await this.probe();
      if (probe.problem) {
        status = {
          mode,
          enabled: false,
          engine: null,
          network: 'off',
          reason:
            mode === 'required'
              ? `The sandbox is required but cannot run: ${probe.problem}; ${BWRAP_INSTALL_HINT}, or set sandbox.mode to "auto".`
              : `No sandbox: ${probe.problem}, so commands run uncontained with the host user's rights; ${BWRAP_INSTALL_HINT} to contain them.`,
        };
      } else if (domains.length && !probe.socat) {
        status = {
          mode,
          enabled: mode === 'auto',
          engine: mode === 'auto' ? 'bwrap' : null,
          enginePath: probe.bwrap,
          network: 'off',
          reason:
            mode === 'required'
              ? `The sandbox is required with network.allowedDomains, but socat (which bridges the proxy into the sandbox) was not found on PATH; ${SOCAT_INSTALL_HINT}.`
              : `Sandboxed with bubblewrap (${probe.bwrap}), but with no network at all: socat was not found on PATH, so network.allowedDomains cannot be reached; ${SOCAT_INSTALL_HINT}.`,
        };
      } else {
        status = {
          mode,
          enabled: true,
          engine: 'bwrap',
          enginePath: probe.bwrap,
          network: domains.length ? 'proxy' : 'off',
          reason:
            `Sandboxed with bubblewrap (${probe.bwrap}): writes only to the workspace roots and a private /tmp, secrets hidden, ` +
            (domains.length ? `network only to ${domains.join(', ')} through a filtering proxy.` : 'no network.'),
        };
      }
    }
    const key = JSON.stringify(status);
    if (!this.told.has(key)) {
      this.told.add(key);
      this.onStatus?.(status);
    }
    return status;
  }

  /**
   * The command line that runs `command` contained, or undefined when the sandbox is off or (in
   * `auto`) unavailable. Throws the refusal sentence when it is `required` and cannot run.
   */
  async contain(
    request: { shell: string; command: string; cwd: string; roots: string[]; env: NodeJS.ProcessEnv },
    options: SandboxOptions,
  ): Promise<ContainedCommand | undefined> {
    const status = await this.status(options);
    if (!status.enabled) {
      if (status.mode === 'required') throw new Error(`The command was not run. ${status.reason}`);
      return undefined;
    }
    const probe = await this.probe();
    const home = this.home(options);
    const writable = normaliseRoots(await realPaths([...request.roots, ...(options.filesystem?.allowWrite ?? [])]));
    const hidden = await this.hidden(writable, home, options.filesystem?.denyRead ?? []);
    const domains = status.network === 'proxy' ? (options.network?.allowedDomains ?? []) : [];
    const proxy = domains.length ? await this.proxy(domains) : undefined;
    const args = bwrapArguments({
      writable,
      hidden,
      denyFile: this.denyFile(),
      home,
      cwd: request.cwd,
      privateTmp: true,
      proxySocket: proxy?.socketPath,
    });
    const env = containedEnv(request.env, home, proxy !== undefined);
    return {
      file: probe.bwrap!,
      args: [
        ...args,
        '--',
        ...innerCommand(request.shell, request.command, proxy ? { socat: probe.socat! } : undefined),
      ],
      env,
      explain: (output) => sandboxNote(output, { cwd: request.cwd, writable, hidden, allowedDomains: domains }),
    };
  }

  /**
   * A read-only, offline command line for a built-in tool's helper (grep's rg): it reads what it
   * may, writes nothing, hides secrets. Undefined when the sandbox is off or unavailable in `auto`.
   */
  async containReadOnly(
    request: { file: string; args: string[]; cwd: string; roots: string[] },
    options: SandboxOptions,
  ): Promise<{ file: string; args: string[] } | undefined> {
    const status = await this.status(options);
    if (!status.enabled) {
      if (status.mode === 'required') throw new Error(status.reason);
      return undefined;
    }
    const probe = await this.probe();
    const home = this.home(options);
    const roots = normaliseRoots(await realPaths(request.roots));
    const hidden = await this.hidden(roots, home, options.filesystem?.denyRead ?? []);
    const args = bwrapArguments({
      writable: [],
      hidden,
      denyFile: this.denyFile(),
      home,
      cwd: request.cwd,
      privateTmp: false,
    });
    return { file: probe.bwrap!, args: [...args, '--', request.file, ...request.args] };
  }

  /** Stops the proxy and removes the private directory (the registry's dispose calls this). */
  async close(): Promise<void> {
    this.closed = true;
    const proxies = [...this.proxies.values()];
    this.proxies.clear();
    await Promise.all(
      proxies.map((p) =>
        p.then(
          (x) => x.close(),
          () => undefined,
        ),
      ),
    );
    if (this.dir) {
      rmSync(this.dir, { recursive: true, force: true });
      liveDirs.delete(this.dir);
      this.dir = undefined;
    }
  }

  private home(options: SandboxOptions): string {
    return path.resolve(options.filesystem?.home ?? process.env.HOME ?? os.homedir());
  }

  private probe(): Promise<Probe> {
    this.probing ??= probeEngine();
    return this.probing;
  }

  private hidden(roots: string[], home: string, denyRead: readonly string[]): Promise<HiddenPaths> {
    const key = JSON.stringify([roots, home, denyRead]);
    let scan = this.scans.get(key);
    if (!scan || Date.now() - scan.at > SECRET_SCAN_TTL_MS) {
      scan = { at: Date.now(), hidden: findHiddenPaths({ roots, home, denyRead }) };
      this.scans.set(key, scan);
    }
    return scan.hidden.then(stillThere);
  }

  /** The private directory (0700): the mask file and proxy sockets. Made on first use. */
  private privateDir(): string {
    if (this.closed)
      throw new Error('The sandbox was closed with its registry; create a new registry to run commands.');
    if (!this.dir) {
      this.dir = mkdtempSync(path.join(os.tmpdir(), 'toolbelt-sandbox-'));
      liveDirs.add(this.dir);
      installExitCleanup();
    }
    return this.dir;
  }

  private denyFile(): string {
    const file = path.join(this.privateDir(), 'hidden');
    // An empty file nobody may read (capabilities are dropped inside, so not even root); made again
    // if it went missing (bwrap refuses to start without it: closed, never open).
    if (!existsSync(file)) writeFileSync(file, '', { mode: 0o000, flag: 'w' });
    return file;
  }

  private proxy(domains: string[]): Promise<FilteringProxy> {
    const key = JSON.stringify(domains);
    let p = this.proxies.get(key);
    if (!p) {
      const socket = path.join(this.privateDir(), `proxy-${this.proxies.size}.sock`);
      // Node's HTTP stack loads only when a registry allows hosts (the root entry loads none).
      p = import('./proxy.js').then(({ FilteringProxy: Proxy }) => Proxy.start(socket, domains));
      this.proxies.set(key, p);
      p.catch(() => this.proxies.delete(key));
    }
    return p;
  }
}

/** Real paths of the ones that exist (a missing allowWrite entry is left out). */
async function realPaths(paths: string[]): Promise<string[]> {
  const out: string[] = [];
  for (const p of paths) {
    const real = await fs.realpath(path.resolve(p)).catch(() => undefined);
    if (real) out.push(real);
  }
  return out;
}

/** Drops hidden paths deleted since the scan: bwrap would create a mount point in their place. */
async function stillThere(h: HiddenPaths): Promise<HiddenPaths> {
  const keep = async (list: string[], dir: boolean) => {
    const checked = await Promise.all(
      list.map(async (p) => {
        const st = await fs.lstat(p).catch(() => undefined);
        return st && !st.isSymbolicLink() && st.isDirectory() === dir ? p : undefined;
      }),
    );
    return checked.filter((p): p is string => p !== undefined);
  };
  return { files: await keep(h.files, false), dirs: await keep(h.dirs, true), truncated: h.truncated };
}

/** The environment inside: no credential-looking variables, HOME and TMPDIR set, the proxy (or none). */
function containedEnv(given: NodeJS.ProcessEnv, home: string, proxy: boolean): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(given)) if (!SANDBOX_SECRET_ENV.test(k) && !/_?proxy$/i.test(k)) env[k] = v;
  env.HOME = home;
  env.TMPDIR = '/tmp';
  if (proxy) {
    const url = proxyUrl();
    for (const k of ['HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY', 'http_proxy', 'https_proxy', 'all_proxy']) env[k] = url;
  }
  return env;
}

/** Finds bwrap (and socat) on PATH and runs a trivial command in a sandbox like the real ones. */
async function probeEngine(): Promise<Probe> {
  if (process.platform !== 'linux')
    return { problem: `the sandbox runs on Linux only (this is ${process.platform}; macOS is not supported yet)` };
  const bwrap = await findExecutable('bwrap');
  const socat = await findExecutable('socat');
  if (!bwrap) return { socat, problem: 'bubblewrap (`bwrap`) was not found on PATH' };
  const problem = await runProbe(bwrap);
  return problem ? { socat, problem } : { bwrap, socat };
}

/** Runs `bwrap ... -- sh -c 'exit 0'`; resolves to the problem, or undefined when it worked. */
function runProbe(bwrap: string): Promise<string | undefined> {
  const args = [
    ...bwrapArguments({
      writable: [],
      hidden: { files: [], dirs: [], truncated: false },
      denyFile: '/dev/null',
      home: '/',
      cwd: '/',
      privateTmp: true,
    }),
    '--',
    '/bin/sh',
    '-c',
    'exit 0',
  ];
  return new Promise((resolve) => {
    let stderr = '';
    let settled = false;
    const done = (problem: string | undefined) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(problem);
    };
    const child = spawn(bwrap, args, { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
    child.stderr.on('data', (c: Buffer) => {
      if (stderr.length < 1000) stderr += c.toString('utf8');
    });
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
      done(`${bwrap} did not finish a trivial command within ${SANDBOX_PROBE_TIMEOUT_MS} ms (the engine hangs)`);
    }, SANDBOX_PROBE_TIMEOUT_MS);
    timer.unref();
    child.once('error', (err) => done(`${bwrap} could not be started (${err.message})`));
    child.once('close', (code, signal) => {
      if (code === 0) return done(undefined);
      const why = stderr.trim().split('\n')[0] || (signal ? `signal ${signal}` : `exit code ${code}`);
      done(`${bwrap} failed a trivial command (${why})`);
    });
  });
}

// Private directories of runtimes not closed before the process exits are removed then.
const liveDirs = new Set<string>();
let cleanupInstalled = false;
function installExitCleanup(): void {
  if (cleanupInstalled) return;
  cleanupInstalled = true;
  process.on('exit', () => {
    for (const d of liveDirs) rmSync(d, { recursive: true, force: true });
  });
}
