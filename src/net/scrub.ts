/**
 * Keeping secrets out of what a model reads: URL credentials and known secret values masked in text.
 * Must not know about any tool; webfetch, http_request and REST tools call it on everything they return.
 */

const URL_CREDENTIALS = /(\b[a-z][a-z0-9+.-]*:\/\/)[^/?#\s@]*@/gi;

/** `text` with `scheme://user:pass@` shown as `scheme://***@` and the given secrets as `***`. */
export function scrubText(text: string, secrets: readonly string[] = []): string {
  let out = text.replace(URL_CREDENTIALS, '$1***@');
  for (const secret of secrets) out = out.split(secret).join('***');
  return out;
}
