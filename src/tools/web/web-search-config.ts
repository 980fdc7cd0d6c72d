/**
 * web_search's configuration: which backend, from code or the environment, its limits, and why the
 * tool is left out when none is set. Light on purpose: the package root and the tool list import it.
 * Must not import zod or talk to a backend (the tool in web-search.ts does).
 */
import type { Tool } from '../../authoring/tool.js';

declare module '../../authoring/tool.js' {
  namespace Tool {
    interface InitContext {
      /** web_search's backend; default: from the environment (see `webSearchConfigFromEnv`). */
      webSearch?: WebSearchConfig;
    }
  }
}

/** Results returned when `limit` is not given. */
export const WEB_SEARCH_DEFAULT_RESULTS = 5;
/** Largest `limit` a call may ask for (Brave and Tavily return at most 20 per request). */
export const WEB_SEARCH_MAX_RESULTS = 20;
/** Longest query sent (Brave refuses longer ones). */
export const WEB_SEARCH_MAX_QUERY_CHARS = 400;
/** A result's title is cut to this many characters. */
export const WEB_SEARCH_MAX_TITLE_CHARS = 200;
/** A result's snippet is cut to this many characters. */
export const WEB_SEARCH_MAX_SNIPPET_CHARS = 500;
/** A backend's response body is read up to this many bytes; a larger one is an error. */
export const WEB_SEARCH_MAX_RESPONSE_BYTES = 2 * 1024 * 1024;
/** How long one search may take (ms) unless the config says otherwise. */
export const WEB_SEARCH_TIMEOUT_MS = 15_000;
/** Default base URLs of the hosted backends (override with `baseUrl` or the *_BASE_URL variables). */
export const WEB_SEARCH_DEFAULT_BASE_URLS = Object.freeze({
  brave: 'https://api.search.brave.com',
  tavily: 'https://api.tavily.com',
});

/** The backends web_search speaks to. */
export type WebSearchBackend = 'searxng' | 'brave' | 'tavily';

/** Which backend web_search uses, and how to reach it. */
export interface WebSearchConfig {
  backend: WebSearchBackend;
  /** The backend's base URL: required for SearXNG (your instance); for Brave and Tavily a proxy or a test server. */
  baseUrl?: string;
  /** Brave's subscription token or Tavily's API key (SearXNG needs none). */
  apiKey?: string;
  /** Per-search time limit in ms; default WEB_SEARCH_TIMEOUT_MS. */
  timeoutMs?: number;
}

/** One search result as the model sees it. */
export interface WebSearchResult {
  title: string;
  url: string;
  snippet: string;
}

/** What web_search reports. */
export interface WebSearchMetadata extends Tool.Metadata {
  backend: WebSearchBackend;
  query: string;
  results: WebSearchResult[];
  truncated: false;
}

/** What to set for web_search to be registered (shown by `toolbelt list` and the tool itself). */
export const WEB_SEARCH_SETUP =
  'web_search needs a search backend: set SEARXNG_URL (a SearXNG instance with the json format enabled), ' +
  'BRAVE_SEARCH_API_KEY (Brave Search) or TAVILY_API_KEY (Tavily); WEB_SEARCH_BACKEND picks one when several are set. ' +
  'In code, pass initCtx.webSearch = { backend, baseUrl?, apiKey? }.';

/** Every backend, in the order the environment is searched. */
export const BACKENDS: readonly WebSearchBackend[] = ['searxng', 'brave', 'tavily'];

/**
 * The backend the environment configures, or undefined: SEARXNG_URL, BRAVE_SEARCH_API_KEY
 * (BRAVE_SEARCH_BASE_URL), TAVILY_API_KEY (TAVILY_BASE_URL); WEB_SEARCH_BACKEND chooses among them,
 * otherwise the first set in that order. Throws when WEB_SEARCH_BACKEND names an unknown or unset backend.
 */
export function webSearchConfigFromEnv(env: NodeJS.ProcessEnv = process.env): WebSearchConfig | undefined {
  const set = (v: string | undefined) => (v && v.trim() ? v.trim() : undefined);
  const searxng = set(env.SEARXNG_URL);
  const brave = set(env.BRAVE_SEARCH_API_KEY);
  const tavily = set(env.TAVILY_API_KEY);
  const available: Record<WebSearchBackend, WebSearchConfig | undefined> = {
    searxng: searxng ? { backend: 'searxng', baseUrl: searxng } : undefined,
    brave: brave ? { backend: 'brave', apiKey: brave, baseUrl: set(env.BRAVE_SEARCH_BASE_URL) } : undefined,
    tavily: tavily ? { backend: 'tavily', apiKey: tavily, baseUrl: set(env.TAVILY_BASE_URL) } : undefined,
  };
  const chosen = set(env.WEB_SEARCH_BACKEND)?.toLowerCase();
  if (chosen) {
    if (!BACKENDS.includes(chosen as WebSearchBackend))
      throw new Error(`WEB_SEARCH_BACKEND=${JSON.stringify(chosen)} is not a backend: use searxng, brave or tavily.`);
    const config = available[chosen as WebSearchBackend];
    if (!config)
      throw new Error(`WEB_SEARCH_BACKEND=${chosen} is set but its settings are missing. ${WEB_SEARCH_SETUP}`);
    return config;
  }
  return BACKENDS.map((b) => available[b]).find((c) => c !== undefined);
}

/** Why web_search is not registered by `registerBuiltinTools` here, or undefined when a backend is configured. */
export function webSearchUnregisteredReason(env: NodeJS.ProcessEnv = process.env): string | undefined {
  try {
    return webSearchConfigFromEnv(env) ? undefined : WEB_SEARCH_SETUP;
  } catch (err) {
    return (err as Error).message;
  }
}
