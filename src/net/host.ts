/**
 * How a URL host is written once normalised, the one spelling the SSRF guard connects to and the
 * policy judges. Light on purpose: the policy (loaded by the root entry) uses it without loading
 * the network stack. Must not import anything.
 */

/** Normalises a URL host: lower case, no brackets, no trailing dot. */
export function normaliseHost(host: string): string {
  let h = host.trim().toLowerCase();
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  while (h.endsWith('.')) h = h.slice(0, -1);
  return h;
}
