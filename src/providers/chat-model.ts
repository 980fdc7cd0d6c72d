/**
 * Turning a `provider:model` string (CLI `--model`, `TOOLBELT_MODEL`) into a LangChain chat model,
 * checking first that the provider is known, its package installed and its API key set; and turning
 * a failed model call (bad key, rate limit, server error, network failure) into one sentence that
 * says what to check. `.env` in the working directory is read first (`loadDotEnv`).
 * Must not hold CLI flags or agent loops: it only turns a spec into a model (or a clear error).
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fixGeminiParallelToolResults } from './gemini.js';
import { describeThrown } from '../text/describe.js';

/** What each supported provider needs: its LangChain package, the variable(s) holding the key, the base-URL variable. */
export interface ProviderInfo {
  pkg: string;
  /** Any one of these holds the API key (in the order the class reads them). */
  keyEnv?: readonly string[];
  /** The variable that points the class at another endpoint (a proxy, a gateway, a local mock). */
  baseUrlEnv?: string;
  /** Where requests go when `baseUrlEnv` is unset. */
  defaultBaseUrl?: string;
}

/** The providers `toolbelt agent` and the demo accept; openai, anthropic and google-genai are tested end to end. */
export const PROVIDERS: Readonly<Record<string, ProviderInfo>> = {
  openai: {
    pkg: '@langchain/openai',
    keyEnv: ['OPENAI_API_KEY'],
    baseUrlEnv: 'OPENAI_BASE_URL',
    defaultBaseUrl: 'https://api.openai.com/v1',
  },
  anthropic: {
    pkg: '@langchain/anthropic',
    keyEnv: ['ANTHROPIC_API_KEY'],
    baseUrlEnv: 'ANTHROPIC_BASE_URL',
    defaultBaseUrl: 'https://api.anthropic.com',
  },
  'google-genai': {
    pkg: '@langchain/google-genai',
    keyEnv: ['GOOGLE_API_KEY', 'GEMINI_API_KEY'],
    baseUrlEnv: 'GOOGLE_GEMINI_BASE_URL',
    defaultBaseUrl: 'https://generativelanguage.googleapis.com',
  },
  azure_openai: { pkg: '@langchain/openai', keyEnv: ['AZURE_OPENAI_API_KEY'] },
  'google-vertexai': { pkg: '@langchain/google-vertexai' },
  mistralai: { pkg: '@langchain/mistralai', keyEnv: ['MISTRAL_API_KEY'] },
  groq: { pkg: '@langchain/groq', keyEnv: ['GROQ_API_KEY'] },
  deepseek: { pkg: '@langchain/deepseek', keyEnv: ['DEEPSEEK_API_KEY'] },
  xai: { pkg: '@langchain/xai', keyEnv: ['XAI_API_KEY'] },
  cohere: { pkg: '@langchain/cohere', keyEnv: ['COHERE_API_KEY'] },
  bedrock: { pkg: '@langchain/aws' },
  ollama: { pkg: '@langchain/ollama' },
};

/** Retries of a failed model request (network errors, 408/409/429/5xx) when `--max-retries` is not given. */
export const DEFAULT_MAX_RETRIES = 2;
/** The most retries `--max-retries` accepts. */
export const MAX_RETRIES_LIMIT = 10;

/** A model spec that cannot be used, with a message that says what to do. */
export class ModelConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ModelConfigError';
  }
}

/** A model call that failed (API or network error), described in one line. */
export class ModelCallError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ModelCallError';
  }
}

/** Splits `provider:model`; throws a ModelConfigError for anything else, or for a provider not in PROVIDERS. */
export function parseModelSpec(spec: string | undefined): { provider: string; model: string } {
  const m = /^([A-Za-z0-9_-]+):(.+)$/.exec(spec?.trim() ?? '');
  if (!m) {
    throw new ModelConfigError(
      `Model ${JSON.stringify(spec ?? '')} is not of the form provider:model (e.g. openai:gpt-4o-mini, anthropic:claude-sonnet-4-5). ` +
        'Pass --model provider:model or set TOOLBELT_MODEL.',
    );
  }
  if (!Object.hasOwn(PROVIDERS, m[1])) {
    throw new ModelConfigError(
      `Unknown model provider "${m[1]}" in ${JSON.stringify(spec?.trim())}. Supported providers: ${Object.keys(PROVIDERS).join(', ')}.`,
    );
  }
  return { provider: m[1], model: m[2] };
}

