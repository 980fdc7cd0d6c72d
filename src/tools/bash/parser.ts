/**
 * Parses a shell command line with tree-sitter-bash (the WASM grammar the package ships, run by
 * web-tree-sitter) into the simple commands it would run: every command of a list, pipeline,
 * subshell, group, loop or conditional, with the commands inside `$(...)`, backticks and `<(...)`
 * nested under the command whose words hold them. Nothing is expanded or run.
 *
 * The grammar is loaded lazily, once per process, on the first parse: importing this module costs
 * nothing.
 * Must not classify (bash-danger.ts), unwrap wrappers (bash-unwrap.ts) or decode words (bash-words.ts).
 */
import { createRequire } from 'node:module';
import type { Node, Parser as ParserType } from 'web-tree-sitter';
import { wordValue } from './words.js';
import { MAX_NESTING_DEPTH, type NestedCommands, type ShellCommand, type ShellRedirect } from './shell-command.js';

let parserPromise: Promise<ParserType> | undefined;

/** The shared parser, made on first use (the grammar is a process-wide, read-only resource). */
export function bashParser(): Promise<ParserType> {
  parserPromise ??= (async () => {
    const { Parser, Language } = await import('web-tree-sitter');
    await Parser.init();
    const require = createRequire(import.meta.url);
    const language = await Language.load(require.resolve('tree-sitter-bash/tree-sitter-bash.wasm'));
    const parser = new Parser();
    parser.setLanguage(language);
    return parser;
  })();
  parserPromise.catch(() => (parserPromise = undefined));
  return parserPromise;
}

/** Parses `source` with an already loaded parser (parsing itself is synchronous). */
export function parseWith(parser: ParserType, source: string, depth = 0): ShellCommand[] {
  const out: ShellCommand[] = [];
  if (!source.trim()) return out;
  if (depth > MAX_NESTING_DEPTH) return [opaqueCommand(source, `nested more than ${MAX_NESTING_DEPTH} levels deep`)];
  const tree = parser.parse(source);
  if (!tree) return [opaqueCommand(source, 'the command line could not be parsed')];
  try {
    new Walker(depth).statements(tree.rootNode, out);
  } finally {
    tree.delete();
  }
  return out;
}

/** A command that stands for text that cannot be analysed. */
export function opaqueCommand(text: string, why: string): ShellCommand {
  return { ...emptyCommand(text.trim()), opaque: why };
}

function emptyCommand(text: string): ShellCommand {
  return { text, words: [], dynamic: [], assignments: [], redirects: [], pipedInto: false, nested: [] };
}

const SUBSTITUTIONS = new Set(['command_substitution', 'process_substitution']);
const REDIRECTS = new Set(['file_redirect', 'heredoc_redirect', 'herestring_redirect']);

/** Walks one tree; `depth` counts the substitutions and shell strings around it. */
class Walker {
  constructor(private readonly depth: number) {}

  /** Collects the simple commands of a statement (or of every statement under `node`). */
  statements(node: Node, out: ShellCommand[]): void {
    switch (node.type) {
      case 'command':
        out.push(this.command(node, []));
        return;
      case 'redirected_statement':
        return this.redirected(node, out);
      case 'pipeline':
        return this.pipeline(node, out);
      case 'variable_assignment':
      case 'declaration_command':
      case 'unset_command':
        out.push(this.command(node, []));
        return;
      case 'ERROR':
        out.push(opaqueCommand(node.text, `it is not valid shell syntax near ${JSON.stringify(clip(node.text))}`));
        return;
      case 'comment':
      case 'heredoc_body':
        return;
    }
    if (SUBSTITUTIONS.has(node.type)) {
      // A substitution outside a command's words (in a test, a for list, a case word) still runs.
      for (const group of this.substitutionsIn(node)) out.push(...group.commands);
      return;
    }
    for (const child of node.namedChildren) if (child) this.statements(child, out);
    if (node.isMissing) out.push(opaqueCommand(node.text, 'the command line is incomplete'));
  }

  private redirected(node: Node, out: ShellCommand[]): void {
    const body = node.childForFieldName('body');
    const nested: NestedCommands[] = [];
    const redirects = node.namedChildren
      .filter((c): c is Node => !!c && REDIRECTS.has(c.type))
      .map((r) => this.redirect(r, nested));
    if (body?.type === 'command') {
      const cmd = this.command(body, redirects);
      cmd.nested.push(...nested);
      out.push(cmd);
      return;
    }
    const before = out.length;
    if (body) this.statements(body, out);
    if ((body?.type === 'list' || body?.type === 'pipeline') && out.length > before) {
      // The grammar wraps `a && b <<EOF` whole; the shell gives the redirections to the last command.
      const last = out[out.length - 1];
      last.redirects.push(...redirects);
      last.nested.push(...nested);
      return;
    }
    // Redirections of a group, loop or subshell apply to all of it: keep them as a command of their own.
    out.push({
      ...emptyCommand(node.text.slice((body?.endIndex ?? node.startIndex) - node.startIndex).trim()),
      redirects,
      nested,
    });
  }

