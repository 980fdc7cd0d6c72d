/**
 * The network address policy (SSRF guard) and a guarded HTTP(S) GET built on it.
 *
 * Three checks, all against one policy:
 * - the URL: scheme (http/https only) and host name (cloud metadata names) or literal IP;
 * - every DNS answer, inside the socket's own `lookup` hook, so the address checked is the address
 *   the socket connects to (a DNS-rebinding host cannot pass the check with one answer and connect
 *   with another);
 * - literal IP hosts before any socket exists (Node skips `lookup` for them).
 * Redirects are followed by src/net/redirects.ts, which sends each hop through `guardedRequest` again.
 * Must not know about tools: any code that connects out asks it, and nothing else decides reachability.
 * Over 400 lines: address policy and the guarded connection must be read together to audit.
 */
import { normaliseHost } from './host.js';
import http from 'node:http';
import https from 'node:https';
import dns from 'node:dns';
import net from 'node:net';
import type { LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import type {} from '../authoring/tool.js';

declare module '../authoring/tool.js' {
  namespace Tool {
    interface InitContext {
      /** Let webfetch (and every tool that connects through this policy) reach loopback/private addresses (off by default; also `TOOLBELT_ALLOW_PRIVATE_NETWORK=1`). */
      allowPrivateNetwork?: boolean;
      /** The address policy: `{ allowPrivateNetwork?, allow?: CIDR[], deny?: CIDR[] }` (see docs/security.md). */
      ssrfPolicy?: { allowPrivateNetwork?: boolean; allow?: string[]; deny?: string[] };
    }
  }
}

type IP = ipaddr.IPv4 | ipaddr.IPv6;

/** Which addresses a request may reach. The default (`{}`) allows public internet addresses only. */
export interface SsrfPolicy {
  /**
   * Allow non-public addresses (loopback, private, link-local, CGNAT, ULA, ...). Cloud metadata
   * endpoints stay blocked even then; list them in `allow` to reach them on purpose.
   */
  allowPrivateNetwork?: boolean;
  /** CIDRs (or single addresses) always allowed, e.g. `['127.0.0.1/32']`. Checked after `deny`. */
  allow?: string[];
  /** CIDRs (or single addresses) always blocked, even public ones. Checked first. */
  deny?: string[];
}

/** The outcome of checking one address or host against a policy. */
export interface Verdict {
  allowed: boolean;
  /** The address or host name that was checked (normalised). */
  address: string;
  /** Why: `public`, `allowed by policy`, or the blocked category with its range. */
  reason: string;
  /** The blocked category (`loopback`, `private`, `cloud metadata`, ...); absent when allowed. */
  category?: string;
}

/** Thrown when the policy refuses a URL, a host or a resolved address. No traffic was sent to it. */
export class BlockedAddressError extends Error {
  constructor(
    readonly url: string,
    readonly verdict: Verdict,
    readonly host?: string,
  ) {
    const via = host && host !== verdict.address ? `${host} resolved to ${verdict.address}, which` : verdict.address;
    const how =
      verdict.category === 'cloud metadata'
        ? 'Cloud metadata endpoints stay blocked even with allowPrivateNetwork; only an explicit `allow` entry in the SSRF policy reaches them.'
        : verdict.category === 'scheme'
          ? 'Use an http:// or https:// URL.'
          : 'Fetch a public URL instead; if this host is trusted, set `allowPrivateNetwork: true` in the tool init context (or TOOLBELT_ALLOW_PRIVATE_NETWORK=1).';
    super(`Blocked request to ${url}: ${via} is ${verdict.reason}. No connection was made. ${how}`);
    this.name = 'BlockedAddressError';
  }
}

/** Host names of cloud metadata services; blocked by name before any DNS query. */
export const METADATA_HOSTNAMES: readonly string[] = [
  'metadata',
  'metadata.google.internal',
  'metadata.goog',
  'instance-data',
  'instance-data.ec2.internal',
  'metadata.azure.internal',
  'metadata.tencentyun.com',
  'metadata.platformequinix.com',
];

/** Cloud metadata addresses: blocked even with `allowPrivateNetwork` (only an explicit `allow` entry passes). */
export const METADATA_CIDRS: readonly string[] = [
  '169.254.169.254/32', // AWS, GCP, Azure, OCI, DigitalOcean, OpenStack
  '169.254.170.2/32', // AWS ECS task metadata
  '169.254.169.253/32', // AWS VPC DNS
  '169.254.0.23/32', // Tencent Cloud
  '100.100.100.200/32', // Alibaba Cloud
  '168.63.129.16/32', // Azure WireServer (a public-looking address reachable only from Azure VMs)
  '192.0.0.192/32', // Oracle Cloud classic
  'fd00:ec2::254/128', // AWS IMDS over IPv6
  'fd00:ec2::23/128', // AWS Time Sync / DNS over IPv6
];

/** ipaddr.js range names that are public internet addresses. Everything else is blocked by default. */
const PUBLIC_V4_RANGES = new Set(['unicast', 'as112', 'amt']);
/** IPv6 global unicast space (RFC 4291); `unicast` addresses outside it are unassigned. */
const GLOBAL_UNICAST_V6 = ipaddr.IPv6.parseCIDR('2000::/3');
const IPV4_COMPATIBLE_V6 = ipaddr.IPv6.parseCIDR('::/96');
const NAT64_WELL_KNOWN = ipaddr.IPv6.parseCIDR('64:ff9b::/96');

/** Human labels for ipaddr.js range names, with the range itself so a reader can check it. */
const RANGE_LABELS: Record<string, string> = {
  'ipv4:unspecified': 'an unspecified address (0.0.0.0/8)',
  'ipv4:broadcast': 'the broadcast address (255.255.255.255)',
  'ipv4:multicast': 'a multicast address (224.0.0.0/4)',
  'ipv4:linkLocal': 'a link-local address (169.254.0.0/16)',
  'ipv4:loopback': 'a loopback address (127.0.0.0/8)',
  'ipv4:carrierGradeNat': 'a carrier-grade NAT address (100.64.0.0/10)',
  'ipv4:private': 'a private address (10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16)',
  'ipv4:reserved': 'a reserved address (192.0.0.0/24, documentation, benchmarking 198.18.0.0/15 or 240.0.0.0/4)',
  'ipv6:unspecified': 'the unspecified address (::)',
  'ipv6:linkLocal': 'a link-local address (fe80::/10)',
  'ipv6:multicast': 'a multicast address (ff00::/8)',
  'ipv6:loopback': 'the loopback address (::1)',
  'ipv6:uniqueLocal': 'a unique local address (fc00::/7)',
  'ipv6:deprecatedSiteLocal': 'a site-local address (fec0::/10)',
  'ipv6:discard': 'a discard-only address (100::/64)',
  'ipv6:rfc6052': 'a local-use NAT64 address (64:ff9b:1::/48)',
  'ipv6:reserved': 'a reserved address (2001::/23, 2001:db8::/32 documentation)',
  'ipv6:segmentRouting': 'a segment-routing address (5f00::/16)',
};

/** The category names used in verdicts (what `Verdict.category` holds for each ipaddr.js range). */
const RANGE_CATEGORIES: Record<string, string> = {
  unspecified: 'unspecified',
  broadcast: 'broadcast',
  multicast: 'multicast',
  linkLocal: 'link-local',
  loopback: 'loopback',
  carrierGradeNat: 'cgnat',
  private: 'private',
  uniqueLocal: 'private',
  deprecatedSiteLocal: 'private',
};

/** A policy with its CIDR lists parsed once. */
export interface CompiledPolicy {
  readonly allowPrivateNetwork: boolean;
  readonly allow: ReadonlyArray<[IP, number]>;
  readonly deny: ReadonlyArray<[IP, number]>;
  readonly source: SsrfPolicy;
}

const METADATA_RANGES = METADATA_CIDRS.map((c) => ipaddr.parseCIDR(c));

/** Parses a policy's CIDR lists; a bad entry is an error naming it. */
export function compilePolicy(policy: SsrfPolicy | CompiledPolicy = {}): CompiledPolicy {
  if (isCompiled(policy)) return policy;
  const parse = (list: string[] | undefined, field: string): Array<[IP, number]> =>
    (list ?? []).map((entry) => {
      try {
        if (entry.includes('/')) return ipaddr.parseCIDR(entry);
        const ip = ipaddr.parse(entry);
        return [ip, ip.kind() === 'ipv4' ? 32 : 128];
      } catch {
        throw new Error(
          `SSRF policy: ${field} entry ${JSON.stringify(entry)} is not an IP address or CIDR (e.g. "127.0.0.1/32", "fd00::/8").`,
        );
      }
    });
  return {
    allowPrivateNetwork: policy.allowPrivateNetwork === true,
    allow: parse(policy.allow, 'allow'),
    deny: parse(policy.deny, 'deny'),
    source: policy,
  };
}

function isCompiled(p: SsrfPolicy | CompiledPolicy): p is CompiledPolicy {
  return Array.isArray((p as CompiledPolicy).allow) && 'source' in p;
}

/** The policy for a tool's init context: `allowPrivateNetwork`, `TOOLBELT_ALLOW_PRIVATE_NETWORK=1`, and an optional `ssrfPolicy`. */
export function policyFromInitContext(
  initCtx: { allowPrivateNetwork?: boolean; ssrfPolicy?: unknown } = {},
): CompiledPolicy {
  const extra = (initCtx.ssrfPolicy && typeof initCtx.ssrfPolicy === 'object' ? initCtx.ssrfPolicy : {}) as SsrfPolicy;
  const env = process.env.TOOLBELT_ALLOW_PRIVATE_NETWORK;
  const envAllows = env === '1' || env?.toLowerCase() === 'true';
  return compilePolicy({
    ...extra,
    allowPrivateNetwork: initCtx.allowPrivateNetwork === true || extra.allowPrivateNetwork === true || envAllows,
  });
}

function inAny(ip: IP, ranges: ReadonlyArray<[IP, number]>): boolean {
  return ranges.some(([net, bits]) => net.kind() === ip.kind() && ip.match(net, bits));
}

/** Checks one IP address (v4 or v6, any textual form ipaddr.js parses) against the policy. */
export function checkAddress(address: string, policy: SsrfPolicy | CompiledPolicy = {}): Verdict {
  const compiled = compilePolicy(policy);
  const text = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  let ip: IP;
  try {
    ip = ipaddr.parse(dottedTailToHex(text));
  } catch {
    return { allowed: false, address: text, reason: 'not a valid IP address', category: 'invalid' };
  }
  return checkIp(ip, compiled, '');
}

function checkIp(ip: IP, policy: CompiledPolicy, via: string): Verdict {
  const address = ip.kind() === 'ipv6' ? (ip as ipaddr.IPv6).toRFC5952String() : ip.toString();
  const block = (category: string, label: string): Verdict => ({
    allowed: false,
    address,
    reason: via + label,
    category,
  });
  if (inAny(ip, policy.deny)) return block('denied', 'denied by the SSRF policy');
  if (inAny(ip, policy.allow)) return { allowed: true, address, reason: 'allowed by the SSRF policy' };
  if (inAny(ip, METADATA_RANGES)) return block('cloud metadata', 'a cloud metadata endpoint');

  if (ip.kind() === 'ipv4') {
    const range = ip.range();
    if (PUBLIC_V4_RANGES.has(range)) return { allowed: true, address, reason: via + 'public' };
    const verdict = block(
      RANGE_CATEGORIES[range] ?? 'reserved',
      RANGE_LABELS[`ipv4:${range}`] ?? `a non-public address (${range})`,
    );
    return policy.allowPrivateNetwork
      ? { ...verdict, allowed: true, category: undefined, reason: `${verdict.reason}, allowed by allowPrivateNetwork` }
      : verdict;
  }

  const v6 = ip as ipaddr.IPv6;
  // Forms that carry an IPv4 address: the IPv4 address decides (a public one stays reachable,
  // e.g. through NAT64), except the deprecated IPv4-compatible form, which is never needed.
  const embedded = embeddedIPv4(v6);
  if (embedded) {
    const inner = checkIp(embedded.ip, policy, `${embedded.form} of ${embedded.ip.toString()}: `);
    if (embedded.form === 'the IPv4-compatible form' && inner.allowed && !inAny(embedded.ip, policy.allow)) {
      return block('reserved', 'a deprecated IPv4-compatible IPv6 address (::/96)');
    }
    return { ...inner, address };
  }
  if (v6.range() === 'teredo') {
    // Teredo carries two IPv4 addresses: the server, and the client with its bits inverted.
    const server = new ipaddr.IPv4([v6.parts[2] >> 8, v6.parts[2] & 0xff, v6.parts[3] >> 8, v6.parts[3] & 0xff]);
    const c6 = ~v6.parts[6] & 0xffff;
    const c7 = ~v6.parts[7] & 0xffff;
    const client = new ipaddr.IPv4([c6 >> 8, c6 & 0xff, c7 >> 8, c7 & 0xff]);
    for (const [role, v4] of [
      ['server', server],
      ['client', client],
    ] as const) {
      const inner = checkIp(v4, policy, `a Teredo address whose ${role} is ${v4.toString()}: `);
      if (!inner.allowed) return { ...inner, address };
    }
    return { allowed: true, address, reason: via + 'public (Teredo)' };
  }
  const range = v6.range();
  if (range === 'unicast' && v6.match(GLOBAL_UNICAST_V6)) return { allowed: true, address, reason: via + 'public' };
  const label =
    RANGE_LABELS[`ipv6:${range}`] ??
    (range === 'unicast' ? 'outside the global unicast range 2000::/3' : `a special-purpose address (${range})`);
  const verdict = block(RANGE_CATEGORIES[range] ?? 'reserved', label);
  return policy.allowPrivateNetwork
    ? { ...verdict, allowed: true, category: undefined, reason: `${verdict.reason}, allowed by allowPrivateNetwork` }
    : verdict;
}

/**
 * Rewrites an IPv6 address's dotted-quad tail as two hex groups (`::8.8.8.8` -> `::808:808`):
 * ipaddr.js reads every `::a.b.c.d` as IPv4-mapped, which would hide the IPv4-compatible form.
 */
function dottedTailToHex(text: string): string {
  const m = /^(.*:)(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(%.*)?$/.exec(text);
  if (!m || m.slice(2, 6).some((o) => Number(o) > 255)) return text;
  const [a, b, c, d] = m.slice(2, 6).map(Number);
  return `${m[1]}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}${m[6] ?? ''}`;
}

/** The IPv4 address inside an IPv4-mapped, IPv4-translated, IPv4-compatible, NAT64 or 6to4 address. */
function embeddedIPv4(v6: ipaddr.IPv6): { ip: ipaddr.IPv4; form: string } | undefined {
  const p = v6.parts;
  const v4 = (hi: number, lo: number) => new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
  const range = v6.range();
  if (range === 'ipv4Mapped') return { ip: v6.toIPv4Address(), form: 'the IPv4-mapped form' };
  if (range === 'rfc6145') return { ip: v4(p[6], p[7]), form: 'the IPv4-translated form' };
  if (range === 'rfc6052' && v6.match(NAT64_WELL_KNOWN)) return { ip: v4(p[6], p[7]), form: 'the NAT64 form' };
  if (range === '6to4') return { ip: v4(p[1], p[2]), form: 'the 6to4 form' };
  // ::/96 minus :: and ::1, which keep their own meaning.
  if (v6.match(IPV4_COMPATIBLE_V6) && (p[6] !== 0 || p[7] > 1))
    return { ip: v4(p[6], p[7]), form: 'the IPv4-compatible form' };
  return undefined;
}

export { normaliseHost } from './host.js';

/**
 * Checks a host before any DNS query: a literal IP is checked as an address; a name is refused when
 * it is a cloud metadata name. Other names are allowed here and checked again on every DNS answer.
 */
export function checkHost(host: string, policy: SsrfPolicy | CompiledPolicy = {}): Verdict {
  const h = normaliseHost(host);
  if (net.isIP(h)) return checkAddress(h, policy);
  if (!h) return { allowed: false, address: host, reason: 'an empty host name', category: 'invalid' };
  if (METADATA_HOSTNAMES.includes(h))
    return { allowed: false, address: h, reason: 'a cloud metadata host name', category: 'cloud metadata' };
  return { allowed: true, address: h, reason: 'a host name (its addresses are checked when it is resolved)' };
}

/** Checks a URL's scheme and host; throws `BlockedAddressError` when the policy refuses it. */
export function assertUrlAllowed(url: URL, policy: SsrfPolicy | CompiledPolicy = {}): void {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new BlockedAddressError(url.href, {
      allowed: false,
      address: url.protocol,
      reason: 'not a supported scheme (only http: and https: are fetched)',
      category: 'scheme',
    });
  }
  const verdict = checkHost(url.hostname, policy);
  if (!verdict.allowed) throw new BlockedAddressError(url.href, verdict);
}

/** One DNS answer. */
export interface ResolvedAddress {
  address: string;
  family: number;
}

/** Resolves a host name to all its addresses (the default is `dns.lookup`, which honours /etc/hosts). */
export type Resolver = (hostname: string, family: number) => Promise<ResolvedAddress[]>;

const systemResolver: Resolver = (hostname, family) =>
  new Promise((resolve, reject) => {
    dns.lookup(hostname, { all: true, family: family, verbatim: true }, (err, addresses) =>
      err ? reject(err) : resolve(addresses),
    );
  });

/**
 * A `lookup` for `net.connect`/`http.request`: resolves, drops every answer the policy blocks and
 * hands the socket only allowed ones, so the connected address is always a checked one.
 * Fails with `BlockedAddressError` when no answer is allowed.
 */
export function guardedLookup(
  policy: SsrfPolicy | CompiledPolicy = {},
  url = '',
  resolver: Resolver = systemResolver,
): LookupFunction {
  const compiled = compilePolicy(policy);
  return ((hostname: string, options: dns.LookupOptions, callback: (...args: unknown[]) => void) => {
    const family =
      typeof options?.family === 'number'
        ? options.family
        : options?.family === 'IPv6'
          ? 6
          : options?.family === 'IPv4'
            ? 4
            : 0;
    resolver(hostname, family).then(
      (answers) => {
        const verdicts = answers.map((a) => ({ a, v: checkAddress(a.address, compiled) }));
        const allowed = verdicts.filter((x) => x.v.allowed).map((x) => x.a);
        if (allowed.length === 0) {
          const first = verdicts[0]?.v ?? {
            allowed: false,
            address: hostname,
            reason: 'a host with no addresses',
            category: 'invalid',
          };
          callback(new BlockedAddressError(url || hostname, first, hostname));
          return;
        }
        if (options?.all) callback(null, allowed);
        else callback(null, allowed[0].address, allowed[0].family);
      },
      (err: unknown) => callback(err),
    );
  }) as LookupFunction;
}

/** Options for one guarded GET. */
export interface GuardedGetOptions {
  policy?: SsrfPolicy | CompiledPolicy;
  headers?: Record<string, string>;
  /** Aborts the request and its response body. */
  signal?: AbortSignal;
  /** DNS resolver (default `dns.lookup`); a test or a custom resolver may replace it. */
  resolver?: Resolver;
}

/** Options for one guarded request of any method. */
export interface GuardedRequestOptions extends GuardedGetOptions {
  /** HTTP method (default GET). */
  method?: string;
  /** The request body, sent as is. */
  body?: Buffer;
}

/**
 * Sends one GET to `url` with the SSRF guard applied (scheme, host name, literal IP, every DNS
 * answer) and resolves with the response once its headers arrive. Does not follow redirects.
 * A fresh connection each time (no agent pool), so no socket is reused across hosts.
 */
export function guardedGet(url: URL, options: GuardedGetOptions = {}): Promise<http.IncomingMessage> {
  return guardedRequest(url, options);
}

/** `guardedGet` for any method, with an optional body: the same checks, no redirects followed. */
export async function guardedRequest(url: URL, options: GuardedRequestOptions = {}): Promise<http.IncomingMessage> {
  const policy = compilePolicy(options.policy);
  assertUrlAllowed(url, policy);
  const mod = url.protocol === 'https:' ? https : http;
  const host = normaliseHost(url.hostname);
  return new Promise((resolve, reject) => {
    const req = mod.request({
      protocol: url.protocol,
      hostname: host,
      port: url.port || undefined,
      path: `${url.pathname}${url.search}`,
      method: options.method ?? 'GET',
      headers: options.headers,
      agent: false,
      signal: options.signal,
      lookup: guardedLookup(policy, url.href, options.resolver),
      ...(url.username ? { auth: `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}` } : {}),
      ...(url.protocol === 'https:' && !net.isIP(host) ? { servername: host } : {}),
    });
    req.once('response', resolve);
    req.once('error', reject);
    req.end(options.body);
  });
}