/** Environment and module loading, injectable for tests. */
export interface ModelLoaderDeps {
  env?: Record<string, string | undefined>;
  importModule?: (name: string) => Promise<unknown>;
  /** Retries of a failed request (default DEFAULT_MAX_RETRIES). */
  maxRetries?: number;
}

/**
 * Reads `.env` from `dir` (default: the working directory) into `process.env` with Node's own
 * parser; variables already set in the environment win. Returns the file read, if any.
 */
export function loadDotEnv(dir = process.cwd()): string | undefined {
  const file = path.join(dir, '.env');
  if (!existsSync(file)) return undefined;
  try {
    process.loadEnvFile(file);
  } catch (err) {
    throw new ModelConfigError(`Could not read ${file}: ${(err as Error).message}. Fix or remove the file.`);
  }
  return file;
}

/** Checks that the provider's package can be loaded and its key is set; throws ModelConfigError naming what is missing. */
export async function checkProvider(provider: string, deps: ModelLoaderDeps = {}): Promise<void> {
  const known = PROVIDERS[provider];
  if (!known)
    throw new ModelConfigError(
      `Unknown model provider "${provider}". Supported providers: ${Object.keys(PROVIDERS).join(', ')}.`,
    );
  const env = deps.env ?? process.env;
  const importModule = deps.importModule ?? ((name: string) => import(name));
  try {
    await importModule(known.pkg);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (
      code === 'ERR_MODULE_NOT_FOUND' ||
      code === 'MODULE_NOT_FOUND' ||
      /Cannot find (module|package)/.test(String((err as Error).message))
    ) {
      throw new ModelConfigError(
        `The model provider "${provider}" needs the package ${known.pkg}, which is not installed. Install it with: npm install ${known.pkg}`,
      );
    }
    throw err;
  }
  const keys = known.keyEnv ?? [];
  if (keys.length && !keys.some((k) => env[k])) {
    const where =
      keys.length === 1
        ? `the environment variable ${keys[0]}, which is not set`
        : `one of the environment variables ${keys.join(' or ')}, none of which is set`;
    throw new ModelConfigError(
      `The model provider "${provider}" needs an API key in ${where}. Set it (e.g. in .env: ${keys[0]}=...) and retry.`,
    );
  }
}

type ModelClass = new (fields: Record<string, unknown>) => unknown;

/** The class each end-to-end tested provider is built with (others go through langchain's initChatModel). */
const CLASSES: Readonly<Record<string, string>> = {
  openai: 'ChatOpenAI',
  anthropic: 'ChatAnthropic',
  'google-genai': 'ChatGoogleGenerativeAI',
};

/** Makes a chat model from `provider:model`, after `checkProvider`; retries are bounded by `deps.maxRetries`. */
export async function loadChatModel(spec: string | undefined, deps: ModelLoaderDeps = {}): Promise<unknown> {
  const { provider, model } = parseModelSpec(spec);
  await checkProvider(provider, deps);
  const importModule = deps.importModule ?? ((name: string) => import(name));
  const mod = (await importModule(PROVIDERS[provider].pkg)) as Record<string, unknown>;
  const env = deps.env ?? process.env;
  const maxRetries = deps.maxRetries ?? DEFAULT_MAX_RETRIES;
  try {
    const className = CLASSES[provider];
    const Class = className ? (mod[className] as ModelClass | undefined) : undefined;
    if (Class) {
      const fields: Record<string, unknown> = { model, maxRetries };
      // The Gemini class reads no base-URL variable of its own: pass the one the Google SDKs use.
      const geminiBase = provider === 'google-genai' ? env.GOOGLE_GEMINI_BASE_URL : undefined;
      if (geminiBase) fields.baseUrl = geminiBase;
      const instance = new Class(fields);
      return provider === 'google-genai' ? fixGeminiParallelToolResults(instance) : instance;
    }
    const { initChatModel } = await import('langchain');
    return await initChatModel(model, { modelProvider: provider, maxRetries });
  } catch (err) {
    throw new ModelConfigError(`Could not create the model ${provider}:${model}: ${describeThrown(err)}`);
  }
}

const NETWORK_CODES: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'host name not found (DNS)',
  EAI_AGAIN: 'DNS lookup failed',
  ETIMEDOUT: 'connection timed out',
  ECONNRESET: 'connection reset',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  UND_ERR_CONNECT_TIMEOUT: 'connection timed out',
  UND_ERR_HEADERS_TIMEOUT: 'no response in time',
  UND_ERR_SOCKET: 'connection closed',
};

