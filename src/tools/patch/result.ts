/**
 * What apply_patch answers: one line per file (A/M/R/D, its +/- lines, how loosely its hunks
 * matched) for the model, the unified diff of every file in metadata; and the refusal listing
 * every problem found before anything was written. Shared by the local tool and its backend variant.
 * Must not read or write files.
 */
import type { Tool } from '../../authoring/tool.js';
import { unifiedDiff } from '../files/diff.js';
import type { LocateLevel } from './locate.js';

/** Problems listed in one refusal; the rest are counted. */
export const MAX_LISTED_PROBLEMS = 8;

/** One file a patch changed, with its text before and after (LF, as the hunks saw it). */
export interface FileChange {
  operation: 'add' | 'update' | 'move' | 'delete';
  path: string;
  moveTo?: string;
  before: string;
  after: string;
  /** How each hunk was found (update and move). */
  levels?: LocateLevel[];
}

const LETTER: Record<FileChange['operation'], string> = { add: 'A', update: 'M', move: 'R', delete: 'D' };

/** The answer of an applied patch. */
export function patchResult(changes: readonly FileChange[], extra: Record<string, unknown> = {}): Tool.Result {
  let additions = 0;
  let deletions = 0;
  const files: Array<Record<string, unknown>> = [];
  const lines: string[] = [];
  const diffs: string[] = [];
  for (const c of changes) {
    const name = c.moveTo ?? c.path;
    const d = unifiedDiff(name, c.before, c.after);
    additions += d.additions;
    deletions += d.deletions;
    if (d.diff) diffs.push(d.diff);
    const loose = (c.levels ?? [])
      .map((level, i) => (level === 'exact' ? '' : `hunk ${i + 1} matched ignoring ${level.replace('-', ' ')}`))
      .filter(Boolean);
    const where = c.moveTo ? `${c.path} -> ${c.moveTo}` : c.path;
    lines.push(
      `${LETTER[c.operation]} ${where} (+${d.additions} -${d.deletions}${loose.length ? `; ${loose.join(', ')}` : ''})`,
    );
    files.push({
      path: c.path,
      ...(c.moveTo ? { moveTo: c.moveTo } : {}),
      operation: c.operation,
      additions: d.additions,
      deletions: d.deletions,
    });
  }
  const n = changes.length;
  return {
    title: n === 1 ? `${LETTER[changes[0].operation]} ${changes[0].moveTo ?? changes[0].path}` : `${n} files`,
    output: `Applied the patch to ${n} file${n === 1 ? '' : 's'} (+${additions} -${deletions} lines):\n${lines.join('\n')}`,
    metadata: { files, additions, deletions, diff: diffs.join('\n'), truncated: false, ...extra },
  };
}

/** The refusal of a patch that could not be applied as a whole: every problem, and that nothing changed. */
export function refusal(problems: readonly string[]): string {
  const listed = problems.slice(0, MAX_LISTED_PROBLEMS);
  const more = problems.length > listed.length ? `\n(and ${problems.length - listed.length} more)` : '';
  const head =
    problems.length === 1
      ? 'The patch was not applied, so nothing was changed:'
      : `The patch was not applied, so nothing was changed (${problems.length} problems):`;
  return `${head}\n${listed.map((p) => `- ${p}`).join('\n')}${more}\nFix ${problems.length === 1 ? 'it' : 'them'} and send the whole patch again.`;
}

/** The refusals every apply_patch (local or over a backend) says the same way. */
export const refusals = {
  namedTwice: (shown: string, first: number, second: number) =>
    `The patch changes ${shown} twice (lines ${first} and ${second}). Put all its hunks under one '*** Update File:' section. Nothing was changed.`,
  addOverUnread: (shown: string) =>
    `${shown} already exists, and Add File would replace it without it having been read in this session. Read it first if you mean to replace it, or change it with '*** Update File:'.`,
  moveOverUnread: (dest: string, shown: string) =>
    `${dest} already exists, and moving ${shown} there would replace it without it having been read in this session. Read it first if you mean to replace it, or choose another '*** Move to:' path.`,
  missing: (shown: string, kind: 'delete' | 'update') =>
    `${shown} does not exist, so it cannot be ${kind === 'delete' ? 'deleted' : 'updated'}. Check the path (list or glob show what is there); to create a file use '*** Add File:'.`,
  directory: (shown: string) => `${shown} is a directory; apply_patch changes files only.`,
};

/** What apply_patch tells a model about itself (local and over a backend). */
export const APPLY_PATCH_SUMMARY =
  'Apply a patch (*** Begin Patch ... *** End Patch) that adds, deletes, updates or moves files; all of it or nothing.';
