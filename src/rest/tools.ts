/**
 * REST tools from configuration: each `RestToolConfig` becomes one registry entry `rest__<name>`
 * whose calls fill the config's templates and go through the shared API call (src/net/api-call.ts):
 * SSRF guard, host pinned to the configured one, caps, cache, a per-tool queue, secrets scrubbed.
 */
import { z } from 'zod';
import { Tool } from '../authoring/tool.js';
import type { ToolPermission } from '../authoring/permissions.js';
import type { Registry } from '../registry/registry.js';
import { Semaphore } from '../pipeline/semaphore.js';
import { entrySchema } from '../mcp/import.js';
import { compilePolicy, policyFromInitContext, type SsrfPolicy } from '../net/ssrf.js';
import { HTTP_DEFAULT_TIMEOUT_SECONDS, HTTP_MAX_TIMEOUT_SECONDS, requestBody } from '../net/http.js';
import { callApi, type ApiCallMetadata } from '../net/api-call.js';
import { responseCacheOf } from '../net/response-cache.js';
import { scrubText, secretForms } from '../net/scrub.js';
import { argText, expandEnv, expandEnvInBody, fill, fillBody, paramsIn, paramsInBody } from './template.js';
import { errorMessage } from '../text/describe.js';

/** Prefix of a configured REST tool's id (`rest__getWeather`). */
export const REST_NAME_PREFIX = 'rest__';
/** Calls of one REST tool that run at once when its config sets no `concurrency`; more wait in its queue. */
export const REST_DEFAULT_CONCURRENCY = 4;
/** The longest tool id providers accept. */
const MAX_ID_LENGTH = 64;

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'HEAD' | 'OPTIONS';

/** One REST endpoint as a tool. Strings may hold `{param}` (a call argument) and `${ENV}` (a secret from the environment). */
export interface RestToolConfig {
  /** The tool is registered as `rest__<name>` (or `<prefix><name>` with `registerRestTools`' `prefix`). */
  name: string;
  /** What the model reads. */
  description: string;
  /** Default GET. */
  method?: Method;
  /** `https://api.example.com/v1/pets/{petId}`: `{param}` in the path is URL-encoded; the host cannot be a parameter. */
  url: string;
  /** Query parameters: `{ limit: '{limit}', key: '${API_KEY}' }`; an entry whose parameter is absent is left out. */
  query?: Record<string, string>;
  /** Headers: `{ Authorization: 'Bearer ${API_TOKEN}' }`; an entry whose parameter is absent is left out. */
  headers?: Record<string, string>;
  /** A JSON body template; a string that is exactly `{param}` becomes the argument's value (any JSON type). */
  body?: unknown;
  /**
   * The arguments' JSON Schema (an object schema) or zod schema. Default: every `{param}` the
   * templates use, as a required string.
   */
  parametersSchema?: Record<string, unknown> | z.ZodType;
  /** Identical GETs within this many seconds are answered from the registry's cache (default 0: off). */
  cacheTtlSeconds?: number;
  /** Calls of this tool that run at once; more wait in a FIFO queue (default REST_DEFAULT_CONCURRENCY). */
  concurrency?: number;
  /** Seconds per call (default 30, max 120). */
  timeoutSeconds?: number;
  /** Required permissions (default `['network']`). */
  permissions?: ToolPermission[];
  /** Hosts redirects may reach besides the URL's own (default: only the URL's host). */
  allowedHosts?: string[];
  /** The address policy for this tool (e.g. `{ allowPrivateNetwork: true }` for an internal API); default: the init context's. */
  ssrfPolicy?: SsrfPolicy;
  /** Arguments not used by any template: `query` (default for GET/DELETE/HEAD) or `body` (a JSON object, default otherwise) or `ignore`. */
  unusedArguments?: 'query' | 'body' | 'ignore';
}

/** Options of `registerRestTools`. */
export interface RegisterRestOptions {
  /** Where `${ENV}` comes from (default `process.env`). */
  env?: Readonly<Record<string, string | undefined>>;
  /** Id prefix (default `rest__`). */
  prefix?: string;
  /** Replace tools with the same id instead of throwing. */
  replace?: boolean;
}

/** Registers one tool per config into `registry`; returns their ids. A bad config is an error naming it and the fix. */
export function registerRestTools(
  registry: Registry,
  configs: readonly RestToolConfig[],
  options: RegisterRestOptions = {},
): string[] {
  const infos = configs.map((c) => restTool(c, options));
  const ids = new Set<string>();
  for (const info of infos) {
    if (ids.has(info.id)) throw new Error(`Two REST tools are both named "${info.id}". Give each a distinct name.`);
    ids.add(info.id);
  }
  for (const info of infos) registry.register(info, { replace: options.replace });
  return [...ids];
}

