/**
 * The public surface, pinned: every name each entry of package.json's `exports` offers (the root,
 * `agent-toolbelt/rest`, `/ssrf`, ...), with its kind and type, must match __tests__/package/public-api.txt,
 * so that a change to what users can import is a deliberate diff.
 */
import { describe, it, expect } from '@jest/globals';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { ROOT } from '../support/dist.js';

const REPORT = path.join(ROOT, '__tests__', 'package', 'public-api.txt');
const UPDATE = 'UPDATE_API_REPORT=1 npx jest __tests__/package/api-report.test.ts';

/** The source file of each public entry: `agent-toolbelt` -> src/index.ts, `agent-toolbelt/rest` -> src/rest/index.ts, ... */
function entries(): Array<{ spec: string; file: string }> {
  const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
    exports: Record<string, string | { import: { default: string } }>;
  };
  return Object.entries(pkg.exports)
    .filter(([, target]) => typeof target === 'object')
    .map(([key, target]) => ({
      spec: key === '.' ? 'agent-toolbelt' : `agent-toolbelt/${key.slice(2)}`,
      file: path.join(
        ROOT,
        (target as { import: { default: string } }).import.default
          .replace(/^\.\/dist\//, 'src/')
          .replace(/\.js$/, '.ts'),
      ),
    }));
}

/** One line per export: `name  kind  type` (prefixed by the entry unless it is the root), sorted. */
function apiReport(): string {
  const list = entries();
  const config = ts.getParsedCommandLineOfConfigFile(
    path.join(ROOT, 'tsconfig.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: () => undefined,
    },
  );
  const program = ts.createProgram(
    list.map((e) => e.file),
    { ...config!.options, noEmit: true },
  );
  const checker = program.getTypeChecker();
  const lines = list.flatMap(({ spec, file }) => {
    const prefix = spec === 'agent-toolbelt' ? '' : `${spec}  `;
    const moduleSymbol = checker.getSymbolAtLocation(program.getSourceFile(file)!)!;
    return checker.getExportsOfModule(moduleSymbol).map((exported) => `${prefix}${describeExport(checker, exported)}`);
  });
  return `${lines.sort().join('\n')}\n`;
}

/** `name  kind  type` of one export. */
function describeExport(checker: ts.TypeChecker, exported: ts.Symbol): string {
  const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
  const kind =
    symbol.flags & ts.SymbolFlags.Class
      ? 'class'
      : symbol.flags & ts.SymbolFlags.Function
        ? 'function'
        : symbol.flags & ts.SymbolFlags.Variable
          ? 'const'
          : symbol.flags & (ts.SymbolFlags.ValueModule | ts.SymbolFlags.NamespaceModule)
            ? 'namespace'
            : symbol.flags & ts.SymbolFlags.Interface
              ? 'interface'
              : symbol.flags & ts.SymbolFlags.TypeAlias
                ? 'type'
                : 'other';
  const decl = symbol.valueDeclaration ?? symbol.declarations?.[0];
  const type =
    kind === 'function' || kind === 'const'
      ? checker.typeToString(checker.getTypeOfSymbolAtLocation(symbol, decl!))
      : kind === 'type'
        ? checker.typeToString(checker.getDeclaredTypeOfSymbol(symbol))
        : '';
  return `${exported.name}  ${kind}${type ? `  ${type}` : ''}`;
}

describe('public API report', () => {
  it('every entry exports exactly what __tests__/package/public-api.txt lists', () => {
    const actual = apiReport();
    if (process.env.UPDATE_API_REPORT === '1') writeFileSync(REPORT, actual);
    const pinned = readFileSync(REPORT, 'utf8');
    if (actual !== pinned) {
      throw new Error(
        `The public API changed (diff below: - pinned, + now). If the change is deliberate, run\n  ${UPDATE}\n` +
          `and commit __tests__/package/public-api.txt with the change; otherwise undo the export change.\n\n` +
          diffLines(pinned, actual),
      );
    }
    expect(actual).toBe(pinned);
  }, 120_000);
});

/** The lines only in `a` (prefixed -) and only in `b` (prefixed +). */
function diffLines(a: string, b: string): string {
  const left = new Set(a.split('\n'));
  const right = new Set(b.split('\n'));
  return [
    ...[...left].filter((l) => !right.has(l)).map((l) => `- ${l}`),
    ...[...right].filter((l) => !left.has(l)).map((l) => `+ ${l}`),
  ].join('\n');
}
