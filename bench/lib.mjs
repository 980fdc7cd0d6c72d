// Small helpers shared by the benchmarks.

/** A Tool.Context for calling a tool directly from a benchmark. */
export function benchCtx() {
  return { sessionID: 'bench', messageID: 'bench', agent: 'bench', abort: new AbortController().signal, metadata() {} };
}

/** Wall time of one awaited call, in ms. */
export async function timeMs(fn) {
  const t = performance.now();
  await fn();
  return performance.now() - t;
}

/** The median of a list of numbers. */
export const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
