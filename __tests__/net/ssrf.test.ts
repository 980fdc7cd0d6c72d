import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  checkAddress,
  checkHost,
  compilePolicy,
  assertUrlAllowed,
  guardedGet,
  policyFromInitContext,
  BlockedAddressError,
  type Resolver,
} from '../../src/net/ssrf.js';
import { duplicates, recordClientConnections } from '../support/helpers.js';

// Every client socket this suite opens must go to loopback: record them all.
const sockets = recordClientConnections();
const connectedTo = sockets.addresses;

type Row = [input: string, allowed: boolean, category: string];

// [address, allowed under the default policy, expected category when blocked]
const ADDRESSES: Row[] = [
  ['8.8.8.8', true, ''],
  ['1.1.1.1', true, ''],
  ['93.184.216.34', true, ''],
  ['172.15.255.255', true, ''], // just below 172.16/12
  ['172.32.0.0', true, ''], // just above 172.16/12
  ['100.63.255.255', true, ''], // just below 100.64/10
  ['100.128.0.0', true, ''], // just above 100.64/10
  ['169.253.255.255', true, ''],
  ['11.0.0.0', true, ''],
  ['192.169.0.1', true, ''],
  ['127.0.0.1', false, 'loopback'],
  ['127.255.255.254', false, 'loopback'],
  ['10.0.0.1', false, 'private'],
  ['10.255.255.255', false, 'private'],
  ['172.16.0.0', false, 'private'],
  ['172.31.255.255', false, 'private'],
  ['192.168.1.1', false, 'private'],
  ['169.254.169.254', false, 'cloud metadata'],
  ['169.254.170.2', false, 'cloud metadata'],
  ['169.254.1.1', false, 'link-local'],
  ['100.64.0.1', false, 'cgnat'],
  ['100.127.255.255', false, 'cgnat'],
  ['100.100.100.200', false, 'cloud metadata'],
  ['168.63.129.16', false, 'cloud metadata'],
  ['0.0.0.0', false, 'unspecified'],
  ['0.1.2.3', false, 'unspecified'],
  ['255.255.255.255', false, 'broadcast'],
  ['224.0.0.1', false, 'multicast'],
  ['239.255.255.250', false, 'multicast'],
  ['240.0.0.1', false, 'reserved'],
  ['192.0.2.1', false, 'reserved'],
  ['198.18.0.1', false, 'reserved'],
  // IPv6
  ['2606:4700:4700::1111', true, ''],
  ['2001:4860:4860::8888', true, ''],
  ['::1', false, 'loopback'],
  ['::', false, 'unspecified'],
  ['fc00::1', false, 'private'],
  ['fd12:3456:789a::1', false, 'private'],
  ['fe80::1', false, 'link-local'],
  ['fe80::1%eth0', false, 'link-local'],
  ['febf::1', false, 'link-local'],
  ['fec0::1', false, 'private'],
  ['ff02::1', false, 'multicast'],
  ['fd00:ec2::254', false, 'cloud metadata'],
  ['2001:db8::1', false, 'reserved'],
  ['100::1', false, 'reserved'],
  ['4000::1', false, 'reserved'], // outside 2000::/3
  // IPv4 inside IPv6
  ['::ffff:127.0.0.1', false, 'loopback'],
  ['::ffff:7f00:1', false, 'loopback'],
  ['::ffff:10.0.0.1', false, 'private'],
  ['::ffff:169.254.169.254', false, 'cloud metadata'],
  ['::ffff:8.8.8.8', true, ''],
  ['::ffff:0:7f00:1', false, 'loopback'], // IPv4-translated (RFC 6145)
  ['::127.0.0.1', false, 'loopback'], // IPv4-compatible
  ['::7f00:1', false, 'loopback'], // IPv4-compatible, hex
  ['::8.8.8.8', false, 'reserved'], // IPv4-compatible is deprecated even when public
  ['64:ff9b::7f00:1', false, 'loopback'], // NAT64 of 127.0.0.1
  ['64:ff9b::a9fe:a9fe', false, 'cloud metadata'], // NAT64 of 169.254.169.254
  ['64:ff9b::808:808', true, ''], // NAT64 of 8.8.8.8
  ['64:ff9b:1::1', false, 'reserved'], // local-use NAT64
  ['2002:7f00:1::', false, 'loopback'], // 6to4 of 127.0.0.1
  ['2002:c0a8:101::1', false, 'private'], // 6to4 of 192.168.1.1
  ['2002:808:808::1', true, ''], // 6to4 of 8.8.8.8
  ['2001:0:4136:e378:8000:63bf:f7f7:f7f7', true, ''], // Teredo, server 65.54.227.120, client 8.8.8.8
  ['2001:0:4136:e378:8000:63bf:3fff:fdd2', false, 'reserved'], // Teredo whose client is 192.0.2.45 (documentation)
  ['2001:0:7f00:1::', false, 'loopback'], // Teredo whose server is 127.0.0.1
  ['2001:0:4136:e378:8000:63bf:f5ff:fefe', false, 'private'], // Teredo whose client is 10.0.1.1
];