  private pipeline(node: Node, out: ShellCommand[]): void {
    let previous: ShellCommand | undefined;
    for (const stage of node.namedChildren) {
      if (!stage) continue;
      const start = out.length;
      this.statements(stage, out);
      const first = out[start];
      if (first && previous) {
        first.pipedInto = true;
        if (previous.words[0] !== undefined) first.pipedFrom = previous.words[0];
      }
      if (first) previous = first;
    }
  }

  /** A `command`, `variable_assignment` or `declaration_command` node as a simple command. */
  private command(node: Node, redirects: ShellRedirect[]): ShellCommand {
    const cmd = emptyCommand(commandText(node));
    cmd.redirects = redirects;
    const words = node.type === 'variable_assignment' ? [node] : node.namedChildren;
    for (const part of words) {
      if (!part) continue;
      if (part.type === 'variable_assignment' && (cmd.words.length === 0 || node.type !== 'command')) {
        const name = part.childForFieldName('name')?.text ?? '';
        const valueNode = part.childForFieldName('value');
        cmd.assignments.push({ name, value: valueNode ? wordValue(valueNode).text : '' });
        if (valueNode) cmd.nested.push(...this.substitutionsIn(valueNode));
        if (node.type === 'declaration_command') this.addWord(cmd, part.text, false);
        continue;
      }
      if (REDIRECTS.has(part.type)) {
        cmd.redirects.push(this.redirect(part, cmd.nested));
        continue;
      }
      if (part.type === 'comment') continue;
      const value = part.type === 'command_name' && part.firstNamedChild ? part.firstNamedChild : part;
      const { text, dynamic } = wordValue(value);
      this.addWord(cmd, text, dynamic);
      cmd.nested.push(...this.substitutionsIn(part));
    }
    if (node.type === 'declaration_command' || node.type === 'unset_command') {
      const keyword = node.firstChild?.text;
      if (keyword && cmd.words[0] !== keyword) {
        cmd.words.unshift(keyword);
        cmd.dynamic.unshift(false);
      }
    }
    return cmd;
  }

  private addWord(cmd: ShellCommand, text: string, dynamic: boolean): void {
    cmd.words.push(text);
    cmd.dynamic.push(dynamic);
  }

  private redirect(node: Node, nested: NestedCommands[]): ShellRedirect {
    const op = node.children.find((c) => c && !c.isNamed && /[<>]/.test(c.type))?.type ?? '>';
    if (node.type === 'heredoc_redirect') {
      // The body is data for most commands, but a shell reading it runs it: keep its text.
      const body = node.namedChildren.find((c) => c?.type === 'heredoc_body');
      if (!body) return { op: '<<', target: '', dynamic: false };
      const groups = this.substitutionsIn(body);
      nested.push(...groups);
      const expands = body.namedChildren.some((c) => c && c.type !== 'heredoc_content');
      return { op: '<<', target: body.text, dynamic: expands };
    }
    const target =
      node.childForFieldName('destination') ?? node.namedChildren.find((c) => c && c.type !== 'file_descriptor');
    if (!target) return { op, target: '', dynamic: false };
    nested.push(...this.substitutionsIn(target));
    const value = wordValue(target);
    return { op: node.type === 'herestring_redirect' ? '<<<' : op, target: value.text, dynamic: value.dynamic };
  }

  /** The command groups of every `$(...)`, backtick and `<(...)` under `node` (not inside one another). */
  substitutionsIn(node: Node): NestedCommands[] {
    const groups: NestedCommands[] = [];
    const visit = (n: Node) => {
      if (SUBSTITUTIONS.has(n.type)) {
        const inner: ShellCommand[] = [];
        const source = substitutionBody(n);
        if (this.depth + 1 > MAX_NESTING_DEPTH)
          inner.push(opaqueCommand(source, `nested more than ${MAX_NESTING_DEPTH} levels deep`));
        else {
          const walker = new Walker(this.depth + 1);
          for (const child of n.namedChildren) if (child) walker.statements(child, inner);
        }
        groups.push({ how: 'substitution', source, commands: inner });
        return;
      }
      for (const child of n.namedChildren) if (child) visit(child);
    };
    visit(node);
    return groups;
  }
}

/** A command node's text without the redirections that follow it. */
function commandText(node: Node): string {
  let end = node.endIndex;
  for (const child of node.namedChildren) if (child && REDIRECTS.has(child.type)) end = Math.min(end, child.startIndex);
  return node.text.slice(0, end - node.startIndex).trim();
}

function substitutionBody(node: Node): string {
  const t = node.text;
  if (t.startsWith('`')) return t.slice(1, -1);
  return t.slice(2, -1);
}

function clip(text: string): string {
  const t = text.trim().replace(/\s+/g, ' ');
  return t.length > 40 ? `${t.slice(0, 37)}...` : t;
}
