/**
 * The `agent-toolbelt/ssrf` entry: the network address policy every built-in network tool uses,
 * for a host's own network code (check an address or host, or make a guarded GET).
 * Must not define anything: it re-exports what docs/security.md teaches from src/net/ssrf.ts.
 */
export {
  checkAddress,
  checkHost,
  assertUrlAllowed,
  guardedLookup,
  guardedGet,
  BlockedAddressError,
  type SsrfPolicy,
  type Verdict,
  type GuardedGetOptions,
} from './net/ssrf.js';
