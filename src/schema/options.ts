/**
 * Options objects checked at run time. Each options type has one zod schema, written beside the
 * type and tied to it at compile time: `checkOptions(schema, value)` only compiles when the schema
 * has exactly the keys of `value`'s type, each typed by that type's field. So a plain JavaScript
 * caller is refused what the compiler refuses a TypeScript one: an unknown key or a value outside
 * an enum fails with the nearest known name and the allowed ones. An options key that was ignored
 * could only ever grant more (a limit nobody set), so none is.
 * Must not hold one options type's schema (each lives beside its type).
 */
import { z } from 'zod';
import { nearestName } from '../text/similarity.js';

/** One problem of an options value: where (`sandbox.mode`) and what is wrong, with what is allowed. */
export interface OptionProblem {
  path: string;
  message: string;
}

/** Thrown for options a function refuses; `problems` lists each one. */
export class OptionsError extends TypeError {
  constructor(
    readonly label: string,
    readonly problems: OptionProblem[],
  ) {
    super(
      problems.length === 1
        ? `${label}: ${problems[0].path} ${problems[0].message}.`
        : `${label}: ${problems.length} problems:\n${problems.map((p) => `- ${p.path} ${p.message}`).join('\n')}`,
    );
    this.name = 'OptionsError';
  }
}

/** For each key of T, a schema whose output fits T's field. */
export type ShapeOf<T> = { [K in keyof T]-?: z.ZodType<T[K]> };

/** Keys a schema has and the type does not. */
type Extra<S, T> = Exclude<keyof S, keyof T>;

/** Keys whose schema refuses a value the type allows (the schema's input is narrower than the field). */
type Narrower<S, T> = {
  [K in keyof T & keyof S]-?: [T[K]] extends [z.input<S[K] & z.ZodType>] ? never : K;
}[keyof T & keyof S];

/**
 * The schema of one options type: a shape (built on first use, so importing the package builds no
 * schema), `strict` (unknown keys refused) or `open` (unknown keys pass unless they are a near miss
 * of a known one: `initCtx` also carries the options of a user's own tools).
 */
export class OptionsSchema<S extends z.ZodRawShape> {
  private schema: z.ZodObject<S, z.core.$strip> | undefined;

  constructor(
    /** How the caller names what it was given: `createRegistry options`, `registry.tools() options`. */
    readonly label: string,
    private readonly shape: () => S,
    private readonly mode: 'strict' | 'open' = 'strict',
  ) {}

  /**
   * The zod schema, typed by its shape alone (what unknown keys get is decided at run time), so that a
   * field holding it takes exactly the options type.
   */
  get zod(): z.ZodObject<S, z.core.$strip> {
    this.schema ??= (this.mode === 'strict' ? strictObject(this.shape()) : openObject(this.shape())) as z.ZodObject<
      S,
      z.core.$strip
    >;
    return this.schema;
  }

  /** Objects already found valid: a caller that passes the same options to every call pays once. */
  readonly valid = new WeakSet<object>();

  /** Whether `value` is known valid without parsing: an empty object, or one checked before. */
  passed(value: unknown): boolean {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
    return this.valid.has(value) || Object.keys(value).length === 0;
  }

  /** Every problem of `value` (empty when it is valid), paths starting at `at`. */
  problems(value: unknown, at = ''): OptionProblem[] {
    return optionsProblems(this.zod, value, at);
  }
}

/**
 * Throws an OptionsError for every problem of `value`. Compiles only when `schema` has exactly the
 * keys of T and each field's schema takes every value of T's field and gives one: the tie between a
 * type and its schema.
 */
export function checkOptions<T, S extends ShapeOf<T>>(
  schema: OptionsSchema<S>,
  value: T | undefined,
  ..._exact: [Extra<S, T> | Narrower<S, T>] extends [never]
    ? []
    : [`the schema has keys its type lacks, or refuses values it allows: ${(Extra<S, T> | Narrower<S, T>) & string}`]
): void {
  if (value === undefined || schema.passed(value)) return;
  const problems = schema.problems(value);
  if (problems.length) throw new OptionsError(schema.label, problems);
  if (typeof value === 'object' && value !== null) schema.valid.add(value);
}

/** The shape of T's schema, checked to have exactly T's keys (for a schema written beside its type). */
export function shapeOf<T>(): <S extends ShapeOf<T>>(shape: S & Record<Extra<S, T>, never>) => S {
  return (shape) => shape;
}

/** ` (did you mean "x"?)` when one of `known` is close to `given`, else ''. */
function suggestion(given: string, known: readonly string[]): string {
  const near = nearestName(given, known) ?? known.find((k) => swapsTwoNeighbours(given, k));
  return near !== undefined && near !== given ? ` (did you mean ${JSON.stringify(near)}?)` : '';
}

/** `mdoe` for `mode`: two neighbouring letters swapped (edit distance 2, too far for nearestName on short names). */
function swapsTwoNeighbours(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  const i = [...a].findIndex((c, k) => c !== b[k]);
  return i >= 0 && i + 1 < a.length && a[i] === b[i + 1] && a[i + 1] === b[i] && a.slice(i + 2) === b.slice(i + 2);
}

