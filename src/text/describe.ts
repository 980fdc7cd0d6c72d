/**
 * `describeThrown`: any value a foreign party threw or answered (a backend, an MCP server, a tool,
 * a store) as text for a sentence, without ever throwing itself. `String(x)` throws for an object
 * without a prototype, for a symbol inside a template, for a value whose `toString` throws and for a
 * proxy whose traps throw; one such throw inside a rejection handler crashes the host process.
 * Must not word sentences (callers do) nor import anything.
 */

/** Most characters of a described value kept: a thrown value must not flood a sentence. */
export const MAX_DESCRIBED_CHARS = 2000;

/**
 * `value` as text: an error's message (also a duck-typed error from another realm), a string as is,
 * a symbol by its description, an object by its own `toString` or its JSON, else what it is
 * (`an object without a text form`). Never throws; at most MAX_DESCRIBED_CHARS characters.
 */
export function describeThrown(value: unknown): string {
  let text: string;
  try {
    text = describe(value);
  } catch {
    text = 'a value that cannot be shown as text';
  }
  return text.length > MAX_DESCRIBED_CHARS ? `${text.slice(0, MAX_DESCRIBED_CHARS)}...` : text;
}

function describe(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return value;
    case 'symbol':
      return `the symbol ${value.description ?? '(without description)'}`;
    case 'function':
      return 'a function';
    case 'object':
      return value === null ? 'null' : describeObject(value);
    default:
      // number, bigint, boolean, undefined: String never throws for them.
      return String(value);
  }
}

function describeObject(value: object): string {
  const message = attempt(() => (value as { message?: unknown }).message);
  if (typeof message === 'string' && message) return message;
  // An object's own toString (a class that defines one); '[object Object]' says nothing.
  // eslint-disable-next-line @typescript-eslint/no-base-to-string
  const own = attempt(() => String(value));
  if (typeof own === 'string' && own !== '[object Object]') return own;
  const json = attempt(() => JSON.stringify(value));
  if (typeof json === 'string' && json !== '{}') return json;
  return 'an object without a text form';
}

/** `fn()`, or undefined when it throws. */
function attempt<T>(fn: () => T): T | undefined {
  try {
    return fn();
  } catch {
    return undefined;
  }
}

/** `value instanceof cls`, false instead of a throw for a proxy whose getPrototypeOf trap throws. */
export function isInstance<T>(value: unknown, cls: abstract new (...args: never[]) => T): value is T {
  try {
    return value instanceof cls;
  } catch {
    return false;
  }
}

/**
 * The message of an error our own code (or Node) threw, whole: such messages are sentences written
 * to be read, and their callers cut them where they must (output caps, scrubbing). Anything else
 * (a foreign or hostile value, an error whose getters throw) goes through `describeThrown`.
 */
export function errorMessage(value: unknown): string {
  try {
    if (value instanceof Error && typeof value.message === 'string' && value.message) return value.message;
  } catch {
    // a proxy whose traps throw: described below
  }
  return describeThrown(value);
}
