/**
 * write over a backend: the local write's limits, stale check and sentences, with the version read
 * recognised by its content hash; an existing file is replaced through the backend's `edit` of the
 * whole content read (a compare-and-swap: a change made meanwhile makes the backend refuse).
 * Must not touch the local disk.
 */
import { z } from 'zod';
import { Tool } from '../../../authoring/tool.js';
import { tenantOf } from '../../../workspace/tenant.js';
import { descriptionBeside } from '../../../authoring/description.js';
import { MAX_WRITE_BYTES, parameters, writeResult } from '../write.js';
import {
  assertSeenFresh,
  backendOf,
  backendPath,
  entryAt,
  recordSeen,
  replaceContent,
  shownPath,
  textOf,
  trackKey,
} from './common.js';
import { recordBackendChange, textState } from './history.js';

export const BackendWriteTool = Tool.define(
  {
    id: 'write',
    permissions: { required: ['write'] },
    descriptionPath: descriptionBeside(new URL('../write.js', import.meta.url).href, 'write'),
    danger: 'moderate',
  },
  (initCtx) => {
    const g = backendOf(initCtx);
    const readTracker = tenantOf(initCtx).readTracker;
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
        const p = backendPath(args.filePath);
        const shown = shownPath(p);
        if (p === '/') throw new Error(`${shown} is a directory; give the path of a file inside it.`);
        const key = trackKey(g, p);
        const entry = await entryAt(g, p, ctx.abort);
        if (entry.kind === 'dir') throw new Error(`${shown} is a directory; give the path of a file inside it.`);
        let before = '';
        if (entry.kind === 'file') {
          await assertSeenFresh(readTracker, ctx.sessionID, key, shown, entry.file);
          before = textOf(entry.file, shown);
        }
        if (ctx.abort.aborted) throw new Error('write was aborted; nothing was written.');
        await replaceContent(g, p, entry.kind === 'file' ? before : undefined, args.content, ctx.abort);
        recordSeen(readTracker, ctx.sessionID, key, { text: args.content });
        recordBackendChange(initCtx, g, ctx, 'write', `write of ${shown}`, [
          {
            path: p,
            shown,
            before: entry.kind === 'file' ? textState(before, true) : { type: 'absent' },
            after: textState(args.content, false),
          },
        ]);
        const created = entry.kind === 'missing';
        const result = writeResult(shown, before, args.content, bytes, created);
        return { ...result, metadata: { ...result.metadata, backend: g.name } };
      },
    };
  },
);
