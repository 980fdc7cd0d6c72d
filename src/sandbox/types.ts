/**
 * The sandbox's public shapes: the options a registry, an init context, the CLI and
 * `toolbelt.policy.json` give, and the status a registry reports once it has probed the engine.
 * Must not hold behaviour (runtime.ts) nor import anything: tool.ts and the policy types read it.
 */

/** `auto`: contain commands when the engine works, else run them as before and say so once; `required`: refuse without it; `off`: never. */
export type SandboxMode = 'auto' | 'required' | 'off';

/** How bash's commands (and the processes built-in tools start) are contained. */
export interface SandboxOptions {
  /** Default `off` for `createRegistry`, `auto` for the `toolbelt` command. */
  mode?: SandboxMode;
  filesystem?: {
    /** More paths the command may write besides the workspace roots and its private /tmp (`~/` means `home`); naming a protected path (`.git/hooks`) opens it. */
    allowWrite?: string[];
    /**
     * More paths hidden from the command besides the default secret list (`~/.ssh`, `.env*`,
     * `*.pem`, ...): absolute or `~/` paths, or globs (no leading `/`) matched like policy patterns
     * against files found in the workspace roots and the home directory.
     */
    denyRead?: string[];
    /** The home directory whose secrets are hidden and that `~` means; default `$HOME`. */
    home?: string;
  };
  network?: {
    /**
     * Hosts (`example.com`, `*.example.com`, `host:port`) the command may reach through the
     * sandbox's HTTP(S) proxy; empty or absent: no network at all.
     */
    allowedDomains?: string[];
    /**
     * Addresses (CIDRs or single addresses, `127.0.0.1/32`, `10.0.0.0/8`, `::1`) the proxy may
     * connect to although they are not public: by default an allowed name that resolves to a
     * loopback, private, link-local, unspecified or cloud metadata address is refused, as webfetch
     * refuses it (the package's SSRF rules).
     */
    allowAddresses?: string[];
  };
  /**
   * Let a bash command the policy would ask about only because of what the sandbox contains
   * (danger, files it names) run without asking; a deny rule still wins. Default false.
   */
  autoAllow?: boolean;
}

/** What the registry found when it probed the engine; said once (CLI: stderr; events: `sandbox`). */
export interface SandboxStatus {
  /** The mode asked for. */
  mode: SandboxMode;
  /** Whether commands run contained. */
  enabled: boolean;
  /** The engine in use: `bwrap` (bubblewrap), or null when none runs. */
  engine: 'bwrap' | null;
  /** The engine binary found on PATH. */
  enginePath?: string;
  /** `off`: no network; `proxy`: only `allowedDomains` through the filtering proxy. */
  network: 'off' | 'proxy';
  /** One sentence: why the sandbox is off, or what it contains. */
  reason: string;
}
