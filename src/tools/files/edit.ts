/**
 * edit: replace text in a file. Exact match first, then the tolerant cascade of edit-match.ts;
 * serialised per file, checked against the session's last read, written atomically, CRLF and BOM
 * kept. The unified diff goes to metadata, a one-line summary to the model.
 * Must not hold matchers (edit-match.ts) or diff code (src/tools/files/diff.ts).
 */
import { promises as fs, type Stats } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { Tool } from '../../authoring/tool.js';
import { descriptionBeside } from '../../authoring/description.js';
import { tenantOf, type Tenant } from '../../workspace/tenant.js';
import { Workspace, atomicWriteFile, withFileLock, stampOf } from '../../workspace/workspace.js';
import { decodeLossless, encodeLossless, hasEscapeRange } from './lossless-text.js';
import { statIfExists } from '../../platform/files.js';
import { diffOfReplacements, type DiffSummary } from './diff.js';
import { exactByteEdit } from './edit-bytes.js';
import { recordChange } from './undo-log.js';
import { editedState, fileState, type EntryState } from './undo-state.js';
import { findMatches, closestCandidate, rangeLines, AmbiguousBlockError, type MatchRange } from './edit-match.js';

export { DIFF_CONTEXT_LINES } from './diff.js';
/** Lines of the closest candidate quoted in a not-found error. */
export const MAX_CANDIDATE_LINES = 30;
/** Match locations listed in an ambiguity error. */
export const MAX_LISTED_MATCHES = 10;
/** Largest file edit changes (the same as write's MAX_WRITE_BYTES): it is read, matched and rewritten in memory. */
export const MAX_EDIT_FILE_BYTES = 50 * 1024 * 1024;

/** edit's arguments (shared with edit over a backend). */
export const editParameters = z.object({
  filePath: z.string().describe('Path of the file to edit: absolute, or relative to the workspace root.'),
  oldString: z
    .string()
    .describe(
      'The exact text to replace (copy it from read output, without the "N: " prefixes). Empty to create a new file.',
    ),
  newString: z.string().describe('The text to put in its place (must differ from oldString).'),
  // No preprocess here: providers cannot be sent a transform; "true"/"false" strings are repaired
  // by the pipeline before validation.
  replaceAll: z
    .boolean()
    .optional()
    .describe('Replace every occurrence of oldString instead of requiring exactly one (default false).'),
});

export const EditTool = Tool.define(
  {
    id: 'edit',
    permissions: { required: ['write'] },
    descriptionPath: descriptionBeside(import.meta.url, 'edit'),
    danger: 'moderate',
  },
  async (initCtx) => {
    const ws = await Workspace.fromInitContext(initCtx);
    const tenant = tenantOf(initCtx);
    return {
      description:
        'Replace oldString with newString in a file (exact match first, then whitespace/indentation-tolerant matching).',
      parameters: editParameters,
      async execute(args: z.infer<typeof editParameters>, ctx) {
        if (args.oldString === args.newString) {
          throw new Error(
            'oldString and newString are identical, so there is nothing to change. Put the new text in newString.',
          );
        }
        const abs = await ws.resolve(args.filePath, 'write');
        const target: Target = { abs, shown: ws.display(abs), tenant, ctx };
        return withFileLock(abs, async () => {
          if (ctx.abort.aborted) throw new Error('edit was aborted before it started; the file is unchanged.');
          const stat = await statIfExists(abs);
          if (!stat) return createFile(target, args);
          assertEditable(target.shown, stat, args);
          // The version read here is the one checked against the session's read and, again, just
          // before the rename: a write from outside at any point in between makes the edit refuse.
          const { bytes, stamp: version } = await readVersion(abs);
          await tenant.readTracker.assertFresh(ctx.sessionID, abs, target.shown, version);
          const before = fileState(bytes, stat.mode, true);
          const replaceAll = args.replaceAll ?? false;
          const fast = exactByteEdit(bytes, args.oldString, args.newString, replaceAll, target.shown);
          if (fast) {
            // Neither version is hashed here: the old bytes are kept for undo anyway, and the new
            // ones are views on them plus the replacement (see Fingerprint in undo-log.ts).
            await writeEdit(target, fast.parts, version, before, editedState(before, fast.parts));
            return edited(target.shown, fast.diff, fast.replacements, fast.firstLine, 'exact');
          }
          return tolerantEdit(target, bytes, version, before, args);
        });
      },
    };
  },
);