const HOSTS: Row[] = [
  ['example.com', true, ''],
  ['metadata.google.internal', false, 'cloud metadata'],
  ['METADATA.GOOGLE.INTERNAL.', false, 'cloud metadata'],
  ['metadata', false, 'cloud metadata'],
  ['metadata.goog', false, 'cloud metadata'],
  ['instance-data', false, 'cloud metadata'],
  ['instance-data.ec2.internal', false, 'cloud metadata'],
  ['[::1]', false, 'loopback'],
  ['[::ffff:7f00:1]', false, 'loopback'],
  ['127.0.0.1', false, 'loopback'],
  ['', false, 'invalid'],
];

describe('checkAddress: the default policy', () => {
  it('has a table of 40+ addresses, each listed once, each refusal with its category', () => {
    expect({ addresses: duplicates(ADDRESSES.map((r) => r[0])), hosts: duplicates(HOSTS.map((r) => r[0])) }).toEqual({
      addresses: [],
      hosts: [],
    });
    // An allowed row has no category; a refused one names the category the check must give.
    expect([...ADDRESSES, ...HOSTS].filter(([, allowed, category]) => allowed === (category !== ''))).toEqual([]);
    expect(ADDRESSES.length + HOSTS.length).toBeGreaterThanOrEqual(40);
  });

  it.each(ADDRESSES)('%s -> allowed=%s (%s)', (input, allowed, category) => {
    const v = checkAddress(input);
    expect(v.allowed).toBe(allowed);
    if (!allowed) expect(v.category).toBe(category);
    expect(v.reason.length).toBeGreaterThan(0);
  });

  it('rejects what is not an IP address', () => {
    expect(checkAddress('not-an-ip')).toMatchObject({ allowed: false, category: 'invalid' });
  });
});

describe('checkHost', () => {
  it.each(HOSTS)('%s -> allowed=%s (%s)', (input, allowed, category) => {
    const v = checkHost(input);
    expect(v.allowed).toBe(allowed);
    if (!allowed) expect(v.category).toBe(category);
  });

  it('names the embedded address in the reason for mapped forms', () => {
    expect(checkAddress('::ffff:7f00:1').reason).toMatch(/IPv4-mapped form of 127\.0\.0\.1: a loopback address/);
    expect(checkAddress('2002:c0a8:101::1').reason).toMatch(/6to4 form of 192\.168\.1\.1/);
  });
});

