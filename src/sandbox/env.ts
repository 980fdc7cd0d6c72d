/**
 * The environment a contained command gets: the caller's, without variables whose names look like
 * credentials and with URL credentials removed from every value, HOME and TMPDIR set, and the proxy
 * variables pointing at the sandbox's proxy (or none).
 * Must not start anything: a plain mapping from one environment to another.
 */
import { proxyUrl } from './bwrap.js';

/**
 * Environment variables a contained command does not get: names that usually hold credentials.
 * Anywhere in the name: `PASSWORD`, `PASSWD`, `SECRET`, `TOKEN`, `CREDENTIAL`, `APIKEY`/`API_KEY`,
 * `PRIVATE_KEY`, `AUTH` (not `AUTHOR`: git's `GIT_AUTHOR_NAME` stays); `KEY` or `KEYS` as a whole
 * word (`AWS_ACCESS_KEY`, `KEY_ID`). So `PGPASSWORD`, `GITHUB_AUTHTOKEN`, `NPM_TOKEN`, `SSH_AUTH_SOCK` are left out.
 * The sandbox hides secret files; these are the same in the environment.
 */
export const SANDBOX_SECRET_ENV =
  /PASSWORD|PASSWD|SECRET|TOKEN|CREDENTIAL|API_?KEY|PRIVATE_?KEY|AUTH(?!OR)|(?:^|_)KEYS?(?:_|$)/i;
/**
 * URL credentials in any variable's value (`scheme://user:pass@host`, `https://token@host`): the
 * `user:pass@` part is removed and the rest of the value kept (`TOOLBELT_STORE_URL`, `DATABASE_URL`).
 */
export const SANDBOX_URL_CREDENTIALS = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@]*@/gi;

/** The environment inside: no credential-looking variables, no URL credentials, HOME and TMPDIR set, the proxy (or none). */
export function containedEnv(given: NodeJS.ProcessEnv, home: string, proxy: boolean): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(given))
    if (!SANDBOX_SECRET_ENV.test(k) && !/_?proxy$/i.test(k)) env[k] = v?.replace(SANDBOX_URL_CREDENTIALS, '$1');
  env.HOME = home;
  env.TMPDIR = '/tmp';
  if (proxy) {
    const url = proxyUrl();
    for (const k of ['HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY', 'http_proxy', 'https_proxy', 'all_proxy']) env[k] = url;
  }
  return env;
}