/** The file an edit changes, and whose it is (for the read tracker and the undo log). */
interface Target {
  abs: string;
  shown: string;
  tenant: Tenant;
  ctx: Tool.Context;
}

type EditArgs = z.infer<typeof editParameters>;

/** An edit of a missing file with an empty oldString creates it with newString. */
async function createFile(target: Target, args: EditArgs): Promise<Tool.Result> {
  const { abs, shown, tenant, ctx } = target;
  if (args.oldString !== '') {
    throw new Error(
      `File ${shown} does not exist. To create it, call edit with an empty oldString (or use write); otherwise check the path.`,
    );
  }
  await fs.mkdir(path.dirname(abs), { recursive: true });
  const created = Buffer.from(args.newString, 'utf8');
  const { stat: stamp } = await atomicWriteFile(abs, created, { signal: ctx.abort });
  tenant.readTracker.record(ctx.sessionID, abs, stamp);
  recordChange(tenant, ctx, 'edit', `edit of ${shown}`, [
    { path: abs, shown, before: { type: 'absent' }, after: fileState(created, 0, false) },
  ]);
  return createdResult(shown, args.newString);
}

/** Refuses what edit cannot change: a directory, a file over MAX_EDIT_FILE_BYTES, text in the reserved range. */
function assertEditable(shown: string, stat: Stats, args: EditArgs): void {
  if (stat.isDirectory()) throw new Error(`${shown} is a directory; give the path of a file inside it.`);
  if (stat.size > MAX_EDIT_FILE_BYTES) {
    throw new Error(
      `${shown} is ${stat.size} bytes, above the ${MAX_EDIT_FILE_BYTES}-byte limit of edit. Change it with a command (e.g. sed through bash) or split the file.`,
    );
  }
  if (hasEscapeRange(args.oldString) || hasEscapeRange(args.newString)) {
    throw new Error(
      'oldString or newString contains characters U+10FF00-U+10FFFF, which edit reserves for bytes that are not valid UTF-8. Remove them and retry.',
    );
  }
}

/** Writes the new version unless the file changed since `version` was read, and records it for the session and undo. */
async function writeEdit(
  target: Target,
  data: Buffer | readonly Uint8Array[],
  version: ReturnType<typeof stampOf>,
  before: EntryState,
  after: EntryState,
): Promise<void> {
  const { abs, shown, tenant, ctx } = target;
  if (ctx.abort.aborted) throw new Error('edit was aborted; the file is unchanged.');
  const { stat: stamp } = await atomicWriteFile(abs, data, {
    signal: ctx.abort,
    expect: version,
    staleMessage: `File ${shown} was changed on disk by someone else while it was being edited. Nothing was written; read it again before editing.`,
  });
  tenant.readTracker.record(ctx.sessionID, abs, stamp);
  recordChange(tenant, ctx, 'edit', `edit of ${shown}`, [{ path: abs, shown, before, after }]);
}

/**
 * The edit as text: line endings and BOM normalised, then the tolerant matchers of edit-match.ts;
 * bytes that were not valid UTF-8 go back exactly as they were.
 */
