/**
 * What a model reads about the skills before loading one: the listing in the `skill` tool's
 * description, within a character budget and never dropping a skill silently (descriptions are
 * shortened first; past that the listing says how many more there are and how to find them), and
 * the search behind `skill({ query })`.
 * Must not read skills (catalog.ts) nor run anything.
 */
import type { Skill } from './types.js';

/** Shortest description kept when descriptions are shortened to fit the budget, in characters. */
export const MIN_LISTED_DESCRIPTION_CHARS = 40;
/** Most skills one search answers. */
export const MAX_SKILL_SEARCH_RESULTS = 20;

/**
 * The listing of `skills` within `budget` characters: every skill with its whole description when
 * they fit; else with descriptions shortened (to no less than MIN_LISTED_DESCRIPTION_CHARS); else
 * as many as fit and a last line saying how many more there are and how to find them.
 */
export function skillListing(skills: readonly Skill[], budget: number): string {
  if (!skills.length) return '';
  const full = skills.map((s) => line(s.name, s.description));
  if (size(full) <= budget) return full.join('\n');
  // Shorten every description by the same cap, the largest that fits with the note saying so.
  const note = '(Descriptions shortened to fit; skill with { query } shows them whole.)';
  const overhead = skills.reduce((n, s) => n + s.name.length + 5, 0) + note.length;
  const cap = Math.floor((budget - overhead) / skills.length);
  if (cap >= MIN_LISTED_DESCRIPTION_CHARS) {
    const shortened = [...skills.map((s) => line(s.name, shorten(s.description, cap))), note];
    if (size(shortened) <= budget) return shortened.join('\n');
  }
  const lines: string[] = [];
  let used = 0;
  for (let i = 0; i < skills.length; i++) {
    const l = line(skills[i].name, shorten(skills[i].description, MIN_LISTED_DESCRIPTION_CHARS));
    const rest = skills.length - i - 1;
    const footer = moreLine(rest);
    if (used + l.length + 1 + (rest ? footer.length + 1 : 0) > budget) {
      lines.push(moreLine(skills.length - i));
      return lines.join('\n');
    }
    lines.push(l);
    used += l.length + 1;
  }
  return lines.join('\n');
}

function moreLine(n: number): string {
  return `(${n} more skill${n === 1 ? '' : 's'} not listed here: call skill with { "query": "<words>" } to search names and descriptions; any skill loads by its name.)`;
}

function line(name: string, description: string): string {
  return `- ${name}: ${description.replace(/\s+/g, ' ')}`;
}

function size(lines: string[]): number {
  return lines.reduce((n, l) => n + l.length + 1, 0) - 1;
}

function shorten(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ');
  return flat.length <= max ? flat : `${flat.slice(0, max - 1).trimEnd()}…`;
}

/**
 * The skills matching `query` (words, case-insensitive), best first: a skill scores per word found
 * in its name (twice) or description; the name equal to the query comes first.
 */
export function searchSkills(skills: readonly Skill[], query: string): Skill[] {
  const words = query
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);
  if (!words.length) return [];
  const q = query.trim().toLowerCase();
  const scored = skills
    .map((s, i) => {
      const name = s.name.toLowerCase();
      const desc = s.description.toLowerCase();
      let score = name === q ? 100 : 0;
      for (const w of words) score += (name.includes(w) ? 2 : 0) + (desc.includes(w) ? 1 : 0);
      return { s, i, score };
    })
    .filter((x) => x.score > 0);
  scored.sort((a, b) => b.score - a.score || a.i - b.i);
  return scored.slice(0, MAX_SKILL_SEARCH_RESULTS).map((x) => x.s);
}
