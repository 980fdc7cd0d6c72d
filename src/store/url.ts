/**
 * Store URLs in text a person or model reads: the password of `postgres://user:password@host/db`
 * never appears in an error, a log line or `toolbelt list`.
 * Must not parse or open connections (postgres.ts does).
 */

const CREDENTIALS = /([a-z][a-z0-9+.-]*:\/\/[^/\s:@]*):[^@\s/]*@/gi;
const PASSWORD_PARAM = /([?&](?:password|pass|pwd)=)[^&\s]*/gi;

/** `text` with the password of every URL (and any `password=` query parameter) replaced by `***`. */
export function redactSecrets(text: string, url?: string): string {
  let out = text.replace(CREDENTIALS, '$1:***@').replace(PASSWORD_PARAM, '$1***');
  const password = url ? passwordOf(url) : undefined;
  if (password) out = out.split(password).join('***');
  return out;
}

/** The URL with its password replaced by `***` (what `toolbelt list` shows). */
export function redactUrl(url: string): string {
  return redactSecrets(url, url);
}

function passwordOf(url: string): string | undefined {
  try {
    const u = new URL(url);
    const decoded = decodeURIComponent(u.password);
    return decoded.length >= 3 ? decoded : undefined;
  } catch {
    return undefined;
  }
}