async function tolerantEdit(
  target: Target,
  bytes: Buffer,
  version: ReturnType<typeof stampOf>,
  before: EntryState,
  args: EditArgs,
): Promise<Tool.Result> {
  const { shown } = target;
  const decoded = decodeLossless(bytes);
  if (!decoded) {
    throw new Error(
      `${shown} mixes bytes that are not valid UTF-8 with characters U+10FF00-U+10FFFF, so edit cannot change it without risking other bytes. Nothing was written; change it with a command (e.g. through bash) instead.`,
    );
  }
  const { ranges, matcher, score, summary: d, startLines, final } = planTextEdit(shown, decoded.text, args);
  // Encoded once, for the write and the undo fingerprint.
  const written = decoded.escaped ? encodeLossless(final) : Buffer.from(final, 'utf8');
  await writeEdit(target, written, version, before, fileState(written, 0, false));
  return edited(shown, d, ranges.length, startLines[0], matcher, score);
}

/** One edit planned on a file's text: what matched, the diff, and the text to write back. */
export interface TextEditPlan {
  ranges: MatchRange[];
  matcher: string;
  score?: number;
  summary: DiffSummary;
  startLines: number[];
  /** The whole new text, with the file's BOM and line endings. */
  final: string;
  /** Whether the file was consistently CRLF (matched as LF, written back as CRLF). */
  crlf: boolean;
  /** oldString and newString with the file's line endings applied. */
  oldString: string;
  newString: string;
}

/**
 * Plans an edit of `raw` (the file's text): BOM and line endings normalised, the tolerant matchers,
 * a refusal when nothing would change, the diff from the known ranges. Shared by the local edit and
 * the edit over a backend, so both match and answer alike.
 */
export function planTextEdit(
  shown: string,
  raw: string,
  args: Pick<EditArgs, 'oldString' | 'newString' | 'replaceAll'>,
): TextEditPlan {
  const bom = raw.charCodeAt(0) === 0xfeff ? '\uFEFF' : '';
  const body = bom ? raw.slice(1) : raw;
  // A consistently CRLF file is matched as LF and written back as CRLF; a mixed file is
  // matched as it is, so lines the edit does not touch keep their own endings.
  const crlf = body.includes('\r\n') && !/(^|[^\r])\n/.test(body);
  const content = crlf ? body.replace(/\r\n/g, '\n') : body;
  const oldString = normaliseEol(args.oldString, crlf);
  const newString = normaliseEol(args.newString, crlf);
  const { ranges, matcher, score } = matchRanges(shown, content, oldString, newString, args.replaceAll ?? false);
  if (ranges.every((r) => content.slice(r.start, r.end) === r.replacement))
    throw new Error(
      `The edit would leave ${shown} unchanged (the matched text already equals newString). Nothing was written.`,
    );
  const updated = applyRanges(content, ranges);
  // The diff comes from the known ranges: no whole-file comparison.
  const { summary, startLines } = diffOfReplacements(shown, content, ranges);
  const final = bom + (crlf ? updated.replace(/\n/g, '\r\n') : updated);
  return { ranges, matcher, score, summary, startLines, final, crlf, oldString, newString };
}

/** Where oldString is in `content` (sorted ranges), found by which matcher; one match unless replaceAll. */
export function matchRanges(
  shown: string,
  content: string,
  oldString: string,
  newString: string,
  replaceAll: boolean,
): { ranges: MatchRange[]; matcher: string; score?: number } {
  if (oldString === '') {
    if (content !== '') {
      throw new Error(
        `oldString is empty but ${shown} already has content. Give the text to replace, or use write to replace the whole file.`,
      );
    }
    return { ranges: [{ start: 0, end: 0, replacement: newString }], matcher: 'replace-empty' };
  }
  let found;
  try {
    found = findMatches(content, oldString, newString);
  } catch (err) {
    if (err instanceof AmbiguousBlockError) {
      throw new Error(
        `oldString was not found exactly in ${shown}, and ${err.startLines.length} blocks match it about equally well ` +
          `(starting at lines ${err.startLines.join(', ')}). Re-read the file and copy the exact text, with enough surrounding lines to be unique.`,
        { cause: err },
      );
    }
    throw err;
  }
  if (!found) throw new Error(notFoundMessage(shown, content, oldString));
  if (found.ranges.length > 1 && !replaceAll) {
    const lines = rangeLines(content, found.ranges);
    const listed = lines.slice(0, MAX_LISTED_MATCHES).join(', ') + (lines.length > MAX_LISTED_MATCHES ? ', ...' : '');
    throw new Error(
      `Found ${found.ranges.length} matches for oldString in ${shown} (at lines ${listed}). ` +
        'Add more surrounding lines to oldString to make it unique, or set replaceAll to true to replace every one.',
    );
  }
  return { ranges: [...found.ranges].sort((x, y) => x.start - y.start), matcher: found.matcher, score: found.score };
}

