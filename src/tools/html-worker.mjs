// HTML -> markdown / text for webfetch, run in a worker thread (see html-convert.ts): sanitize-html
// and turndown are slow (super-linear) and recursive on deeply nested pages, so they run where the
// main event loop cannot be blocked and where a runaway conversion can be terminated. Plain
// JavaScript because a worker runs outside any TypeScript transform.
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

const BLOCK_TAG =
  /<\/?(p|div|br|hr|li|ul|ol|dl|dt|dd|h[1-6]|tr|table|thead|tbody|section|article|main|aside|pre|blockquote|figure|figcaption|details|summary|address|caption)\b[^>]*>/gi;

const turndown = new TurndownService({
  headingStyle: 'atx',
  codeBlockStyle: 'fenced',
  bulletListMarker: '-',
  emDelimiter: '_',
  hr: '---',
});

function toMarkdown(html, base, dropped, maxDepth) {
  const clean = flattenDeepNesting(sanitizeHtml(html, sanitizeOptions(dropped, base)), maxDepth);
  return turndown
    .turndown(clean)
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

function toText(html, dropped, maxDepth) {
  const options = { ...sanitizeOptions(dropped, undefined), allowedAttributes: {} };
  const blocks = flattenDeepNesting(sanitizeHtml(html, options), maxDepth).replace(BLOCK_TAG, '\n$&');
  const text = sanitizeHtml(blocks, { allowedTags: [], allowedAttributes: {} })
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
  return text
    .split('\n')
    .map((line) => line.replace(/[ \t\f\v\u00a0]+/g, ' ').trim())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

parentPort.on('message', (job) => {
  try {
    const output =
      job.format === 'markdown'
        ? toMarkdown(job.html, job.base, job.dropped, job.maxDepth)
        : toText(job.html, job.dropped, job.maxDepth);
    parentPort.postMessage({ id: job.id, output });
  } catch (err) {
    parentPort.postMessage({ id: job.id, error: err instanceof Error ? err.message : String(err) });
  }
});
