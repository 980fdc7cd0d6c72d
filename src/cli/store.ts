/**
 * `--store URL` / `$TOOLBELT_STORE_URL`: which state store every command's registry is given (todo
 * lists, memory notes, pending calls) and under which namespace. The URL's password is never printed.
 * Must not implement the store (src/store/) nor a command (memory.ts is `toolbelt memory`).
 */
import type { OpenedStore } from '../store/postgres.js';

/** The environment variable read when `--store` is not given. */
export const STORE_URL_ENV = 'TOOLBELT_STORE_URL';
/** The namespace the CLI keeps state under when `--store-namespace` is not given. */
export const CLI_STORE_NAMESPACE = ['cli'];

/** The store URL the flags or the environment name, if any. */
export function storeUrlOf(values: Record<string, unknown>): string | undefined {
  const given = values.store ?? process.env.TOOLBELT_STORE_URL;
  return typeof given === 'string' && given.trim() ? given.trim() : undefined;
}

/** The namespace labels of `--store-namespace a,b` (default CLI_STORE_NAMESPACE); a sentence when malformed. */
export function storeNamespaceOf(values: Record<string, unknown>): string[] | string {
  const given = values['store-namespace'];
  if (given === undefined) return CLI_STORE_NAMESPACE;
  if (typeof given !== 'string') return `--store-namespace needs comma-separated labels, got ${JSON.stringify(given)}.`;
  const labels = given.split(',').map((l) => l.trim());
  if (labels.some((l) => !l))
    return `--store-namespace needs comma-separated non-empty labels, got ${JSON.stringify(given)}.`;
  return labels;
}

/** Opens the store at `url`; errors name the URL without its password. */
export async function openCliStore(url: string): Promise<OpenedStore> {
  const { openStore } = await import('../store/postgres.js');
  try {
    return await openStore(url);
  } catch (err) {
    throw new Error(`${(err as Error).message} (--store or $${STORE_URL_ENV})`, { cause: err });
  }
}