/** The HTTP status and API message of a failed call, from whichever SDK threw it. */
function statusOf(err: unknown): { status?: number; detail: string } {
  let status: number | undefined;
  let detail = '';
  for (let e: unknown = err, depth = 0; e && depth < 6; e = (e as { cause?: unknown }).cause, depth++) {
    const o = e as { status?: unknown; response?: { status?: unknown }; message?: unknown; error?: unknown };
    if (status === undefined && typeof o.status === 'number') status = o.status;
    if (status === undefined && typeof o.response?.status === 'number') status = o.response.status;
    const msg = typeof o.message === 'string' ? o.message : '';
    const bracket = /\[(\d{3})(?: [^\]]*)?\]\s*(.*)$/s.exec(msg);
    if (status === undefined && bracket) status = Number(bracket[1]);
    if (!detail) detail = (bracket?.[2] ?? msg).replace(/^\d{3}\s+/, '');
  }
  return { status, detail: oneLine(detail) };
}

function networkReason(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    const o = e as { code?: unknown; name?: unknown; message?: unknown; errors?: unknown[] };
    if (typeof o.code === 'string' && NETWORK_CODES[o.code]) return NETWORK_CODES[o.code];
    // AggregateError (happy eyeballs: one error per address)
    if (Array.isArray(o.errors)) {
      for (const inner of o.errors) {
        const code = (inner as { code?: unknown }).code;
        if (typeof code === 'string' && NETWORK_CODES[code]) return NETWORK_CODES[code];
      }
    }
    const name = typeof o.name === 'string' ? o.name : '';
    if (name === 'APIConnectionTimeoutError') return 'request timed out';
    if (name === 'TimeoutError') return 'request timed out';
  }
  const text = String((err as Error)?.message ?? '');
  if (/fetch failed|Connection error|network/i.test(text)) return 'connection failed';
  return undefined;
}

function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 300 ? `${flat.slice(0, 297)}...` : flat;
}

/**
 * One line for a failed model call: a network failure names the host and what to check; a
 * 401/403, 429 or 5xx says what the API answered and what to do. Anything else keeps its message.
 */
export function describeModelError(
  err: unknown,
  spec: string,
  options: { env?: Record<string, string | undefined>; maxRetries?: number } = {},
): string {
  const env = options.env ?? process.env;
  const retries = options.maxRetries ?? DEFAULT_MAX_RETRIES;
  const { provider } = parseModelSpec(spec);
  const info = PROVIDERS[provider];
  const baseUrl = (info.baseUrlEnv && env[info.baseUrlEnv]) || info.defaultBaseUrl;
  let host = provider;
  try {
    if (baseUrl) host = new URL(baseUrl).host;
  } catch {
    host = baseUrl ?? provider;
  }
  const after = retries === 1 ? 'after 1 retry' : `after ${retries} retries`;
  const { status, detail } = statusOf(err);
  const said = detail ? `: ${detail}` : '';
  const keys = info.keyEnv?.join(' or ') ?? 'the API key';
  if (status === 401 || status === 403)
    return `The ${provider} API at ${host} refused the API key (${status}${said}). Check ${keys}.`;
  if (status === 429)
    // No retry count here: the classes decide whether a 429 is worth retrying (a quota error is not).
    return `The ${provider} API at ${host} is rate-limiting this key (429${said}). Wait a moment and retry, or check the account's quota and rate limits.`;
  if (status !== undefined && status >= 500)
    return `The ${provider} API at ${host} failed (${status}${said}) ${after}. Try again later; --max-retries sets the retries.`;
  if (status !== undefined) return `The ${provider} API at ${host} refused the request (${status}${said}).`;
  const reason = networkReason(err);
  if (reason) {
    const which = info.baseUrlEnv
      ? `${info.baseUrlEnv} (${env[info.baseUrlEnv] ? `set to ${env[info.baseUrlEnv]}` : `unset: ${info.defaultBaseUrl}`})`
      : 'the provider settings';
    return `Could not reach the ${provider} API at ${host} (${reason}) ${after}. Check the network connection, proxy and ${which}; --max-retries sets the retries.`;
  }
  return `The ${provider} model call failed: ${oneLine(String((err as Error)?.message ?? err))}`;
}