describe('policy options', () => {
  it('allowPrivateNetwork allows private and loopback addresses but never cloud metadata', () => {
    const p = { allowPrivateNetwork: true };
    for (const a of ['127.0.0.1', '10.0.0.1', '192.168.0.1', '::1', 'fd00::1', '100.64.0.1', '::ffff:10.0.0.1']) {
      expect([a, checkAddress(a, p).allowed]).toEqual([a, true]);
    }
    for (const a of ['169.254.169.254', '::ffff:169.254.169.254', 'fd00:ec2::254', '64:ff9b::a9fe:a9fe']) {
      expect([a, checkAddress(a, p).allowed]).toEqual([a, false]);
    }
    expect(checkHost('metadata.google.internal', p).allowed).toBe(false);
  });

  it('allow opens exactly the listed range, nothing next to it', () => {
    const p = compilePolicy({ allow: ['127.0.0.1/32'] });
    expect(checkAddress('127.0.0.1', p)).toMatchObject({ allowed: true, reason: 'allowed by the SSRF policy' });
    expect(checkAddress('127.0.0.2', p).allowed).toBe(false);
    expect(checkAddress('10.0.0.1', p).allowed).toBe(false);
    expect(checkAddress('169.254.169.254', p).allowed).toBe(false);
    // The mapped form of an allowed address is the same address.
    expect(checkAddress('::ffff:127.0.0.1', p).allowed).toBe(true);
    // An explicit allow entry is the only way to reach a metadata address.
    expect(checkAddress('169.254.169.254', { allow: ['169.254.169.254'] }).allowed).toBe(true);
  });

  it('deny wins over allow and over public', () => {
    const p = { allow: ['8.8.8.0/24'], deny: ['8.8.8.8/32', '1.1.1.1'] };
    expect(checkAddress('8.8.8.8', p)).toMatchObject({ allowed: false, category: 'denied' });
    expect(checkAddress('8.8.8.9', p).allowed).toBe(true);
    expect(checkAddress('1.1.1.1', p).allowed).toBe(false);
  });

  it('a malformed CIDR is a clear error naming it', () => {
    expect(() => compilePolicy({ allow: ['10.0.0.0/99'] })).toThrow(
      /allow entry "10\.0\.0\.0\/99" is not an IP address or CIDR/,
    );
  });

  it('policyFromInitContext reads allowPrivateNetwork, the environment variable and ssrfPolicy', () => {
    const saved = process.env.TOOLBELT_ALLOW_PRIVATE_NETWORK;
    try {
      delete process.env.TOOLBELT_ALLOW_PRIVATE_NETWORK;
      expect(policyFromInitContext({}).allowPrivateNetwork).toBe(false);
      expect(policyFromInitContext({ allowPrivateNetwork: true }).allowPrivateNetwork).toBe(true);
      expect(policyFromInitContext({ ssrfPolicy: { deny: ['8.8.8.8'] } }).deny).toHaveLength(1);
      process.env.TOOLBELT_ALLOW_PRIVATE_NETWORK = '1';
      expect(policyFromInitContext({}).allowPrivateNetwork).toBe(true);
      process.env.TOOLBELT_ALLOW_PRIVATE_NETWORK = '0';
      expect(policyFromInitContext({}).allowPrivateNetwork).toBe(false);
    } finally {
      if (saved === undefined) delete process.env.TOOLBELT_ALLOW_PRIVATE_NETWORK;
      else process.env.TOOLBELT_ALLOW_PRIVATE_NETWORK = saved;
    }
  });
});

describe('assertUrlAllowed', () => {
  it.each([
    ['ftp://example.com/a', /not a supported scheme/],
    ['file:///etc/passwd', /not a supported scheme/],
    ['gopher://127.0.0.1:70/', /not a supported scheme/],
    ['http://127.0.0.1/', /127\.0\.0\.1 is a loopback address/],
    ['http://2130706433/', /127\.0\.0\.1 is a loopback address/], // decimal form, normalised by URL
    ['http://0x7f.1/', /127\.0\.0\.1 is a loopback address/],
    ['http://[::ffff:7f00:1]/', /IPv4-mapped form of 127\.0\.0\.1/],
    ['http://169.254.169.254/latest/meta-data/', /cloud metadata endpoint.*stay blocked even with allowPrivateNetwork/],
    ['http://metadata.google.internal/computeMetadata/v1/', /metadata\.google\.internal is a cloud metadata host name/],
  ])('%s is refused', (url, message) => {
    expect(() => assertUrlAllowed(new URL(url))).toThrow(message);
  });

  it('the error says how to allow private addresses', () => {
    expect(() => assertUrlAllowed(new URL('http://10.1.2.3:8080/x'))).toThrow(
      /allowPrivateNetwork: true.*TOOLBELT_ALLOW_PRIVATE_NETWORK=1/,
    );
  });

  it('public URLs pass', () => {
    expect(() => assertUrlAllowed(new URL('https://example.com/'))).not.toThrow();
    expect(() => assertUrlAllowed(new URL('http://8.8.8.8/'))).not.toThrow();
  });
});