/** The id a REST tool gets: prefix + name, characters outside `[a-zA-Z0-9_-]` replaced by `_`, at most 64. */
export function restToolId(name: string, prefix = REST_NAME_PREFIX): string {
  return `${prefix}${name}`.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, MAX_ID_LENGTH);
}

/** One config as a `Tool.Info` (not registered). */
export function restTool(config: RestToolConfig, options: RegisterRestOptions = {}): Tool.Info {
  const where = `REST tool "${config?.name}"`;
  if (!config || typeof config.name !== 'string' || !config.name)
    throw new Error('A REST tool config needs a "name" (letters, digits, "_" or "-").');
  if (typeof config.description !== 'string' || !config.description.trim())
    throw new Error(`${where} needs a "description": it is what the model reads to decide when to call it.`);
  const method = (config.method ?? 'GET').toUpperCase() as Method;
  if (!['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'].includes(method))
    throw new Error(
      `${where}: method ${JSON.stringify(config.method)} is not an HTTP method (GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS).`,
    );
  const env = options.env ?? process.env;
  const secrets = new Set<string>();
  const url = expandEnv(String(config.url ?? ''), env, secrets, `${where}'s url`);
  const origin = checkUrlTemplate(url, where);
  const query = expandRecord(config.query, env, secrets, `${where}'s query`);
  const headers = expandRecord(config.headers, env, secrets, `${where}'s headers`);
  const body = config.body === undefined ? undefined : expandEnvInBody(config.body, env, secrets, `${where}'s body`);
  const used = new Set([
    ...paramsIn(url),
    ...Object.values(query).flatMap(paramsIn),
    ...Object.values(headers).flatMap(paramsIn),
    ...paramsInBody(body),
  ]);
  const { parameters, jsonSchema } = schemaFor(config, used);
  const concurrency = config.concurrency ?? REST_DEFAULT_CONCURRENCY;
  if (!Number.isInteger(concurrency) || concurrency < 1)
    throw new Error(
      `${where}: concurrency must be a whole number of at least 1, got ${JSON.stringify(config.concurrency)}.`,
    );
  const timeoutSeconds = config.timeoutSeconds ?? HTTP_DEFAULT_TIMEOUT_SECONDS;
  if (!(timeoutSeconds > 0 && timeoutSeconds <= HTTP_MAX_TIMEOUT_SECONDS))
    throw new Error(`${where}: timeoutSeconds must be above 0 and at most ${HTTP_MAX_TIMEOUT_SECONDS}.`);
  const unused = config.unusedArguments ?? (['GET', 'DELETE', 'HEAD'].includes(method) ? 'query' : 'body');
  const allowedHosts = [origin.hostname, ...(config.allowedHosts ?? [])];
  const secretList = [...secrets];
  const scrub = (text: string) => scrubText(text, secretForms(secretList));
  // One queue per registration: the registry that registered the tool owns it.
  const queue = new Semaphore(concurrency);
  const id = restToolId(config.name, options.prefix);
  return Tool.define(
    {
      id,
      permissions: { required: config.permissions ?? ['network'] },
      danger: method === 'GET' ? 'safe' : 'moderate',
    },
    (initCtx) => {
      const policy = config.ssrfPolicy ? compilePolicy(config.ssrfPolicy) : policyFromInitContext(initCtx);
      const ttl = config.cacheTtlSeconds ?? 0;
      const cache = ttl > 0 ? { store: responseCacheOf(initCtx), ttlMs: ttl * 1000, owner: id } : undefined;
      return {
        description: config.description,
        parameters,
        ...(jsonSchema ? { jsonSchema } : {}),
        timeout: { managed: true, maxMs: (timeoutSeconds + 5) * 1000 + 60_000 },
        annotations: { openWorldHint: true, readOnlyHint: method === 'GET', title: config.name },
        async execute(rawArgs, ctx) {
          const args = (rawArgs ?? {}) as Record<string, unknown>;
          let request: ReturnType<typeof buildRequest>;
          try {
            request = buildRequest(method, url, query, headers, body, args, used, unused);
            if (request.url.origin !== origin.origin || request.url.username !== origin.username)
              throw new Error(
                `The arguments moved the request from ${origin.origin} to ${request.url.origin}; a REST tool only calls its configured server. Give plain identifiers.`,
              );
          } catch (err) {
            // No `cause`: the original error may quote the secrets this message scrubs.
            // eslint-disable-next-line preserve-caught-error
            throw new Error(scrub(errorMessage(err)));
          }
          if (queue.running > 0 || queue.queued > 0)
            ctx.metadata({
              title: `${id}: waiting for a free slot (${queue.queued + 1} waiting, ${concurrency} at once)`,
            });
          const release = await queue.acquire(ctx.abort);
          try {
            return await callApi({
              request,
              policy,
              allowedHosts,
              timeoutMs: timeoutSeconds * 1000,
              secrets: secretList,
              cache,
              ctx,
            });
          } finally {
            release();
          }
        },
      } satisfies Tool.Definition<z.ZodType, ApiCallMetadata>;
    },
  );
}

