// HTML -> markdown / text for webfetch, run in a worker thread (see html-convert.ts): a linear
// pre-pass bounds the raw page's nesting and element count before sanitize-html (whose parser is
// quadratic in unclosed nesting) sees it, and turndown (linear but ~30 µs per element, recursive)
// gets at most MAX_HTML_ELEMENTS; the worker can still be terminated if a conversion runs away.
// Must not fetch, decide limits (html-convert.ts names them) or word results (webfetch.ts does).
// Plain JavaScript because a worker runs outside any TypeScript transform. Over 400 lines: the
// pre-pass mirrors the parser's tag tables, which take a hundred lines on their own.
import { parentPort } from 'node:worker_threads';
import sanitizeHtml from 'sanitize-html';
import TurndownService from 'turndown';

const VOID = new Set([
  'area',
  'base',
  'br',
  'col',
  'embed',
  'hr',
  'img',
  'input',
  'link',
  'meta',
  'source',
  'track',
  'wbr',
]);
const ROLES_DROPPED = ['navigation', 'banner', 'contentinfo', 'search', 'dialog'];

function sanitizeOptions(dropped, base) {
  const absolute = (value) => {
    if (!value) return value;
    try {
      return new URL(value, base).href;
    } catch {
      return value;
    }
  };
  return {
    allowedTags: [
      ...sanitizeHtml.defaults.allowedTags.filter((t) => !dropped.includes(t)),
      'img',
      'del',
      'ins',
      'details',
      'summary',
    ],
    allowedAttributes: {
      a: ['href', 'title'],
      img: ['src', 'alt', 'title'],
      code: ['class'],
      pre: ['class'],
      td: ['colspan', 'rowspan'],
      th: ['colspan', 'rowspan'],
    },
    allowedSchemes: ['http', 'https', 'mailto', 'tel'],
    nonTextTags: [...dropped],
    // Page chrome marked by role, and content the page itself hides.
    exclusiveFilter: (frame) =>
      ROLES_DROPPED.includes(String(frame.attribs.role ?? '').toLowerCase()) ||
      'hidden' in frame.attribs ||
      frame.attribs['aria-hidden'] === 'true',
    transformTags: base
      ? {
          a: (tagName, attribs) => ({
            tagName,
            attribs: { ...attribs, ...(attribs.href ? { href: absolute(attribs.href) } : {}) },
          }),
          img: (tagName, attribs) => ({
            tagName,
            attribs: { ...attribs, ...(attribs.src ? { src: absolute(attribs.src) } : {}) },
          }),
        }
      : {},
  };
}

/**
 * Drops the tags nested deeper than `maxDepth` (their text stays): sanitize-html's output is
 * balanced, so a depth counter over its tags is exact. Keeps turndown's recursion and its
 * super-linear list handling bounded whatever the page's nesting.
 */
function flattenDeepNesting(html, maxDepth) {
  let depth = 0;
  return html.replace(/<(\/?)([a-zA-Z][a-zA-Z0-9]*)\b[^>]*>/g, (tag, close, name) => {
    if (VOID.has(name.toLowerCase())) return tag;
    if (close) {
      const drop = depth > maxDepth;
      depth = Math.max(0, depth - 1);
      return drop ? '' : tag;
    }
    depth++;
    return depth > maxDepth ? '' : tag;
  });
}

// Mirrors the tag rules of htmlparser2 (sanitize-html's parser) so that the depth counted here is
// the depth that parser reaches: which open tags close which open siblings, void elements, '/>'
// (self-closing only inside <svg>/<math>), raw-text elements, comments and declarations.
const P_ONLY = new Set(['p']);
const FORM_TAGS = new Set(['input', 'option', 'optgroup', 'select', 'button', 'datalist', 'textarea']);
const DD_DT = new Set(['dd', 'dt']);
const RT_RP = new Set(['rt', 'rp']);
const OPEN_CLOSES = new Map([
  ['tr', new Set(['tr', 'th', 'td'])],
  ['th', new Set(['th'])],
  ['td', new Set(['thead', 'th', 'td'])],
  ['body', new Set(['head', 'link', 'script'])],
  ['li', new Set(['li'])],
  ['option', new Set(['option'])],
  ['optgroup', new Set(['optgroup', 'option'])],
  ['dd', DD_DT],
  ['dt', DD_DT],
  ['rt', RT_RP],
  ['rp', RT_RP],
  ['tbody', new Set(['thead', 'tbody'])],
  ['tfoot', new Set(['thead', 'tbody'])],
  ...['select', 'input', 'output', 'button', 'datalist', 'textarea'].map((t) => [t, FORM_TAGS]),
  ...[
    'p',
    'h1',
    'h2',
    'h3',
    'h4',
    'h5',
    'h6',
    'address',
    'article',
    'aside',
    'blockquote',
    'details',
    'div',
    'dl',
    'fieldset',
    'figcaption',
    'figure',
    'footer',
    'form',
    'header',
    'hr',
    'main',
    'nav',
    'ol',
    'pre',
    'section',
    'table',
    'ul',
  ].map((t) => [t, P_ONLY]),
]);
const PARSER_VOID = new Set([
  'area',
  'base',
  'basefont',
  'br',
  'col',
  'command',
  'embed',
  'frame',
  'hr',
  'img',
  'input',
  'isindex',
  'keygen',
  'link',
  'meta',
  'param',
  'source',
  'track',
  'wbr',
]);
const FOREIGN = new Set(['math', 'svg']);
const INTEGRATION = new Set(['mi', 'mo', 'mn', 'ms', 'mtext', 'annotation-xml', 'foreignobject', 'desc', 'title']);
/** Elements whose content is text up to their end tag. */
const RAW_TEXT = new Set(['script', 'style', 'title', 'textarea', 'xmp']);

