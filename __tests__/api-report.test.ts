/**
 * The public surface, pinned: every name src/index.ts exports, with its kind and type, must match
 * __tests__/public-api.txt, so that a change to what users can import is a deliberate diff.
 */
import { describe, it, expect } from '@jest/globals';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { ROOT } from './dist.js';

const REPORT = path.join(ROOT, '__tests__', 'public-api.txt');
const UPDATE = 'UPDATE_API_REPORT=1 npx jest __tests__/api-report.test.ts';

/** One line per export: `name  kind  type`, sorted by name. */
function apiReport(): string {
  const entry = path.join(ROOT, 'src', 'index.ts');
  const config = ts.getParsedCommandLineOfConfigFile(
    path.join(ROOT, 'tsconfig.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: () => undefined,
    },
  );
  const program = ts.createProgram([entry], { ...config!.options, noEmit: true });
  const checker = program.getTypeChecker();
  const moduleSymbol = checker.getSymbolAtLocation(program.getSourceFile(entry)!)!;
  const lines = checker.getExportsOfModule(moduleSymbol).map((exported) => {
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
  });
  return `${lines.sort().join('\n')}\n`;
}

describe('public API report', () => {
  it('src/index.ts exports exactly what __tests__/public-api.txt lists', () => {
    const actual = apiReport();
    if (process.env.UPDATE_API_REPORT === '1') writeFileSync(REPORT, actual);
    const pinned = readFileSync(REPORT, 'utf8');
    if (actual !== pinned) {
      throw new Error(
        `The public API changed (diff below: - pinned, + now). If the change is deliberate, run\n  ${UPDATE}\n` +
          `and commit __tests__/public-api.txt with the change; otherwise undo the export change.\n\n` +
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