function expandRecord(
  record: Record<string, string> | undefined,
  env: Readonly<Record<string, string | undefined>>,
  secrets: Set<string>,
  where: string,
): Record<string, string> {
  return Object.fromEntries(
    Object.entries(record ?? {}).map(([k, v]) => [k, expandEnv(String(v), env, secrets, `${where}.${k}`)]),
  );
}

/** The URL template's origin; its host must be fixed (a parameter there would let the model pick the server). */
function checkUrlTemplate(url: string, where: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(url.replace(/\{[^}]*\}/g, 'x'));
  } catch {
    throw new Error(`${where}: url must be a full http:// or https:// URL, got a value that does not parse.`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw new Error(`${where}: url must start with http:// or https://.`);
  const authority = /^[a-z]+:\/\/([^/?#]*)/i.exec(url)?.[1] ?? '';
  if (authority.includes('{'))
    throw new Error(`${where}: the url's host cannot be a {parameter}; the host is fixed by the config.`);
  return parsed;
}

function schemaFor(
  config: RestToolConfig,
  used: Set<string>,
): { parameters: z.ZodType; jsonSchema?: Record<string, unknown> } {
  const given = config.parametersSchema;
  if (given instanceof z.ZodType) return { parameters: given };
  if (given && typeof given === 'object') return entrySchema(given);
  const shape = Object.fromEntries([...used].map((p) => [p, z.string().describe(`Value for {${p}}`)]));
  return { parameters: z.object(shape) };
}

function buildRequest(
  method: Method,
  urlTemplate: string,
  query: Record<string, string>,
  headerTemplates: Record<string, string>,
  bodyTemplate: unknown,
  args: Record<string, unknown>,
  used: Set<string>,
  unused: 'query' | 'body' | 'ignore',
) {
  const missing = paramsIn(urlTemplate).filter((p) => args[p] === undefined || args[p] === null || args[p] === '');
  if (missing.length)
    throw new Error(
      `The URL needs ${missing.map((m) => `"${m}"`).join(', ')}; give ${missing.length > 1 ? 'them' : 'it'} and call again.`,
    );
  for (const p of paramsIn(urlTemplate))
    if (['.', '..'].includes(argText(args[p])))
      throw new Error(
        `"${p}" cannot be "${argText(args[p])}": it would move the request to another path. Give an identifier.`,
      );
  const url = new URL(fill(urlTemplate, args, encodeURIComponent)!);
  for (const [k, v] of Object.entries(query)) {
    const value = fill(v, args);
    if (value !== undefined) url.searchParams.append(k, value);
  }
  const headers: Record<string, string> = {
    'User-Agent': 'agent-toolbelt-rest/0.1',
    Accept: 'application/json, text/*;q=0.9, */*;q=0.1',
  };
  for (const [k, v] of Object.entries(headerTemplates)) {
    const value = fill(v, args);
    if (value !== undefined) headers[k] = value;
  }
  const rest = Object.fromEntries(
    Object.entries(args).filter(([k, v]) => !used.has(k) && v !== undefined && v !== null),
  );
  let payload: unknown = bodyTemplate === undefined ? undefined : fillBody(bodyTemplate, args);
  if (unused === 'query') for (const [k, v] of Object.entries(rest)) url.searchParams.append(k, argText(v));
  else if (unused === 'body' && Object.keys(rest).length)
    payload =
      payload && typeof payload === 'object' && !Array.isArray(payload) ? { ...rest, ...payload } : (payload ?? rest);
  let body: Buffer | undefined;
  if (payload !== undefined) {
    body = requestBody(typeof payload === 'string' ? payload : JSON.stringify(payload));
    if (!Object.keys(headers).some((h) => h.toLowerCase() === 'content-type'))
      headers['Content-Type'] = typeof payload === 'string' ? 'text/plain; charset=utf-8' : 'application/json';
  }
  return { method, url, headers, body };
}
