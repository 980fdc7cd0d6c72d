/**
 * REST tool templates: `${ENV}` secrets expanded once from the environment (and remembered, so they
 * can be scrubbed), `{param}` placeholders filled from a call's arguments. No HTTP here.
 */

/** `${NAME}` in a config string: an environment variable (a secret). */
const ENV_REF = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;
/** `{name}` in a config string: a call argument. */
const PARAM_REF = /\{([A-Za-z_][A-Za-z0-9_.-]*)\}/g;

/** Expands `${NAME}` from `env`; every value used goes into `secrets`. A missing variable is an error naming it and `where`. */
export function expandEnv(
  text: string,
  env: Readonly<Record<string, string | undefined>>,
  secrets: Set<string>,
  where: string,
): string {
  return text.replace(ENV_REF, (_, name: string) => {
    const value = env[name];
    if (value === undefined || value === '')
      throw new Error(
        `${where} uses \${${name}}, which is not set in the environment. Set ${name} or remove it from the config.`,
      );
    secrets.add(value);
    return value;
  });
}

/** The `{param}` names a template uses. */
export function paramsIn(text: string): string[] {
  return [...text.matchAll(PARAM_REF)].map((m) => m[1]);
}

/** The names of `{param}` placeholders anywhere in a JSON body template. */
export function paramsInBody(body: unknown): string[] {
  if (typeof body === 'string') return paramsIn(body);
  if (Array.isArray(body)) return body.flatMap(paramsInBody);
  if (body && typeof body === 'object') return Object.values(body).flatMap(paramsInBody);
  return [];
}

/** The single `{param}` a string consists of, if that is all it is (its value then keeps its JSON type). */
function wholeParam(text: string): string | undefined {
  const m = /^\{([A-Za-z_][A-Za-z0-9_.-]*)\}$/.exec(text);
  return m?.[1];
}

/** Text form of an argument for a URL, query or header. */
export function argText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return value.map(argText).join(',');
  return JSON.stringify(value);
}

/**
 * Fills `{param}` from `args`; `encode` escapes each value (path segments). Returns undefined when
 * a parameter is absent, so the caller can drop an optional query entry or header.
 */
export function fill(
  text: string,
  args: Record<string, unknown>,
  encode: (s: string) => string = (s) => s,
): string | undefined {
  let missing = false;
  const out = text.replace(PARAM_REF, (_, name: string) => {
    const value = args[name];
    if (value === undefined || value === null) {
      missing = true;
      return '';
    }
    return encode(argText(value));
  });
  return missing ? undefined : out;
}

/** A JSON body template with `{param}` filled: a string that is exactly `{param}` becomes the value itself; absent ones are dropped. */
export function fillBody(template: unknown, args: Record<string, unknown>): unknown {
  if (typeof template === 'string') {
    const whole = wholeParam(template);
    if (whole !== undefined) return args[whole] ?? undefined;
    return fill(template, args);
  }
  if (Array.isArray(template)) return template.map((t) => fillBody(t, args)).filter((v) => v !== undefined);
  if (template && typeof template === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(template)) {
      const filled = fillBody(v, args);
      if (filled !== undefined) out[k] = filled;
    }
    return out;
  }
  return template;
}

/** Expands `${ENV}` in every string of a JSON body template. */
export function expandEnvInBody(
  template: unknown,
  env: Readonly<Record<string, string | undefined>>,
  secrets: Set<string>,
  where: string,
): unknown {
  if (typeof template === 'string') return expandEnv(template, env, secrets, where);
  if (Array.isArray(template)) return template.map((t) => expandEnvInBody(t, env, secrets, where));
  if (template && typeof template === 'object')
    return Object.fromEntries(Object.entries(template).map(([k, v]) => [k, expandEnvInBody(v, env, secrets, where)]));
  return template;
}
