/**
 * Fitting a tool's description under an endpoint's limit (`maxDescriptionChars`: Azure OpenAI and
 * several OpenAI-compatible proxies refuse a description over 1,024 characters). What matters comes
 * first and stays: the opening lines, kept whole while they fit. A `- name: text` line about a
 * parameter moves into that parameter's own description; the rest is left out with a pointer to
 * `toolbelt run <tool> --help`, which prints the whole text.
 * Must not change a description that fits, nor shorten parameter descriptions (the limit is the tool's).
 */
import type { JsonSchema } from '../schema/portable.js';

/** The shortest `maxDescriptionChars` accepted: room for a first sentence and the pointer. */
export const MIN_DESCRIPTION_CHARS = 200;

/** A description and schema that fit, and what was moved. */
export interface FittedDescription {
  description: string;
  schema: JsonSchema;
  /** Parameters whose descriptions received a line of the tool's description. */
  moved: string[];
  /** Whether lines were left out (the pointer says where to read them). */
  shortened: boolean;
}

/** The note ending a shortened description. */
export function moreNote(toolId: string): string {
  return `\n(Shortened; the whole description: \`toolbelt run ${toolId} --help\`.)`;
}

/**
 * `description` cut to at most `max` characters as the module comment says; `schema`'s top-level
 * properties receive the lines about them. Unchanged when it fits.
 */
export function fitDescription(
  toolId: string,
  description: string,
  schema: JsonSchema,
  max: number,
): FittedDescription {
  if (!Number.isInteger(max) || max < MIN_DESCRIPTION_CHARS)
    throw new Error(
      `maxDescriptionChars must be a whole number of at least ${MIN_DESCRIPTION_CHARS}, got ${JSON.stringify(max)}.`,
    );
  if (description.length <= max) return { description, schema, moved: [], shortened: false };
  const properties = (schema as { properties?: Record<string, JsonSchema> }).properties ?? {};
  const lines = description.split('\n');
  const kept: string[] = [];
  const movedText = new Map<string, string[]>();
  for (const line of lines) {
    const m = /^\s*[-*]\s+`?([A-Za-z_][\w]*)`?\s*:\s+(.+)$/.exec(line);
    const target = m && Object.hasOwn(properties, m[1]) ? m[1] : undefined;
    if (target) movedText.set(target, [...(movedText.get(target) ?? []), m![2].trim()]);
    else kept.push(line);
  }
  const note = moreNote(toolId);
  let text = kept
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trimEnd();
  let shortened = false;
  if (text.length > max) {
    shortened = true;
    const room = max - note.length;
    const out: string[] = [];
    let length = 0;
    for (const line of text.split('\n')) {
      const add = (out.length ? 1 : 0) + line.length;
      if (length + add > room) {
        // The first line always says something: cut it at a sentence, else a word.
        if (!out.length) out.push(cutLine(line, room));
        break;
      }
      out.push(line);
      length += add;
    }
    text = out.join('\n').trimEnd() + note;
  }
  const moved = [...movedText.keys()];
  if (!moved.length) return { description: text, schema, moved, shortened };
  const fitted = { ...properties };
  for (const [name, extra] of movedText) {
    const prop = { ...(fitted[name] as Record<string, unknown>) };
    const own = typeof prop.description === 'string' ? prop.description.trim() : '';
    const add = extra.filter((e) => !own.includes(e));
    if (add.length) prop.description = [own, ...add].filter(Boolean).join(' ');
    fitted[name] = prop;
  }
  return { description: text, schema: { ...(schema as object), properties: fitted }, moved, shortened };
}

function cutLine(line: string, room: number): string {
  const head = line.slice(0, Math.max(0, room - 3));
  const sentence = head.lastIndexOf('. ');
  if (sentence > room / 2) return head.slice(0, sentence + 1);
  const word = head.lastIndexOf(' ');
  return `${word > 0 ? head.slice(0, word) : head}...`;
}
