/**
 * Loading a heavy CommonJS dependency on first use instead of at import, so importing the package
 * costs little more than importing @langchain/core (bench/import.bench.mjs). No caching policy beyond "once".
 * Must not name the dependencies it loads: each user (diff.ts, tools/glob.ts) names its own.
 */
import { createRequire } from 'node:module';

const requireHere = createRequire(import.meta.url);

/** A getter that `require`s `name` on its first call and returns the same module after that. */
export function onFirstUse<T>(name: string): () => T {
  let loaded: T | undefined;
  return () => (loaded ??= requireHere(name) as T);
}
