/**
 * The sandbox of one registry: finds bubblewrap on PATH and probes it once (a trivial command),
 * decides from the mode whether commands run contained, keeps the private directory (the
 * unreadable mask file, the proxy socket), the filtering proxy and the list of hidden secrets,
 * and turns a command into the bwrap command line that contains it.
 * Must not collect output or kill processes (the tools do, through process groups), nor build
 * bwrap's arguments itself (bwrap.ts) or scan for secrets (secrets.ts).
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, promises as fs, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type {} from '../authoring/tool.js';
import type { Tool } from '../authoring/tool.js';
import { bwrapArguments, innerCommand, normaliseRoots } from './bwrap.js';
import { probeEngine, type Probe } from './probe.js';
import { containedEnv } from './env.js';
import {
  absentUnblockable,
  liveDirs,
  installExitCleanup,
  holdPlaceholders,
  placeholderUsers,
  readTmpReport,
  releasePlaceholders,
  undoUnblockable,
} from './leftovers.js';
import { findHiddenPaths, stillThere, type HiddenPaths } from './secrets.js';
import type { FilteringProxy } from './proxy.js';
import { sandboxNote } from './explain.js';
import { findProtectedPaths, pinnedDirectories } from './protect.js';
import type { SandboxMode, SandboxOptions, SandboxStatus } from './types.js';

declare module '../authoring/tool.js' {
  namespace Tool {
    interface InitContext {
      /** The OS sandbox for bash and the processes built-in tools start; overrides the registry's `sandbox` field by field. */
      sandbox?: SandboxOptions;
    }
  }
}

export { SANDBOX_PROBE_TIMEOUT_MS } from './probe.js';
/** How long a scan for secret files is reused before the next command scans again, in ms. */
export const SECRET_SCAN_TTL_MS = 10_000;
/** What installs the engine, named in the `required` refusal. */
export const BWRAP_INSTALL_HINT =
  'install the bubblewrap package (Debian/Ubuntu: `sudo apt-get install bubblewrap`; Fedora: `sudo dnf install bubblewrap`)';
const SOCAT_INSTALL_HINT =
  'install the socat package (Debian/Ubuntu: `sudo apt-get install socat`; Fedora: `sudo dnf install socat`)';

