/**
 * lsp: code navigation through the language server of a file (definition, references, hover, the
 * file's symbols, the workspace's symbols, the file's diagnostics). Positions are 1-based, or a name
 * found in the given line; answers name paths relative to the workspace, each with its line, capped
 * at LSP_MAX_RESULTS; a location outside the workspace or one the policy would not let read is left
 * out and counted, never shown.
 * Must not start or talk to servers itself (src/lsp/manager.ts, server.ts) nor word diagnostics (src/lsp/diagnostics.ts).
 * Over 400 lines: six operations over one position resolution, one location filter and one result
 * shape; each operation is a few lines of its own.
 */
import { promises as fs } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { Tool } from '../../authoring/tool.js';
import { descriptionBeside } from '../../authoring/description.js';
import { Workspace } from '../../workspace/workspace.js';
import {
  LSP_MAX_HOVER_CHARS,
  LSP_MAX_DIAGNOSTICS,
  LSP_MAX_FILE_BYTES,
  LSP_MAX_RESULTS,
  LSP_REQUEST_TIMEOUT_MS,
  serverTableOf,
  type ServerSpec,
  type ServerTable,
} from '../../lsp/config.js';

/** Characters of a context line shown after a location. */
const MAX_CONTEXT_CHARS = 200;

export const lspParameters = z.object({
  operation: z
    .enum(['definition', 'references', 'hover', 'documentSymbols', 'workspaceSymbols', 'diagnostics'])
    .describe('What to ask the language server.'),
  filePath: z
    .string()
    .describe(
      'The file asked about (absolute, or relative to the workspace root); for workspaceSymbols, any file of the language and project to search.',
    ),
  line: z.number().int().optional().describe('1-based line (definition, references, hover).'),
  column: z.number().int().optional().describe('1-based column on that line; or give symbol instead.'),
  symbol: z
    .string()
    .optional()
    .describe(
      'A name on that line, instead of column (its first whole-word occurrence); for workspaceSymbols, the name to search for.',
    ),
});

type LspArgs = z.infer<typeof lspParameters>;

/** A place a server answered with, 1-based. */
interface Place {
  abs: string;
  line: number;
  column: number;
}

const SYMBOL_KINDS = [
  'file',
  'module',
  'namespace',
  'package',
  'class',
  'method',
  'property',
  'field',
  'constructor',
  'enum',
  'interface',
  'function',
  'variable',
  'constant',
  'string',
  'number',
  'boolean',
  'array',
  'object',
  'key',
  'null',
  'enum member',
  'struct',
  'event',
  'operator',
  'type parameter',
];

