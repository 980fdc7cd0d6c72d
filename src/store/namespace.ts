/**
 * Namespaces of tool state: a caller's labels (fixed, or from a function of the call) encoded so
 * that no value can reach another namespace, the root label every record sits under, and one
 * closing label per kind of state.
 * Must not read or write records (scope.ts does).
 */
import type { NamespaceContext, StoreNamespace } from './types.js';
import { describeThrown } from '../text/describe.js';

/** The first label of every namespace the tools write (LangGraph reserves `langgraph`). */
export const STORE_ROOT_LABEL = 'toolbelt';
/** Most labels a namespace (function) may give. */
export const MAX_NAMESPACE_LABELS = 8;
/** Longest label a namespace may give, in characters (before encoding). */
export const MAX_NAMESPACE_LABEL_CHARS = 256;

/**
 * The closing label of each kind of state. Each starts with `~` and a letter that is not a hex
 * digit, which no encoded label can begin with (`~` is always followed by two hex digits there):
 * a search for one kind's prefix can never match a caller's labels, whatever they hold.
 */
export const STATE_KINDS = {
  todo: '~todo',
  memory: '~memory',
  pending: '~pending',
  approvals: '~approvals',
  httpCache: '~http-cache',
  undo: '~undo',
  skills: '~skills',
} as const;
export type StateKind = keyof typeof STATE_KINDS;

const SAFE = /^[A-Za-z0-9-]$/;
const ALL_SAFE = /^[A-Za-z0-9-]*$/;

/**
 * One label made safe for every engine: letters, digits and `-` stay; every other UTF-8 byte
 * becomes `~XX` (hex). Injective, and free of the characters engines give a meaning to
 * (`.` `:` `%` `_` `\` `*`, NUL).
 */
export function encodeLabel(label: string): string {
  if (ALL_SAFE.test(label)) return label;
  let out = '';
  for (const ch of label) {
    if (SAFE.test(ch)) out += ch;
    else for (const b of Buffer.from(ch, 'utf8')) out += `~${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** The inverse of `encodeLabel` (for docs and debugging). */
export function decodeLabel(encoded: string): string {
  const bytes: number[] = [];
  for (let i = 0; i < encoded.length; i++) {
    if (encoded[i] === '~') {
      bytes.push(parseInt(encoded.slice(i + 1, i + 3), 16));
      i += 2;
    } else bytes.push(encoded.charCodeAt(i));
  }
  return Buffer.from(bytes).toString('utf8');
}

/** Thrown when a namespace (function) gives labels that cannot scope state; the message says which. */
export class NamespaceError extends Error {
  override name = 'NamespaceError';
}

/**
 * The encoded base namespace for a call: `[STORE_ROOT_LABEL, ...labels]`. `fallback` is used when
 * no namespace was configured (the registry's own id). Throws a NamespaceError for empty,
 * non-string or too many labels.
 */
export function resolveNamespace(
  namespace: StoreNamespace | undefined,
  ctx: NamespaceContext,
  fallback: readonly string[],
): string[] {
  let labels: unknown;
  if (typeof namespace === 'function') {
    try {
      labels = namespace(ctx);
    } catch (err) {
      throw new NamespaceError(
        `The store namespace function threw: ${describeThrown(err)}. Fix the namespace option of createRegistry.`,
      );
    }
  } else labels = namespace ?? fallback;
  if (!Array.isArray(labels) || labels.length === 0) {
    throw new NamespaceError(
      `The store namespace must be a non-empty array of strings, got ${describe(labels)}. Fix the namespace option of createRegistry.`,
    );
  }
  if (labels.length > MAX_NAMESPACE_LABELS) {
    throw new NamespaceError(
      `The store namespace has ${labels.length} labels, more than the ${MAX_NAMESPACE_LABELS} allowed. Use fewer labels.`,
    );
  }
  return [
    STORE_ROOT_LABEL,
    ...labels.map((label: unknown, i) => {
      if (typeof label !== 'string' || label === '') {
        throw new NamespaceError(
          `Label ${i + 1} of the store namespace is ${describe(label)}; every label must be a non-empty string (a missing user id?). Fix the namespace option of createRegistry.`,
        );
      }
      if (label.length > MAX_NAMESPACE_LABEL_CHARS) {
        throw new NamespaceError(
          `Label ${i + 1} of the store namespace is ${label.length} characters, more than the ${MAX_NAMESPACE_LABEL_CHARS} allowed. Use a shorter id.`,
        );
      }
      return encodeLabel(label);
    }),
  ];
}

/** The namespace of one kind of state under a resolved base. */
export function kindNamespace(base: readonly string[], kind: StateKind): string[] {
  return [...base, STATE_KINDS[kind]];
}

function describe(value: unknown): string {
  if (value === undefined) return 'undefined';
  const text = JSON.stringify(value);
  return text === undefined ? typeof value : text.length > 80 ? `${text.slice(0, 77)}...` : text;
}
