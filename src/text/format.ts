/**
 * How sizes are written in text a model reads (`5 MB`, `1.5 KB`, `12 bytes`), one format everywhere.
 * Must not do I/O or hold limits: those live with the tools that enforce them.
 */

const KB = 1024;
const MB = 1024 * 1024;

/** A byte count for a sentence: whole units without a decimal, else one decimal. */
export function formatBytes(n: number): string {
  if (n >= MB) return `${(n / MB).toFixed(n % MB === 0 ? 0 : 1)} MB`;
  if (n >= KB) return `${(n / KB).toFixed(n % KB === 0 ? 0 : 1)} KB`;
  return `${n} bytes`;
}
