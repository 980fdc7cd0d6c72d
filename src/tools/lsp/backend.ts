/**
 * lsp over a backend: language servers run on this host and read the files where they are, so the
 * tool works only when the backend is our own workspace (`toDeepAgentsBackend()`), whose `/` is a
 * directory here; over any other backend it is `unavailable`, saying why (the registry then does
 * not offer it). Backend paths (`/src/a.ts`) are the workspace's relative paths.
 * Must not start servers itself: the local lsp tool does.
 */
import { z } from 'zod';
import { Tool } from '../../authoring/tool.js';
import { descriptionBeside } from '../../authoring/description.js';
import { hostWorkspaceRoot } from '../../backend/workspace-root.js';
import { backendOf } from '../files/backend/common.js';
import { LspTool, lspParameters } from './lsp.js';

export const BackendLspTool = Tool.define(
  {
    id: 'lsp',
    permissions: { required: ['read'] },
    descriptionPath: descriptionBeside(new URL('./lsp.js', import.meta.url).href, 'lsp'),
    danger: 'safe',
  },
  async (initCtx) => {
    const root = hostWorkspaceRoot(initCtx.backend);
    if (root !== undefined) {
      const local = await LspTool.init({
        ...initCtx,
        backend: undefined,
        workspaceRoot: root,
        additionalRoots: [],
      });
      return {
        ...local,
        execute: (args: z.infer<typeof lspParameters>, ctx) =>
          // '/' is the workspace root: '/src/a.ts' is src/a.ts there.
          local.execute({ ...args, filePath: args.filePath.replace(/^\/+/, '') || '.' }, ctx),
      };
    }
    const unavailable = `lsp is not available: the files live on the backend ${backendOf(initCtx).name}, and language servers run on this host, where those files are not. It works over toDeepAgentsBackend() (this host's workspace) or without a backend.`;
    return {
      description: 'Language server queries (not available on this backend).',
      parameters: lspParameters,
      unavailable,
      execute: () => Promise.reject(new Error(unavailable)),
    };
  },
);