function unknownKey(key: string, known: readonly string[]): string {
  return `is not an option${suggestion(key, known)}; the options are ${known.join(', ')}`;
}

/** A strict object: an unknown key is refused naming the nearest known key and listing them all. */
export function strictObject<S extends z.ZodRawShape>(shape: S): z.ZodObject<S, z.core.$strict> {
  const known = Object.keys(shape);
  return z.strictObject(shape, {
    error: (iss) =>
      iss.code === 'unrecognized_keys'
        ? iss.keys.length === 1
          ? unknownKey(iss.keys[0], known)
          : `has unknown options ${iss.keys.map((k) => `${JSON.stringify(k)}${suggestion(k, known)}`).join(', ')}; the options are ${known.join(', ')}`
        : iss.code === 'invalid_type'
          ? `must be an object with ${known.join(', ')}, got ${describe(iss.input)}`
          : undefined,
  });
}

/** An open object: unknown keys pass, except a near miss of a known key (`workspceRoot`), refused as a typo. */
function openObject<S extends z.ZodRawShape>(shape: S) {
  const known = Object.keys(shape);
  return z.looseObject(shape).superRefine((value, ctx) => {
    for (const key of Object.keys(value)) {
      if (key in shape) continue;
      const near = nearestName(key, known) ?? known.find((k) => swapsTwoNeighbours(key, k));
      if (near !== undefined)
        ctx.addIssue({
          code: 'custom',
          path: [key],
          message: `is not an option (did you mean ${JSON.stringify(near)}?); a key of your own tools must not be this close to one of ${known.join(', ')}`,
        });
    }
  });
}

/** One of `values`; anything else is refused with `noun` ("a mode"), the nearest value and the allowed ones. */
export function oneOf<const V extends readonly string[]>(values: V, noun: string) {
  return z.enum(values, {
    error: (iss) =>
      typeof iss.input === 'string'
        ? `${JSON.stringify(iss.input)} is not ${noun}${suggestion(iss.input, values)}; use one of ${values.join(', ')}`
        : `must be ${noun} (one of ${values.join(', ')}), got ${describe(iss.input)}`,
  });
}

/** A function (callbacks). */
export function fn<F>() {
  return z.custom<F>((v) => typeof v === 'function', {
    error: (iss) => `must be a function, got ${describe(iss.input)}`,
  });
}

/** An object used as it is (a store, a backend, a provider): checked to be one, with `methods`. */
export function objectWith<T>(what: string, methods: readonly string[] = []) {
  return z.custom<T>(
    (v) =>
      typeof v === 'object' &&
      v !== null &&
      methods.every((m) => typeof (v as Record<string, unknown>)[m] === 'function'),
    { error: (iss) => `must be ${what}, got ${describe(iss.input)}` },
  );
}

/** A short description of a value for error messages. */
export function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}...` : v);
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return typeof v === 'object' ? 'an object' : typeof v;
}

/** Every problem of `value` under `schema`, with paths starting at `at` (empty when it is valid). */
export function optionsProblems(schema: z.ZodType, value: unknown, at = ''): OptionProblem[] {
  const result = schema.safeParse(value);
  return result.success ? [] : result.error.issues.flatMap((iss) => issueProblems(iss, at));
}

function issueProblems(iss: z.core.$ZodIssue, at: string): OptionProblem[] {
  const path = [...iss.path];
  if (iss.code === 'invalid_union') {
    // The branch that got furthest (a wrong value inside the right shape) says the most.
    const best = [...iss.errors].sort((a, b) => reach(b) - reach(a))[0] ?? [];
    return best.flatMap((i) => issueProblems({ ...i, path: [...path, ...i.path] }, at));
  }
  if (iss.code === 'unrecognized_keys' && iss.keys.length === 1) path.push(iss.keys[0]);
  return [{ path: joinPath(at, path) || 'the options', message: sentence(iss) }];
}

/** How far into the value a union branch's issues got (deeper, or the right type with a wrong value, is further). */
function reach(issues: z.core.$ZodIssue[]): number {
  return Math.max(0, ...issues.map((i) => i.path.length * 2 + (i.code === 'invalid_type' ? 0 : 1)));
}

/** The rest of the sentence after the path: ours, or zod's own wording made into one. */
function sentence(iss: z.core.$ZodIssue): string {
  const input = (iss as { input?: unknown }).input;
  if (iss.code === 'invalid_type' && iss.message.startsWith('Invalid input'))
    return `must be ${article(iss.expected)}, got ${describe(input)}`;
  if (iss.code === 'too_small' && iss.message.startsWith('Too small'))
    return `must be at least ${String(iss.minimum)}${iss.origin === 'string' ? ' characters long' : iss.origin === 'array' ? ' items' : ''}, got ${describe(input)}`;
  if (iss.code === 'too_big' && iss.message.startsWith('Too big'))
    return `must be at most ${String(iss.maximum)}, got ${describe(input)}`;
  return iss.message;
}

function article(t: string): string {
  return t === 'int' ? 'a whole number' : /^[aeiou]/.test(t) ? `an ${t}` : `a ${t}`;
}

function joinPath(at: string, path: PropertyKey[]): string {
  let out = at;
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : out ? `.${String(p)}` : String(p);
  return out;
}