function kindName(kind: unknown): string {
  return typeof kind === 'number' ? (SYMBOL_KINDS[kind - 1] ?? 'symbol') : 'symbol';
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** An LSP Position ({ line, character }, 0-based) as 1-based numbers, or undefined. */
function positionOf(p: unknown): { line: number; column: number } | undefined {
  if (!isRecord(p) || typeof p.line !== 'number' || typeof p.character !== 'number') return undefined;
  if (!Number.isInteger(p.line) || !Number.isInteger(p.character) || p.line < 0 || p.character < 0) return undefined;
  return { line: p.line + 1, column: p.character + 1 };
}

/** A file URI as a path, or undefined for other schemes and malformed URIs. */
function pathOfUri(uri: unknown): string | undefined {
  if (typeof uri !== 'string' || !uri.startsWith('file:')) return undefined;
  try {
    return fileURLToPath(uri);
  } catch {
    return undefined;
  }
}

/** A Location or LocationLink as a Place, or undefined when it is neither. */
function placeOf(loc: unknown): Place | undefined {
  if (!isRecord(loc)) return undefined;
  const abs = pathOfUri(loc.uri ?? loc.targetUri);
  const range = loc.targetSelectionRange ?? loc.range ?? loc.targetRange;
  const pos = isRecord(range) ? positionOf(range.start) : undefined;
  return abs && pos ? { abs, ...pos } : undefined;
}

/** A definition or references answer (one Location, a list, or null) as Places. */
function placesOf(answer: unknown): Place[] {
  const list = Array.isArray(answer) ? answer : answer ? [answer] : [];
  return list.flatMap((l) => {
    const p = placeOf(l);
    return p ? [p] : [];
  });
}

/** A hover's contents (MarkupContent, a MarkedString or a list of them) as text. */
function hoverText(answer: unknown): string {
  if (!isRecord(answer)) return '';
  const part = (c: unknown): string =>
    typeof c === 'string' ? c : isRecord(c) && typeof c.value === 'string' ? c.value : '';
  const contents = answer.contents;
  return (Array.isArray(contents) ? contents.map(part).join('\n\n') : part(contents)).trim();
}

export const LspTool = Tool.define(
  {
    id: 'lsp',
    permissions: { required: ['read'] },
    descriptionPath: descriptionBeside(import.meta.url, 'lsp'),
    danger: 'safe',
  },
  async (initCtx) => {
    const ws = await Workspace.fromInitContext(initCtx);
    const table = serverTableOf(initCtx);
    return {
      description: 'Ask the language server: definition, references, hover, symbols and diagnostics of code.',
      parameters: lspParameters,
      ...(table ? {} : { unavailable: 'lsp is switched off (initCtx.lsp is false).' }),
      async execute(args: LspArgs, ctx) {
        if (!table) throw new Error('lsp is switched off (initCtx.lsp is false); nothing can be asked.');
        return new LspCall(ws, table, args, ctx).run();
      },
    };
  },
);

/** One call of the tool. */
class LspCall {
  private readonly deadline = Date.now() + LSP_REQUEST_TIMEOUT_MS;
  private outside = 0;
  private filter?: Tool.ReadFilter;
  private readonly lineCache = new Map<string, string[] | undefined>();

  constructor(
    private readonly ws: Workspace,
    private readonly table: ServerTable,
    private readonly args: LspArgs,
    private readonly ctx: Tool.Context,
  ) {}

  async run(): Promise<Tool.Result> {
    const { ws, args } = this;
    const abs = await ws.resolve(args.filePath, 'read');
    const shown = ws.display(abs);
    const spec = this.table.serverFor(abs);
    if (!spec) throw new Error(this.noServerMessage(shown));
    const text = await this.textOf(abs, shown);
    const { managerFor } = await import('../../lsp/manager.js');
    const server = await managerFor(this.ctx).serverFor(spec, abs, ws.root);
    if (typeof server === 'string') throw new Error(`No ${spec.name} server for ${shown}: ${server}.`);
    this.filter = await this.ctx.readFilter?.();
    const ask = (method: string, params: Record<string, unknown>) =>
      server.requestOn(abs, text, method, params, this.deadline - Date.now(), this.ctx.abort).catch((err: unknown) => {
        throw new Error(
          `The ${spec.name} server could not answer ${args.operation} for ${shown}: it ${err instanceof Error ? err.message : String(err)}.`,
        );
      });
    const textDocument = { uri: (await import('../../lsp/server.js')).uriOf(abs) };
    switch (args.operation) {
      case 'diagnostics':
        return this.diagnostics(spec, server, abs, shown, text);
      case 'documentSymbols':
        return this.documentSymbols(shown, await ask('textDocument/documentSymbol', { textDocument }));
      case 'workspaceSymbols': {
        const query = args.symbol?.trim();
        if (!query) throw new Error('workspaceSymbols needs symbol: the name (or the start of it) to search for.');
        return this.workspaceSymbols(query, await ask('workspace/symbol', { query }));
      }
      default: {
        const at = this.position(shown, text);
        const position = { line: at.line - 1, character: at.column - 1 };
        const where = `line ${at.line}, column ${at.column} of ${shown}`;
        if (args.operation === 'hover') {
          const hover = hoverText(await ask('textDocument/hover', { textDocument, position }));
          if (!hover) return result(where, `Nothing to show at ${where}.`, 0);
          const cut = hover.length > LSP_MAX_HOVER_CHARS ? `${hover.slice(0, LSP_MAX_HOVER_CHARS)}\n...(cut)` : hover;
          return result(where, cut, 1);
        }
        const answer =
          args.operation === 'definition'
            ? await ask('textDocument/definition', { textDocument, position })
            : await ask('textDocument/references', { textDocument, position, context: { includeDeclaration: true } });
        const places = placesOf(answer);
        const what = args.operation === 'definition' ? 'Definition' : 'References';
        if (!places.length) return result(where, `No ${what.toLowerCase()} found for ${where}.`, 0);
        const lines = await this.placeLines(places);
        return result(
          where,
          this.withNotes(`${what} of ${at.name ? `${at.name} at ` : ''}${where}:`, lines, places.length),
          lines.length,
        );
      }
    }
  }

  private noServerMessage(shown: string): string {
    const known = this.table.specs
      .map((s) => `${s.name} (${[...s.extensions].map((e) => `.${e}`).join(', ')})`)
      .join('; ');
    return `No language server serves ${shown}. Known servers: ${known}. Add one with initCtx.lsp.servers (see docs/lsp.md).`;
  }

  private async textOf(abs: string, shown: string): Promise<string> {
    const stat = await fs.stat(abs).catch(() => undefined);
    if (!stat?.isFile()) throw new Error(`${shown} does not exist or is not a file; give the path of a source file.`);
    if (stat.size > LSP_MAX_FILE_BYTES) {
      throw new Error(
        `${shown} is ${stat.size} bytes, above the ${LSP_MAX_FILE_BYTES} bytes sent to a language server; use grep instead.`,
      );
    }
    try {
      return new TextDecoder('utf-8', { fatal: true }).decode(await fs.readFile(abs));
    } catch {
      throw new Error(`${shown} is not valid UTF-8, so no language server is asked about it; use grep instead.`);
    }
  }

  /** The 1-based position the arguments name, checked against the file. */
  private position(shown: string, text: string): { line: number; column: number; name?: string } {
    const { line, column, symbol } = this.args;
    const lines = text.split('\n');
    const count = text.endsWith('\n') ? lines.length - 1 : lines.length;
    if (line === undefined) throw new Error(`${this.args.operation} needs line (1-based) and column or symbol.`);
    if (line < 1 || line > Math.max(count, 1)) {
      throw new Error(
        `Line ${line} is outside ${shown}, which has ${count} line${count === 1 ? '' : 's'}. Give a line from 1 to ${Math.max(count, 1)}.`,
      );
    }
    const lineText = (lines[line - 1] ?? '').replace(/\r$/, '');
    if (symbol !== undefined && symbol !== '') {
      const at = wordAt(lineText, symbol);
      if (at < 0) {
        throw new Error(
          `${JSON.stringify(symbol)} is not on line ${line} of ${shown}, which reads: ${cutLine(lineText.trim())}. Give the line where it appears, or a column.`,
        );
      }
      return { line, column: at + 1, name: symbol };
    }
    if (column === undefined)
      throw new Error(`${this.args.operation} needs column (1-based) or symbol (a name on line ${line}).`);
    if (column < 1 || column > lineText.length + 1) {
      throw new Error(
        `Column ${column} is outside line ${line} of ${shown}, which has ${lineText.length} characters. Give a column from 1 to ${lineText.length + 1}, or symbol.`,
      );
    }
    return { line, column };
  }

  private async diagnostics(
    spec: ServerSpec,
    server: import('../../lsp/server.js').LspServer,
    abs: string,
    shown: string,
    text: string,
  ): Promise<Tool.Result> {
    const { sortDiags, worthSaying, diagLines, countWords } = await import('../../lsp/diagnostics.js');
    const diags = await server.diagnostics(abs, text, this.deadline, this.ctx.abort);
    if (!diags) {
      const why = server.alive
        ? `the ${spec.name} server did not answer within ${LSP_REQUEST_TIMEOUT_MS} ms`
        : `the ${spec.name} server ${server.deadReason}`;
      throw new Error(`Diagnostics of ${shown} not known yet (${why}). Try again in a moment.`);
    }
    const said = sortDiags(worthSaying(diags));
    const output = said.length
      ? `${spec.name} reports ${countWords(said)} in ${shown}:\n${diagLines(shown, said, LSP_MAX_DIAGNOSTICS)}`
      : `${spec.name} reports no problems in ${shown}.`;
    return { title: shown, output, metadata: { count: said.length, truncated: said.length > LSP_MAX_DIAGNOSTICS } };
  }

  private documentSymbols(shown: string, answer: unknown): Tool.Result {
    const out: string[] = [];
    let total = 0;
    const walk = (items: unknown, depth: number) => {
      if (!Array.isArray(items)) return;
      const symbols = items.flatMap((s: unknown) => {
        if (!isRecord(s) || typeof s.name !== 'string') return [];
        const range = isRecord(s.selectionRange)
          ? s.selectionRange
          : isRecord(s.location) && isRecord(s.location.range)
            ? s.location.range
            : undefined;
        const pos = isRecord(range) ? positionOf(range.start) : undefined;
        return pos ? [{ s, name: s.name, pos }] : [];
      });
      // In the file's order (servers list children as they like).
      symbols.sort((a, b) => a.pos.line - b.pos.line || a.pos.column - b.pos.column);
      for (const { s, name, pos } of symbols) {
        total += 1;
        if (out.length < LSP_MAX_RESULTS)
          out.push(`${'  '.repeat(Math.min(depth, 8))}${pos.line}:${pos.column} ${kindName(s.kind)} ${cutLine(name)}`);
        if (depth < 16) walk(s.children, depth + 1);
      }
    };
    walk(answer, 0);
    if (!total) return result(shown, `No symbols in ${shown}.`, 0);
    const more = total > out.length ? `\n(${total - out.length} more not shown.)` : '';
    return result(shown, `Symbols of ${shown} (line:column kind name):\n${out.join('\n')}${more}`, out.length);
  }

  private async workspaceSymbols(query: string, answer: unknown): Promise<Tool.Result> {
    const found: Array<{ place: Place; label: string }> = [];
    for (const s of Array.isArray(answer) ? answer : []) {
      if (!isRecord(s) || typeof s.name !== 'string') continue;
      const place = placeOf(s.location);
      if (place) found.push({ place, label: `${kindName(s.kind)} ${cutLine(s.name)}` });
    }
    if (!found.length) return result(query, `No symbol matching ${JSON.stringify(query)} found.`, 0);
    const lines = await this.placeLines(
      found.map((f) => f.place),
      found.map((f) => f.label),
    );
    return result(
      query,
      this.withNotes(`Symbols matching ${JSON.stringify(query)}:`, lines, found.length),
      lines.length,
    );
  }

  /**
   * `path:line:column: context` for each place inside the workspace the policy lets this call read
   * (at most LSP_MAX_RESULTS); the others are counted (`outside`, the filter's own count).
   */
  private async placeLines(places: readonly Place[], labels?: readonly string[]): Promise<string[]> {
    const out: string[] = [];
    const seen = new Set<string>();
    for (const [i, p] of places.entries()) {
      if (out.length >= LSP_MAX_RESULTS) break;
      const key = `${p.abs}:${p.line}:${p.column}`;
      if (seen.has(key)) continue;
      seen.add(key);
      if (!(await this.ws.contains(p.abs, 'read'))) {
        this.outside += 1;
        continue;
      }
      if (this.filter?.skips(p.abs, false)) continue;
      const context = await this.contextLine(p);
      out.push(
        `${labels ? `${labels[i]} ` : ''}${this.ws.display(p.abs)}:${p.line}:${p.column}${context ? `: ${context}` : ''}`,
      );
    }
    return out;
  }

  /** The heading, the lines, then how many were left out and why. */
  private withNotes(heading: string, lines: string[], total: number): string {
    const notes: string[] = [];
    const notice = this.filter?.notice();
    if (notice) notes.push(notice);
    if (this.outside)
      notes.push(`${this.outside} result${this.outside === 1 ? ' is' : 's are'} outside the workspace and not shown.`);
    const listed = lines.length + this.outside + (this.filter?.skipped ?? 0);
    if (total > listed) notes.push(`(${total - listed} more not shown.)`);
    const body = lines.length ? lines.join('\n') : '(nothing that can be shown)';
    return `${heading}\n${body}${notes.length ? `\n\n${notes.join('\n')}` : ''}`;
  }

  private async contextLine(p: Place): Promise<string> {
    let lines = this.lineCache.get(p.abs);
    if (!this.lineCache.has(p.abs)) {
      const stat = await fs.stat(p.abs).catch(() => undefined);
      const text =
        stat?.isFile() && stat.size <= LSP_MAX_FILE_BYTES
          ? await fs.readFile(p.abs, 'utf8').catch(() => undefined)
          : undefined;
      lines = text?.split('\n');
      this.lineCache.set(p.abs, lines);
    }
    return cutLine((lines?.[p.line - 1] ?? '').trim());
  }
}

function result(title: string, output: string, count: number): Tool.Result {
  return { title, output, metadata: { count, truncated: false } };
}

function cutLine(s: string): string {
  return s.length > MAX_CONTEXT_CHARS ? `${s.slice(0, MAX_CONTEXT_CHARS)}...` : s;
}

/** Where `word` first stands as a whole word in `line` (not inside a longer name), or -1. */
function wordAt(line: string, word: string): number {
  const isName = (c: string | undefined) => c !== undefined && /[\p{L}\p{N}_$]/u.test(c);
  for (let at = line.indexOf(word); at >= 0; at = line.indexOf(word, at + 1)) {
    if (!isName(line[at - 1]) && !isName(line[at + word.length])) return at;
  }
  return line.indexOf(word);
}