/** A command line that runs one command contained, and what explains its refusals. */
export interface ContainedCommand {
  file: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  /**
   * The note to append to a command's output, if the sandbox refused something: every refusal when
   * the command failed, only writes to protected paths (and moves of what stays in place) when it
   * did not (a `cmd; true` must not hide them).
   */
  explain(output: string, failed?: boolean): string | undefined;
  /**
   * Call once when the process has ended: removes the placeholders that blocked missing protected
   * paths (when no other command of this process still needs them), undoes what no placeholder can
   * block, and returns the line to add to the result (files the command left in its private /tmp
   * under a path the host has, a protected file it created), or undefined.
   */
  finished(): Promise<string | undefined>;
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
    const allowWrite = await realPaths(expandHome(options.filesystem?.allowWrite ?? [], home));
    const roots = normaliseRoots(await realPaths(request.roots));
    const writable = normaliseRoots([...roots, ...allowWrite]);
    const hidden = await this.hidden(writable, home, options.filesystem?.denyRead ?? []);
    const protect = await findProtectedPaths({
      writable,
      roots,
      home,
      repositories: hidden.repositories ?? [],
      allowWrite,
      placeholder: (p) => placeholderUsers.has(p),
    });
    const absent = await absentUnblockable(hidden.repositories ?? [], roots, writable);
    const pinned = pinnedDirectories(
      [...hidden.files, ...hidden.dirs, ...protect.existing, ...protect.missing, ...absent],
      writable,
    );
    const domains = status.network === 'proxy' ? (options.network?.allowedDomains ?? []) : [];
    const proxy = domains.length ? await this.proxy(domains, options.network?.allowAddresses ?? []) : undefined;
    const report = this.tmpReportFile();
    const placeholders = holdPlaceholders(protect.missing);
    const args = bwrapArguments({
      writable,
      hidden,
      denyFile: this.denyFile(),
      home,
      cwd: request.cwd,
      privateTmp: true,
      proxySocket: proxy?.socketPath,
      pinned,
      protect,
      emptyDir: this.emptyDir(),
      reopen: protect.reopen,
      tmpReport: report,
    });
    const env = containedEnv(request.env, home, proxy !== undefined);
    let done: Promise<string | undefined> | undefined;
    const protectedAll = [...protect.existing, ...protect.missing, ...absent];
    return {
      file: probe.bwrap!,
      args: [
        ...args,
        '--',
        ...innerCommand(request.shell, request.command, proxy ? { socat: probe.socat! } : undefined, true),
      ],
      env,
      explain: (output, failed = true) =>
        sandboxNote(
          output,
          { cwd: request.cwd, writable, hidden, allowedDomains: domains, protected: protectedAll },
          failed,
        ),
      finished: () =>
        (done ??= (async () => {
          const [, undone, lost] = await Promise.all([
            releasePlaceholders(placeholders),
            undoUnblockable(absent),
            readTmpReport(report, writable),
          ]);
          const lines = [undone, lost].filter((l): l is string => l !== undefined);
          return lines.length ? lines.join('\n') : undefined;
        })()),
    };
  }

  /** Whether `p` (absolute, or relative to the first root) is one of the paths hidden for commands run with these roots and options. */
  async isHidden(p: string, roots: string[], options: SandboxOptions): Promise<boolean> {
    const status = await this.status(options);
    if (!status.enabled) return false;
    const home = this.home(options);
    const allowWrite = await realPaths(expandHome(options.filesystem?.allowWrite ?? [], home));
    const writable = normaliseRoots([...(await realPaths(roots)), ...allowWrite]);
    const hidden = await this.hidden(writable, home, options.filesystem?.denyRead ?? []);
    const abs = path.resolve(roots[0] ?? process.cwd(), p);
    const real = await fs.realpath(abs).catch(() => undefined);
    return [abs, real].some(
      (x) => x !== undefined && (hidden.files.includes(x) || hidden.dirs.some((d) => x === d || x.startsWith(`${d}/`))),
    );
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

  /**
   * The paths to hide: the last scan while it is fresh (SECRET_SCAN_TTL_MS) and every path it hid is
   * still there; a new scan as soon as one vanished (moved on the host, by a file tool or the user),
   * so a moved secret is found at its new path by the next command, not 10 s later.
   */
  private async hidden(roots: string[], home: string, denyRead: readonly string[]): Promise<HiddenPaths> {
    const key = JSON.stringify([roots, home, denyRead]);
    const fresh = () => {
      const made = { at: Date.now(), hidden: findHiddenPaths({ roots, home, denyRead }) };
      this.scans.set(key, made);
      return made;
    };
    let scan = this.scans.get(key);
    if (!scan || Date.now() - scan.at > SECRET_SCAN_TTL_MS) scan = fresh();
    const found = await scan.hidden;
    const there = await stillThere(found);
    if (there.files.length === found.files.length && there.dirs.length === found.dirs.length) return there;
    if (this.scans.get(key) === scan) scan = fresh();
    return stillThere(await (this.scans.get(key) ?? scan).hidden);
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

  /** An empty, read-only directory: the placeholder mounted where a missing protected path would be made. */
  private emptyDir(): string {
    const dir = path.join(this.privateDir(), 'empty');
    if (!existsSync(dir)) mkdirSync(dir, { mode: 0o555 });
    return dir;
  }

  /** A new, empty file for one command's /tmp report. */
  private tmpReportFile(): string {
    const file = path.join(this.privateDir(), `tmp-${randomBytes(6).toString('hex')}`);
    writeFileSync(file, '', { mode: 0o600 });
    return file;
  }

  private proxy(domains: string[], allowAddresses: string[]): Promise<FilteringProxy> {
    const key = JSON.stringify([domains, allowAddresses]);
    let p = this.proxies.get(key);
    if (!p) {
      const socket = path.join(this.privateDir(), `proxy-${this.proxies.size}.sock`);
      // Node's HTTP stack loads only when a registry allows hosts (the root entry loads none).
      p = import('./proxy.js').then(({ FilteringProxy: Proxy }) => Proxy.start(socket, domains, allowAddresses));
      this.proxies.set(key, p);
      p.catch(() => this.proxies.delete(key));
    }
    return p;
  }
}

/** `~` and `~/x` entries under the sandbox's home directory. */
function expandHome(paths: string[], home: string): string[] {
  return paths.map((p) => (p === '~' || p.startsWith('~/') ? path.join(home, p.slice(1)) : p));
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