/** The result of a successful edit of an existing file. */
export function edited(
  shown: string,
  d: DiffSummary,
  replacements: number,
  firstLine: number,
  matcher: string,
  score?: number,
): Tool.Result {
  const how =
    matcher === 'exact' || matcher === 'replace-empty'
      ? ''
      : `, matched by ${matcher} matching${score !== undefined ? ` (similarity ${score.toFixed(2)})` : ''}`;
  const what = replacements === 1 ? `1 replacement at line ${firstLine}` : `${replacements} replacements`;
  return {
    title: shown,
    output: `Edited ${shown}: ${what}${how} (+${d.additions} -${d.deletions} lines).`,
    metadata: {
      path: shown,
      created: false,
      diff: d.diff,
      additions: d.additions,
      deletions: d.deletions,
      replacements,
      matcher,
      truncated: false,
    },
  };
}

/** The file's bytes and the stamp of the version they are (from the descriptor they were read through). */
async function readVersion(abs: string): Promise<{ bytes: Buffer; stamp: ReturnType<typeof stampOf> }> {
  const handle = await fs.open(abs, 'r');
  try {
    const stamp = stampOf(await handle.stat({ bigint: true }));
    return { bytes: await handle.readFile(), stamp };
  } finally {
    await handle.close();
  }
}

export function normaliseEol(s: string, crlf: boolean): string {
  return crlf ? s.replace(/\r\n/g, '\n') : s;
}

/** `content` with the (sorted) ranges replaced. */
export function applyRanges(content: string, ranges: MatchRange[]): string {
  let out = '';
  let pos = 0;
  for (const r of ranges) {
    out += content.slice(pos, r.start) + r.replacement;
    pos = r.end;
  }
  return out + content.slice(pos);
}

function notFoundMessage(shown: string, content: string, oldString: string): string {
  const c = closestCandidate(content, oldString);
  const head = `oldString was not found in ${shown} (also not with whitespace, indentation, escape or quote differences ignored).`;
  if (!c) return `${head} Re-read the file and copy the exact text you want to replace into oldString.`;
  const shownLines = c.lines
    .slice(0, MAX_CANDIDATE_LINES)
    .map((l, i) => `${c.startLine + i}: ${l.length > 200 ? `${l.slice(0, 200)}...` : l}`);
  const more = c.lines.length > MAX_CANDIDATE_LINES ? '\n...' : '';
  return (
    `${head} The closest candidate is at lines ${c.startLine}-${c.endLine}:\n${shownLines.join('\n')}${more}\n` +
    `Re-read the file (read with offset=${Math.max(1, c.startLine - 5)}) and copy the exact text into oldString, without the "N: " prefixes.`
  );
}

export function countLines(s: string): number {
  if (s === '') return 0;
  return s.split('\n').length - (s.endsWith('\n') ? 1 : 0);
}

/** edit's answer when an empty oldString created the file (here or on a backend). */
export function createdResult(shown: string, text: string): Tool.Result {
  const d = diffOfReplacements(shown, '', [{ start: 0, end: 0, replacement: text }]).summary;
  return {
    title: shown,
    output: `Created ${shown} (${countLines(text)} lines).`,
    metadata: {
      path: shown,
      created: true,
      diff: d.diff,
      additions: d.additions,
      deletions: d.deletions,
      replacements: 1,
      matcher: 'create',
      truncated: false,
    },
  };
}