describe('guardedGet against a real loopback server', () => {
  let server: http.Server;
  let port: number;
  const seenHosts: string[] = [];

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      seenHosts.push(String(req.headers.host));
      res.end('hello');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
    sockets.stop();
    // The whole suite connected to loopback only.
    expect(connectedTo.length).toBeGreaterThan(0);
    expect(connectedTo.filter((a) => a !== '127.0.0.1')).toEqual([]);
  });

  const body = async (res: http.IncomingMessage) => {
    let s = '';
    for await (const c of res) s += c;
    return s;
  };

  it('the default policy refuses a literal loopback URL before opening a socket', async () => {
    const before = connectedTo.length;
    await expect(guardedGet(new URL(`http://127.0.0.1:${port}/`))).rejects.toBeInstanceOf(BlockedAddressError);
    expect(connectedTo.length).toBe(before);
  });

  it('the default policy refuses localhost through the DNS lookup hook', async () => {
    const before = seenHosts.length;
    await expect(guardedGet(new URL(`http://localhost:${port}/`))).rejects.toThrow(
      /localhost resolved to 127\.0\.0\.1, which is a loopback address/,
    );
    expect(seenHosts.length).toBe(before);
  });

  it('allow 127.0.0.1/32 reaches the server', async () => {
    const res = await guardedGet(new URL(`http://127.0.0.1:${port}/`), { policy: { allow: ['127.0.0.1/32'] } });
    expect(res.statusCode).toBe(200);
    expect(await body(res)).toBe('hello');
  });

  it('checks the address actually connected to: a rebinding name that resolves to a blocked address is refused', async () => {
    // A resolver that answers like a rebinding attacker: a public address is not what the socket
    // would get; the socket only gets what the guard let through.
    const calls: string[] = [];
    const rebinding: Resolver = async (host) => {
      calls.push(host);
      return [
        { address: '10.0.0.1', family: 4 },
        { address: '169.254.169.254', family: 4 },
      ];
    };
    const before = connectedTo.length;
    await expect(
      guardedGet(new URL(`http://rebind.example:${port}/`), {
        policy: { allow: ['127.0.0.1/32'] },
        resolver: rebinding,
      }),
    ).rejects.toThrow(/rebind\.example resolved to 10\.0\.0\.1, which is a private address/);
    expect(calls).toEqual(['rebind.example']);
    expect(connectedTo.length).toBe(before);
  });

  it('a mixed answer connects only to the allowed address', async () => {
    const mixed: Resolver = async () => [
      { address: '10.0.0.1', family: 4 },
      { address: '127.0.0.1', family: 4 },
    ];
    const res = await guardedGet(new URL(`http://mixed.example:${port}/`), {
      policy: { allow: ['127.0.0.1/32'] },
      resolver: mixed,
    });
    expect(await body(res)).toBe('hello');
    expect(seenHosts.at(-1)).toBe(`mixed.example:${port}`);
    expect(connectedTo.at(-1)).toBe('127.0.0.1');
  });

  it('a name that resolves to a loopback address is refused by the default policy', async () => {
    const toLoopback: Resolver = async () => [{ address: '127.0.0.1', family: 4 }];
    await expect(guardedGet(new URL(`http://public.example:${port}/`), { resolver: toLoopback })).rejects.toThrow(
      /public\.example resolved to 127\.0\.0\.1/,
    );
  });
});