const isAlpha = (c) => (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
const isSpace = (c) => c === 32 || c === 9 || c === 10 || c === 12 || c === 13;

/**
 * Drops the open tags that would nest deeper than `maxDepth` in the parsed page, with their
 * matching end tags; all text and every other byte is kept. Cuts the page before its element
 * number `maxElements + 1` (`truncated`). One pass with a real stack (push and pop), so the cost
 * is linear in the page whatever its nesting. A page within both limits is returned unchanged.
 */
function boundNesting(html, maxDepth, maxElements) {
  const n = html.length;
  const stack = [];
  const foreign = [false];
  /** Open tags dropped (past the limit) by name, waiting for their end tags. */
  let dropped = new Map();
  const parts = [];
  let kept = 0; // html[kept..] not yet copied to parts
  let i = 0;
  let elements = 0;
  let truncated = false;
  const drop = (from, to) => {
    parts.push(html.slice(kept, from));
    kept = to;
  };
  const popTop = () => {
    stack.pop();
    // Whatever was dropped inside the closed element is closed with it.
    if (dropped.size) dropped = new Map();
  };
  while (i < n) {
    const lt = html.indexOf('<', i);
    if (lt === -1 || lt + 1 >= n) break;
    const c = html.charCodeAt(lt + 1);
    if (c === 33 /* ! */) {
      if (html.startsWith('<!--', lt)) {
        const end = html.indexOf('-->', lt + 4);
        i = end === -1 ? n : end + 3;
      } else if (html.startsWith('[CDATA[', lt + 2)) {
        const end = html.indexOf(']]>', lt + 9);
        i = end === -1 ? n : end + 3;
      } else {
        const end = html.indexOf('>', lt + 2);
        i = end === -1 ? n : end + 1;
      }
      continue;
    }
    if (c === 63 /* ? */) {
      const end = html.indexOf('>', lt + 2);
      i = end === -1 ? n : end + 1;
      continue;
    }
    if (c === 47 /* / */) {
      if (lt + 2 >= n) break;
      if (!isAlpha(html.charCodeAt(lt + 2))) {
        // '</>' is ignored; '</' and anything else opens a bogus comment up to '>'.
        const end = html.indexOf('>', lt + 2);
        i = end === -1 ? n : end + 1;
        continue;
      }
      let j = lt + 2;
      while (j < n) {
        const d = html.charCodeAt(j);
        if (isSpace(d) || d === 62 || d === 47) break;
        j++;
      }
      const name = html.slice(lt + 2, j).toLowerCase();
      const gt = html.indexOf('>', j);
      const end = gt === -1 ? n : gt + 1;
      if (gt === -1) break;
      const waiting = dropped.get(name);
      if (waiting) {
        if (waiting === 1) dropped.delete(name);
        else dropped.set(name, waiting - 1);
        drop(lt, end);
      } else {
        if (FOREIGN.has(name) || INTEGRATION.has(name)) foreign.pop();
        if (!PARSER_VOID.has(name)) {
          const pos = stack.lastIndexOf(name);
          if (pos !== -1) {
            while (stack.length > pos) popTop();
          }
        }
      }
      i = end;
      continue;
    }
    if (!isAlpha(c)) {
      i = lt + 1;
      continue;
    }
    // An open tag: its name, then attributes (quoted values may hold '>'), then '>' or '/>'.
    let j = lt + 1;
    while (j < n) {
      const d = html.charCodeAt(j);
      if (isSpace(d) || d === 62 || d === 47) break;
      j++;
    }
    const name = html.slice(lt + 1, j).toLowerCase();
    let selfClosing = false;
    let closed = false;
    while (j < n) {
      const d = html.charCodeAt(j);
      if (d === 62) {
        closed = true;
        j++;
        break;
      }
      if (d === 47) {
        j++;
        if (html.charCodeAt(j) === 62) {
          selfClosing = true;
          closed = true;
          j++;
          break;
        }
        continue;
      }
      if (isSpace(d)) {
        j++;
        continue;
      }
      // An attribute name, then maybe '=' and a value.
      while (j < n) {
        const e = html.charCodeAt(j);
        if (isSpace(e) || e === 61 || e === 62 || e === 47) break;
        j++;
      }
      while (j < n && isSpace(html.charCodeAt(j))) j++;
      if (html.charCodeAt(j) !== 61) continue;
      j++;
      while (j < n && isSpace(html.charCodeAt(j))) j++;
      const q = html.charCodeAt(j);
      if (q === 34 || q === 39) {
        const close = html.indexOf(q === 34 ? '"' : "'", j + 1);
        j = close === -1 ? n : close + 1;
      } else {
        while (j < n) {
          const e = html.charCodeAt(j);
          if (isSpace(e) || e === 62) break;
          j++;
        }
      }
    }
    if (!closed) break;
    const implied = OPEN_CLOSES.get(name);
    if (implied) while (stack.length && implied.has(stack[stack.length - 1])) popTop();
    const isVoid = PARSER_VOID.has(name);
    const inForeign = FOREIGN.has(name) || (!INTEGRATION.has(name) && foreign[foreign.length - 1]);
    // '/>' closes the element only in foreign content; raw-text elements are kept past the
    // limit (their content holds no tags, and dropping the tag would turn it into markup).
    const nests = !isVoid && !(selfClosing && inForeign);
    if (nests && stack.length >= maxDepth && !(RAW_TEXT.has(name) && !selfClosing)) {
      dropped.set(name, (dropped.get(name) ?? 0) + 1);
      drop(lt, j);
      i = j;
      continue;
    }
    // Elements kept count towards the cap; dropped ones cost the parser nothing.
    if (++elements > maxElements) {
      drop(lt, n);
      truncated = true;
      break;
    }
    if (!isVoid) {
      if (FOREIGN.has(name)) foreign.push(true);
      else if (INTEGRATION.has(name)) foreign.push(false);
      if (nests) stack.push(name);
    }
    i = j;
    if (RAW_TEXT.has(name) && !selfClosing) {
      // The content is text up to '</name' followed by a space, '/' or '>'.
      const re = new RegExp(`</${name}[\\s/>]`, 'gi');
      re.lastIndex = j;
      const m = re.exec(html);
      i = m ? m.index : n;
    }
  }
  if (!parts.length) return { html, truncated };
  parts.push(html.slice(kept));
  return { html: parts.join(''), truncated };
}

/**
 * Cuts balanced, sanitised HTML before its element number `maxElements + 1`: turndown's cost is
 * linear in the elements, so this bounds it. Every '<' followed by a letter in sanitize-html's
 * output is a tag (text has '<' escaped).
 */
function capElements(html, maxElements) {
  const open = /<[a-zA-Z]/g;
  let count = 0;
  while (open.exec(html)) {
    if (++count > maxElements) return { html: html.slice(0, open.lastIndex - 2), truncated: true };
  }
  return { html, truncated: false };
}

const BLOCK_TAG =
  /<\/?(p|div|br|hr|li|ul|ol|dl|dt|dd|h[1-6]|tr|table|thead|tbody|section|article|main|aside|pre|blockquote|figure|figcaption|details|summary|address|caption)\b[^>]*>/gi;

const turndown = new TurndownService({
  headingStyle: 'atx',
  codeBlockStyle: 'fenced',
  bulletListMarker: '-',
  emDelimiter: '_',
  hr: '---',
});

/** How far a page was converted: `truncatedAt` is the element limit that cut it, 0 if none did. */
function toMarkdown(html, base, dropped, limits) {
  const parsed = boundNesting(html, limits.maxParseDepth, limits.maxParseElements);
  const sanitized = sanitizeHtml(parsed.html, sanitizeOptions(dropped, base));
  const capped = capElements(flattenDeepNesting(sanitized, limits.maxDepth), limits.maxElements);
  const output = turndown
    .turndown(capped.html)
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  return {
    output,
    truncatedAt: capped.truncated ? limits.maxElements : parsed.truncated ? limits.maxParseElements : 0,
  };
}

function toText(html, dropped, limits) {
  const options = { ...sanitizeOptions(dropped, undefined), allowedAttributes: {} };
  const parsed = boundNesting(html, limits.maxParseDepth, limits.maxParseElements);
  const sanitized = sanitizeHtml(parsed.html, options);
  const blocks = flattenDeepNesting(sanitized, limits.maxDepth).replace(BLOCK_TAG, '\n$&');
  const text = sanitizeHtml(blocks, { allowedTags: [], allowedAttributes: {} })
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
  const output = text
    .split('\n')
    .map((line) => line.replace(/[ \t\f\v\u00a0]+/g, ' ').trim())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  return { output, truncatedAt: parsed.truncated ? limits.maxParseElements : 0 };
}

parentPort.on('message', (job) => {
  try {
    const { output, truncatedAt } =
      job.format === 'markdown'
        ? toMarkdown(job.html, job.base, job.dropped, job.limits)
        : toText(job.html, job.dropped, job.limits);
    parentPort.postMessage({ id: job.id, output, truncatedAt });
  } catch (err) {
    parentPort.postMessage({ id: job.id, error: err instanceof Error ? err.message : String(err) });
  }
});
