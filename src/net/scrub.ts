/**
 * Keeping secrets out of what a model reads: URL credentials and known secret values masked in
 * text, in every form the package itself sends them (as given, percent- and form-encoded, JSON
 * escaped, the Basic credentials built from a URL's user:password, whole header values), and text
 * cut only after it is scrubbed, with a secret's prefix left at the cut masked too.
 * Must not know about any tool; webfetch, http_request and REST tools call it on everything they return.
 */

/** Secrets shorter than this are not scrubbed: they would mangle ordinary text, and a secret that short is not one. */
export const SECRET_MIN_CHARS = 4;

const URL_CREDENTIALS = /(\b[a-z][a-z0-9+.-]*:\/\/)[^/?#\s@]*@/gi;

/** `text` with `scheme://user:pass@` shown as `scheme://***@` and the given secrets as `***`. */
export function scrubText(text: string, secrets: readonly string[] = []): string {
  let out = text.replace(URL_CREDENTIALS, '$1***@');
  for (const secret of secrets) out = out.split(secret).join('***');
  return out;
}

/**
 * The first `max` characters of `text` with `...` added when it was longer: scrubbed first (so
 * the cut can never fall inside a whole secret), and a prefix of a secret left at the cut end
 * masked as well (`tok-SEC` at the cut becomes `***`).
 */
export function cutScrubbed(text: string, max: number, secrets: readonly string[] = []): string {
  const scrubbed = scrubText(text, secrets);
  if (scrubbed.length <= max) return scrubbed;
  return `${maskTrailingPrefix(scrubbed.slice(0, max), secrets)}...`;
}

/** `text` whose end is the start of one of `secrets` with that start replaced by `***`. */
function maskTrailingPrefix(text: string, secrets: readonly string[]): string {
  let longest = 0;
  for (const secret of secrets)
    for (let k = Math.min(secret.length - 1, text.length); k > longest; k--)
      if (text.endsWith(secret.slice(0, k))) {
        longest = k;
        break;
      }
  return longest ? `${text.slice(0, text.length - longest)}***` : text;
}

/**
 * Every form a secret may take in text we show: as given, URL-encoded, form-encoded, decoded,
 * JSON-escaped, and as the URL parser writes it in a path or a query.
 */
export function secretForms(secrets: readonly string[]): string[] {
  const out = new Set<string>();
  const add = (s: string) => {
    if (s.length < SECRET_MIN_CHARS) return;
    out.add(s);
    out.add(encodeURIComponent(s));
    out.add(new URLSearchParams({ s }).toString().slice(2));
    out.add(JSON.stringify(s).slice(1, -1));
    // As the URL parser writes it in a path and in a query (a `${ENV}` in a URL template); only
    // when that is the whole secret encoded (`?`, `#` or `..` would cut or fold it to a part).
    for (const f of [new URL(`http://x/${s}`).pathname.slice(1), new URL(`http://x/?${s}`).search.slice(1)])
      if (f.length >= s.length) out.add(f);
  };
  for (const s of secrets) {
    add(s);
    try {
      add(decodeURIComponent(s));
    } catch {
      // not percent-encoded
    }
  }
  return longestFirst(out);
}

/** The user and password of a URL string (`scheme://user:pass@host`), to scrub from what is shown. */
export function urlCredentials(raw: string): string[] {
  const m = /^\s*[a-z][a-z0-9+.-]*:\/\/([^/?#\s]*)@/i.exec(raw);
  return m ? m[1].split(':').filter(Boolean) : [];
}

/** What the package sends for one request: its URL (userinfo becomes Basic auth) and its headers. */
export interface SentRequest {
  url: URL;
  headers: Record<string, string>;
}

/**
 * Every form of `secrets` the request carries, plus what the package builds from them: the URL's
 * user and password (percent-encoded as in the URL and decoded), `user:password`, its base64 (the
 * `Authorization: Basic` value the connection sends), and each header value
 * holding a secret (without its scheme word: `Bearer`, `Basic`, `Token`...; a `Basic` value also
 * as the `user:pass` it decodes to). Longest first.
 */
export function sentSecretForms(secrets: readonly string[], request?: SentRequest): string[] {
  const base = new Set(secretForms(secrets));
  if (request?.url.username || request?.url.password) {
    const { username, password } = request.url;
    const user = safeDecode(username);
    const pass = safeDecode(password);
    for (const f of secretForms([username, password, user, pass])) base.add(f);
    const basic = Buffer.from(`${user}:${pass}`).toString('base64');
    for (const f of secretForms([`${user}:${pass}`, `${username}:${password}`, basic])) base.add(f);
  }
  const forms = new Set(base);
  for (const value of Object.values(request?.headers ?? {})) {
    if (![...base].some((s) => value.includes(s))) continue;
    // `Bearer <token>`: the token is scrubbed (the scheme word stays readable); any other value whole.
    const [, scheme, token] = /^([A-Za-z][\w-]*)\s+(\S.*)$/.exec(value) ?? [];
    for (const f of secretForms([token ?? value])) forms.add(f);
    // `Basic <base64>` written in the config: what it decodes to (`user:pass`) is the secret too.
    if (scheme?.toLowerCase() === 'basic' && token) {
      const decoded = Buffer.from(token, 'base64').toString('utf8');
      if (decoded.includes(':') && !/\p{Cc}|\uFFFD/u.test(decoded))
        for (const f of secretForms([decoded, ...decoded.split(':')])) forms.add(f);
    }
  }
  return longestFirst(forms);
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

// Longest first, so a secret inside a longer one's encoding is not half-replaced.
function longestFirst(forms: Iterable<string>): string[] {
  return [...forms].sort((a, b) => b.length - a.length);
}
