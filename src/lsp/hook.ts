/**
 * The calls write, edit and apply_patch make to add to their answer the diagnostics their change
 * introduced: `lspBefore(link, paths)` before the change (the served files' text as it was), then
 * `lspAfter(change, ctx, result)`: for each file a language server serves, the server is told the
 * text before and after the change, and the two answers are compared.
 * A file no server serves costs one extension lookup: `lspAfter` hands its result back as it is.
 * Waits at most the link's `waitMs` (LSP_DIAGNOSTICS_WAIT_MS) in all; past it the answer says the
 * diagnostics are not known yet, never that the file is clean. Whatever the server does, the change
 * succeeds or fails on its own.
 * Must not start servers itself (manager.ts) nor talk LSP (server.ts): both load on the first served file.
 */
import { promises as fs } from 'node:fs';
import type { Tool } from '../authoring/tool.js';
import { LSP_MAX_FILE_BYTES, serverTableOf, type ServerSpec, type ServerTable } from './config.js';
import type { Diag } from './diagnostics.js';

/** What a file tool keeps from its init context to add diagnostics: the servers, and how to show a path. */
export interface LspLink {
  table: ServerTable;
  wsRoot: string;
  display(abs: string): string;
}

/** The link of a tool initialised with `initCtx` over `workspace`; undefined when `initCtx.lsp` is `false`. */
export function lspLink(
  initCtx: Tool.InitContext | undefined,
  workspace: { root: string; display(abs: string): string },
): LspLink | undefined {
  const table = serverTableOf(initCtx);
  return table && { table, wsRoot: workspace.root, display: (abs) => workspace.display(abs) };
}

/** A change under way: the files a server serves, and their text before it (being read). */
export interface LspChange {
  link: LspLink;
  files: Array<{ abs: string; spec: ServerSpec }>;
  before: Promise<Array<Text | undefined>>;
}

/**
 * Called before a change of the files `paths` (absolute): undefined, at the cost of one extension
 * lookup per path, when no server serves any of them (or there is no link); else their text as it is
 * now starts being read, for `lspAfter` to compare.
 */
export function lspBefore(link: LspLink | undefined, paths: readonly string[]): LspChange | undefined {
  if (!link) return undefined;
  const files = paths.flatMap((abs) => served1(link, abs));
  if (!files.length) return undefined;
  return {
    link,
    files,
    before: Promise.all(files.map((f) => textOf(f.abs, link.display(f.abs)).catch(() => undefined))),
  };
}

/**
 * Called with the change's result once it is written: `result` itself when `change` is undefined,
 * else `result` with a paragraph per served file (what the change introduced, fixed, or why it is not
 * known) and `metadata.diagnostics`. Waits at most the link's `waitMs` after the change.
 */
export function lspAfter(
  change: LspChange | undefined,
  ctx: Pick<Tool.Context, 'abort' | 'extra'>,
  result: Tool.Result,
): Tool.Result | Promise<Tool.Result> {
  return change ? checked(change, ctx, result) : result;
}

function served1(link: LspLink, abs: string): Array<{ abs: string; spec: ServerSpec }> {
  const spec = link.table.serverFor(abs);
  return spec ? [{ abs, spec }] : [];
}

/** A file's text for a server, or why it is not sent (absent: the file does not exist). */
type Text = { text: string } | { skip: string } | { absent: true };

const utf8 = new TextDecoder('utf-8', { fatal: true });

async function textOf(abs: string, shown: string): Promise<Text> {
  const stat = await fs.stat(abs).catch(() => undefined);
  if (!stat?.isFile()) return { absent: true };
  if (stat.size > LSP_MAX_FILE_BYTES) {
    return { skip: `${shown} is ${stat.size} bytes, above the ${LSP_MAX_FILE_BYTES} bytes sent to a language server` };
  }
  const bytes = await fs.readFile(abs).catch(() => undefined);
  if (!bytes) return { absent: true };
  try {
    return { text: utf8.decode(bytes) };
  } catch {
    return { skip: `${shown} is not valid UTF-8` };
  }
}

async function checked(
  change: LspChange,
  ctx: Pick<Tool.Context, 'abort' | 'extra'>,
  result: Tool.Result,
): Promise<Tool.Result> {
  const { link, files } = change;
  const before = await change.before;
  // The wait starts when the change is written: the change itself is not what is measured.
  const deadline = Date.now() + link.table.waitMs;
  const notes: string[] = [];
  const introduced: Array<Diag & { path: string }> = [];
  const said: Array<{ path: string; server: string; known: boolean }> = [];
  for (const [i, f] of files.entries()) {
    const shown = link.display(f.abs);
    try {
      const note = await fileNote(link, ctx, f, before[i], deadline);
      if (!note) continue;
      notes.push(note.text);
      said.push({ path: shown, server: f.spec.name, known: note.known });
      introduced.push(...note.introduced.map((d) => ({ ...d, path: shown })));
    } catch (err) {
      // The change stands whatever went wrong here.
      notes.push(`Diagnostics for ${shown} are not available: ${err instanceof Error ? err.message : String(err)}.`);
    }
  }
  if (!notes.length) return result;
  return {
    ...result,
    output: `${result.output}\n\n${notes.join('\n\n')}`,
    metadata: { ...result.metadata, diagnostics: { files: said, introduced } },
  };
}

/** The paragraph about one file, or undefined when there is nothing to say (the file is gone). */
async function fileNote(
  link: LspLink,
  ctx: Pick<Tool.Context, 'abort' | 'extra'>,
  f: { abs: string; spec: ServerSpec },
  before: Text | undefined,
  deadline: number,
): Promise<{ text: string; introduced: Diag[]; known: boolean } | undefined> {
  const shown = link.display(f.abs);
  const server = f.spec.name;
  const after = await textOf(f.abs, shown);
  if ('absent' in after) return undefined;
  if ('skip' in after) return { text: `(No ${server} diagnostics: ${after.skip}.)`, introduced: [], known: false };
  const [{ managerFor }, { changeParagraph }] = await Promise.all([import('./manager.js'), import('./diagnostics.js')]);
  const manager = managerFor(ctx);
  const found = await manager.serverFor(f.spec, f.abs, link.wsRoot);
  if (typeof found === 'string') {
    // Said once per registry: every later edit of such a file would repeat it.
    return manager.firstTime(found)
      ? { text: `(No ${server} diagnostics: ${found}.)`, introduced: [], known: false }
      : undefined;
  }
  let beforeDiags: Diag[] | undefined = [];
  if (before && 'text' in before) beforeDiags = await found.diagnostics(f.abs, before.text, deadline, ctx.abort);
  else if (!before || 'skip' in before) beforeDiags = undefined;
  const afterDiags = await found.diagnostics(f.abs, after.text, deadline, ctx.abort);
  if (!afterDiags) {
    const why = found.alive
      ? ctx.abort.aborted
        ? 'the call was aborted before the server answered'
        : `the ${server} server did not answer within ${link.table.waitMs} ms`
      : `the ${server} server ${found.deadReason}`;
    return {
      text: `Diagnostics not known yet (${why}); this says nothing about whether ${shown} has errors. Call lsp with operation "diagnostics" on it to see them.`,
      introduced: [],
      known: false,
    };
  }
  const para = changeParagraph(
    server,
    shown,
    beforeDiags && before && 'text' in before
      ? { diags: beforeDiags, text: before.text }
      : before && 'absent' in before
        ? { diags: [], text: '' }
        : undefined,
    { diags: afterDiags, text: after.text },
  );
  return { ...para, known: true };
}
