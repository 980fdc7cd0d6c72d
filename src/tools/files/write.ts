/**
 * write: create or replace a whole file, atomically. Overwriting requires that this session read
 * the file and that it has not changed since; parent directories are created.
 * Must not write files itself: atomicWriteFile (workspace.ts) does.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { Tool } from '../../authoring/tool.js';
import { descriptionBeside } from '../../authoring/description.js';
import { tenantOf } from '../../workspace/tenant.js';
import { Workspace, atomicWriteFile, withFileLock } from '../../workspace/workspace.js';
import { statIfExists } from '../../platform/files.js';
import { unifiedDiff } from './diff.js';
import { recordChange } from './undo-log.js';
import { fileState, type EntryState } from './undo-state.js';

/** Largest content accepted in one write (UTF-8 bytes). */
export const MAX_WRITE_BYTES = 50 * 1024 * 1024;

/** The tool's arguments (the backend variant takes the same). */
export const parameters = z.object({
  filePath: z.string().describe('Path of the file to write: absolute, or relative to the workspace root.'),
  content: z.string().describe('The complete new content of the file.'),
});

export const WriteTool = Tool.define(
  {
    id: 'write',
    permissions: { required: ['write'] },
    descriptionPath: descriptionBeside(import.meta.url, 'write'),
    danger: 'moderate',
  },
  async (initCtx) => {
    const ws = await Workspace.fromInitContext(initCtx);
    const tenant = tenantOf(initCtx);
    const readTracker = tenant.readTracker;
    return {
      description: 'Create a file or replace its whole content (atomically); an existing file must be read first.',
      parameters,
      async execute(args: z.infer<typeof parameters>, ctx) {
        const bytes = Buffer.byteLength(args.content);
        if (bytes > MAX_WRITE_BYTES) {
          throw new Error(
            `content is ${bytes} bytes, above the ${MAX_WRITE_BYTES}-byte limit of one write. Split the file or generate it with a script.`,
          );
        }
        const abs = await ws.resolve(args.filePath, 'write');
        const shown = ws.display(abs);
        return withFileLock(abs, async () => {
          const stat = await statIfExists(abs);
          if (stat?.isDirectory()) throw new Error(`${shown} is a directory; give the path of a file inside it.`);
          let before = '';
          let previous: EntryState = { type: 'absent' };
          if (stat) {
            await readTracker.assertFresh(ctx.sessionID, abs, shown);
            const bytes = await fs.readFile(abs);
            before = bytes.toString('utf8');
            previous = fileState(bytes, stat.mode, true);
          } else {
            await fs.mkdir(path.dirname(abs), { recursive: true });
          }
          if (ctx.abort.aborted) throw new Error('write was aborted; nothing was written.');
          // Encoded once, for the write and the undo fingerprint.
          const data = Buffer.from(args.content, 'utf8');
          const { created, stat: stamp } = await atomicWriteFile(abs, data, { signal: ctx.abort });
          readTracker.record(ctx.sessionID, abs, stamp);
          recordChange(tenant, ctx, 'write', `write of ${shown}`, [
            { path: abs, shown, before: previous, after: fileState(data, 0, false) },
          ]);
          return writeResult(shown, before, args.content, bytes, created);
        });
      },
    };
  },
);

/** What write answers: created or rewritten, the line counts, and the diff (also for write over a backend). */
export function writeResult(shown: string, before: string, content: string, bytes: number, created: boolean) {
  const d = unifiedDiff(shown, before, content);
  const output = created
    ? `Created ${shown} (${bytes} bytes, +${d.additions} lines).`
    : before === content
      ? `Wrote ${shown}: content unchanged.`
      : `Wrote ${shown} (+${d.additions} -${d.deletions} lines).`;
  return {
    title: shown,
    output,
    metadata: {
      path: shown,
      created,
      bytes,
      additions: d.additions,
      deletions: d.deletions,
      diff: d.diff,
      truncated: false,
    },
  };
}
