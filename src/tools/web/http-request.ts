/**
 * http_request: one HTTP request of any method to an API, through the SSRF guard, an optional host
 * allowlist, size and time caps; JSON answers parsed, binary refused. The exchange itself lives in
 * src/net/ (shared with the REST and OpenAPI tools); this file holds the tool's arguments only.
 */
import { z } from 'zod';
import { Tool } from '../../authoring/tool.js';
import { descriptionBeside } from '../../authoring/description.js';
import { policyFromInitContext } from '../../net/ssrf.js';
import { HTTP_DEFAULT_TIMEOUT_SECONDS, HTTP_MAX_TIMEOUT_SECONDS, HttpFailure, requestBody } from '../../net/http.js';
import { callApi, type ApiCallMetadata } from '../../net/api-call.js';
import { urlCredentials } from '../../net/scrub.js';
import { responseCacheOf } from '../../net/response-cache.js';

/** Methods http_request sends. */
export const HTTP_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'] as const;
/** Headers a call may not set: the connection's own (Node sets them from the URL and body). */
export const HTTP_FORBIDDEN_HEADERS: readonly string[] = [
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'proxy-connection',
];
/** Headers and query parameters one call may pass. */
export const HTTP_MAX_PAIRS = 50;

declare module '../../authoring/tool.js' {
  namespace Tool {
    interface InitContext {
      /** http_request may only reach these hosts (`api.example.com`, `*.example.com`); every redirect hop is checked too. Default: any public host. */
      httpAllowedHosts?: string[];
      /** http_request serves identical GETs from the registry's cache for this many seconds (default 0: off). */
      httpCacheTtlSeconds?: number;
    }
  }
}

const pair = z.object({
  name: z.string().describe('Header or parameter name'),
  value: z.string().describe('Its value'),
});

const parameters = z.object({
  method: z.enum(HTTP_METHODS).describe('The HTTP method.'),
  url: z.string().describe('The full http:// or https:// URL, query string included or given in `query`.'),
  headers: z
    .array(pair)
    .max(HTTP_MAX_PAIRS)
    .optional()
    .describe('Request headers as name/value pairs, e.g. [{"name":"Accept","value":"application/json"}].'),
  query: z
    .array(pair)
    .max(HTTP_MAX_PAIRS)
    .optional()
    .describe('Query parameters appended to the URL (encoded for you), as name/value pairs.'),
  body: z
    .string()
    .optional()
    .describe('The request body. JSON text is sent as application/json unless a Content-Type header says otherwise.'),
  timeout: z
    .number()
    .min(1)
    .max(HTTP_MAX_TIMEOUT_SECONDS)
    .optional()
    .describe(
      `Seconds for the whole request (default ${HTTP_DEFAULT_TIMEOUT_SECONDS}, max ${HTTP_MAX_TIMEOUT_SECONDS}).`,
    ),
});

export const HttpRequestTool = Tool.define<typeof parameters, ApiCallMetadata>(
  {
    id: 'http_request',
    permissions: { required: ['network'] },
    descriptionPath: descriptionBeside(import.meta.url, 'http_request'),
    danger: 'moderate',
  },
  (initCtx) => {
    const policy = policyFromInitContext(initCtx);
    const allowedHosts = initCtx.httpAllowedHosts;
    const ttlSeconds = initCtx.httpCacheTtlSeconds ?? 0;
    const cache =
      ttlSeconds > 0 ? { store: responseCacheOf(initCtx), ttlMs: ttlSeconds * 1000, owner: 'http_request' } : undefined;
    return {
      description:
        'Send one HTTP request (GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS) to an API and return the response.',
      parameters,
      timeout: { managed: true, maxMs: (HTTP_MAX_TIMEOUT_SECONDS + 5) * 1000 },
      annotations: { openWorldHint: true, title: 'HTTP request' },
      async execute(args, ctx) {
        const secrets = urlCredentials(args.url);
        const url = parseUrl(args.url, secrets);
        for (const q of args.query ?? []) url.searchParams.append(q.name, q.value);
        const headers = requestHeaders(args.headers ?? []);
        const body = requestBody(args.body);
        if (body && !Object.keys(headers).some((k) => k.toLowerCase() === 'content-type'))
          headers['Content-Type'] = isJson(args.body!) ? 'application/json' : 'text/plain; charset=utf-8';
        return callApi({
          request: { method: args.method, url, headers, body },
          policy,
          allowedHosts,
          timeoutMs: (args.timeout ?? HTTP_DEFAULT_TIMEOUT_SECONDS) * 1000,
          secrets,
          cache,
          ctx,
        });
      },
    };
  },
);

function parseUrl(raw: string, secrets: string[]): URL {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    const shown = secrets.reduce((t, s) => t.split(s).join('***'), raw);
    throw new HttpFailure(`Invalid URL ${JSON.stringify(shown)}: give a full URL starting with http:// or https://.`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new HttpFailure(
      `Unsupported URL scheme "${url.protocol}": http_request only sends http:// and https:// requests.`,
    );
  return url;
}

function requestHeaders(pairs: Array<{ name: string; value: string }>): Record<string, string> {
  const headers: Record<string, string> = {
    'User-Agent': 'agent-toolbelt-http/0.1',
    Accept: 'application/json, text/*;q=0.9, */*;q=0.1',
  };
  for (const { name, value } of pairs) {
    const lower = name.trim().toLowerCase();
    if (!/^[!#$%&'*+.^_`|~0-9a-z-]+$/.test(lower))
      throw new HttpFailure(`Invalid header name ${JSON.stringify(name)}: use letters, digits and "-" only.`);
    if (/[\r\n\0]/.test(value))
      throw new HttpFailure(`The value of header ${name} contains a line break or NUL; remove it.`);
    if (HTTP_FORBIDDEN_HEADERS.includes(lower))
      throw new HttpFailure(`The header ${name} is set by the connection itself and cannot be given; leave it out.`);
    for (const k of Object.keys(headers)) if (k.toLowerCase() === lower) delete headers[k];
    headers[name.trim()] = value;
  }
  return headers;
}

function isJson(text: string): boolean {
  if (!/^\s*[[{"]/.test(text)) return false;
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
