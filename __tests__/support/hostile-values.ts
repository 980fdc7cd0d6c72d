/**
 * Values a foreign party (a tool, a store, an MCP transport, a tools module) may throw whose
 * String() throws: describing them in a catch block must not throw a second time.
 */

/** Throws an object without a prototype: String() and `${}` of it throw. */
function trap(): never {
  throw Object.create(null) as Error;
}

/**
 * Each hostile value, by what a test title says of it; a fresh value per call. Typed as Error only
 * so that `throw` and `Promise.reject` of them pass the lint rules: none of them is one.
 */
export const HOSTILE_VALUES: ReadonlyArray<[string, () => Error]> = (
  [
    ['an object without a prototype', () => Object.create(null) as object],
    ['an object whose toString throws', () => ({ toString: trap, valueOf: trap })],
    ['a symbol', () => Symbol('hostile')],
    ['a proxy whose traps throw', () => new Proxy({}, { get: trap, getPrototypeOf: trap, ownKeys: trap, has: trap })],
  ] as Array<[string, () => unknown]>
).map(([what, make]) => [what, make as () => Error]);

/** The same values as JavaScript source, for a module written to disk (a tools module, a child process). */
export const HOSTILE_SOURCES: ReadonlyArray<[string, string]> = [
  ['an object without a prototype', 'Object.create(null)'],
  [
    'an object whose toString throws',
    '{ toString() { throw Object.create(null); }, valueOf() { throw Object.create(null); } }',
  ],
  ['a symbol', "Symbol('hostile')"],
  [
    'a proxy whose traps throw',
    'new Proxy({}, Object.fromEntries(["get", "getPrototypeOf", "ownKeys", "has"].map((k) => [k, () => { throw Object.create(null); }])))',
  ],
];

/**
 * Waits three turns of the event loop so that a rejection nobody handled surfaces while the calling
 * test still runs. Jest fails that test (an Error reason) or the whole run (any other reason, as
 * ERR_UNHANDLED_REJECTION); a listener on process 'unhandledRejection' inside a test never sees it.
 */
export async function letRejectionsSurface(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
}
