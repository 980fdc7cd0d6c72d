/**
 * Edit distance, shared by edit's fuzzy matcher and read's "did you mean" suggestions.
 * Must not hold matching policy (thresholds live with edit and read).
 */

/** The Levenshtein distance between `a` and `b` (one reused row: O(|b|) memory). */
function levenshtein(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0];
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = row[j];
      row[j] = Math.min(row[j] + 1, row[j - 1] + 1, prev + (a.charCodeAt(i - 1) === b.charCodeAt(j - 1) ? 0 : 1));
      prev = tmp;
    }
  }
  return row[b.length];
}

/** 0..1 similarity from the Levenshtein distance of the first `maxChars` characters of each (bounds the cost). */
export function levenshteinRatio(a: string, b: string, maxChars: number): number {
  if (a === b) return 1;
  a = a.slice(0, maxChars);
  b = b.slice(0, maxChars);
  return 1 - levenshtein(a, b) / Math.max(a.length, b.length, 1);
}

/**
 * The candidate a misspelled or misnamed identifier most likely meant (`path` -> `filePath`,
 * `file_path` -> `filePath`, `limt` -> `limit`), or undefined when none is close. Case, `_` and `-`
 * are ignored; containing the name counts as close.
 */
export function nearestName(name: string, candidates: readonly string[]): string | undefined {
  const norm = (s: string) => s.toLowerCase().replace(/[_-]/g, '');
  const n = norm(name);
  let best: string | undefined;
  let bestScore = Infinity;
  for (const c of candidates) {
    const k = norm(c);
    const score = k === n ? 0 : n.length >= 3 && (k.includes(n) || n.includes(k)) ? 1 : levenshtein(n, k) + 1;
    if (score < bestScore) [best, bestScore] = [c, score];
  }
  return bestScore <= Math.max(2, Math.ceil(n.length / 3)) ? best : undefined;
}
