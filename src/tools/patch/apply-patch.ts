/**
 * apply_patch: one patch (the format of parse.ts) changes many files, all or nothing. Every path is
 * resolved in the workspace, every file locked (in sorted order), read, checked against the
 * session's reads and every hunk located before anything is written; then each file is written
 * atomically, and a failure part-way (an abort, a file changed underneath, a full disk) puts back
 * what was already written. The whole patch is one undo record.
 * Must not parse (parse.ts), locate hunks (locate.ts), check files (plan.ts), write them (commit.ts)
 * or shape the answer (result.ts): it runs those steps in order.
 */
import { z } from 'zod';
import { Tool } from '../../authoring/tool.js';
import { descriptionBeside } from '../../authoring/description.js';
import { tenantOf } from '../../workspace/tenant.js';
import { Workspace, withFileLocks } from '../../workspace/workspace.js';
import { hasEscapeRange } from '../files/lossless-text.js';
import { recordChange } from '../files/undo-log.js';
import { parsePatch, PatchSyntaxError, type PatchOperation } from './parse.js';
import { HunkFailures, planFile, resolveAll, type FilePlan } from './plan.js';
import { commit, effectsOf } from './commit.js';
import { APPLY_PATCH_SUMMARY, patchResult, refusal } from './result.js';

/** Largest patch accepted (characters of `input`). */
export const MAX_PATCH_CHARS = 10 * 1024 * 1024;
/** Most files one patch changes (a move counts its two paths as one file). */
export const MAX_PATCH_FILES = 200;

/** apply_patch's arguments (the backend variant takes the same). */
export const applyPatchParameters = z.object({
  input: z
    .string()
    .describe(
      'The whole patch, from "*** Begin Patch" to "*** End Patch": *** Add File / *** Delete File / *** Update File sections with @@ hunks.',
    ),
});

export const ApplyPatchTool = Tool.define(
  {
    id: 'apply_patch',
    permissions: { required: ['write'] },
    descriptionPath: descriptionBeside(import.meta.url, 'apply_patch'),
    danger: 'moderate',
  },
  async (initCtx) => {
    const ws = await Workspace.fromInitContext(initCtx);
    const tenant = tenantOf(initCtx);
    return {
      description: APPLY_PATCH_SUMMARY,
      parameters: applyPatchParameters,
      async execute(args: z.infer<typeof applyPatchParameters>, ctx) {
        const ops = readPatch(args.input);
        const targets = await resolveAll(ws, ops);
        const paths = [...new Set(targets.flatMap((t) => (t.dest ? [t.abs, t.dest] : [t.abs])))].sort();
        return withFileLocks(paths, async () => {
          const plans: FilePlan[] = [];
          const problems: string[] = [];
          for (const t of targets) {
            try {
              plans.push(await planFile(t, tenant, ctx.sessionID));
            } catch (err) {
              if (err instanceof HunkFailures) problems.push(...err.lines);
              else problems.push((err as Error).message);
            }
          }
          if (problems.length) throw new Error(refusal(problems));
          if (ctx.abort.aborted) throw new Error('apply_patch was aborted before writing; nothing was changed.');
          await commit(plans, ctx);
          recordChange(tenant, ctx, 'apply_patch', summaryOf(plans), plans.flatMap(effectsOf));
          for (const p of plans) {
            const written = p.dest ?? p.abs;
            if (p.stamp) tenant.readTracker.record(ctx.sessionID, written, p.stamp);
          }
          return patchResult(plans.map((p) => p.change));
        });
      },
    };
  },
);

/** The patch read, or a refusal naming the line and rule it broke (nothing is changed). */
export function readPatch(input: string): PatchOperation[] {
  if (input.length > MAX_PATCH_CHARS) {
    throw new Error(
      `The patch is ${input.length} characters, above the ${MAX_PATCH_CHARS}-character limit of apply_patch. Split it into several patches. Nothing was changed.`,
    );
  }
  if (hasEscapeRange(input)) {
    throw new Error(
      'The patch contains characters U+10FF00-U+10FFFF, which apply_patch reserves for bytes that are not valid UTF-8. Remove them and retry. Nothing was changed.',
    );
  }
  let ops: PatchOperation[];
  try {
    ops = parsePatch(input);
  } catch (err) {
    if (!(err instanceof PatchSyntaxError)) throw err;
    throw new Error(`The patch is not valid, so nothing was changed: ${err.message}`, { cause: err });
  }
  if (ops.length > MAX_PATCH_FILES) {
    throw new Error(
      `The patch changes ${ops.length} files, more than the ${MAX_PATCH_FILES} one apply_patch call may change. Split it. Nothing was changed.`,
    );
  }
  return ops;
}

function summaryOf(plans: FilePlan[]): string {
  const names = plans.map((p) => p.shown);
  return `apply_patch of ${names.length <= 3 ? names.join(', ') : `${names.slice(0, 3).join(', ')} and ${names.length - 3} more`}`;
}
