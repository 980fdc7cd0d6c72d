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

/**
 * Runs `ours` and `baseline` alternately `runs` times after one warm-up call each, prints the
 * medians and `ratio = ours / baseline` against `target`, and returns the ratio.
 */
export async function compare(label, target, ours, baseline, runs) {
  await ours();
  await baseline();
  const a = [];
  const b = [];
  for (let i = 0; i < runs; i++) {
    a.push(await timeMs(ours));
    b.push(await timeMs(baseline));
  }
  const ratio = median(a) / median(b);
  console.log(
    `${label}: ours ${median(a).toFixed(1)} ms, baseline ${median(b).toFixed(1)} ms, ratio = ${ratio.toFixed(2)} (target <= ${target}) ${ratio <= target ? 'OK' : 'MISSED'}`,
  );
  return ratio;
}
