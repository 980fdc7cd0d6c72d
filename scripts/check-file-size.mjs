#!/usr/bin/env node
// Lint rule (docs/contributing.md, "Long files"): a source file over MAX_LINES lines states in its
// header comment why it is one unit, on a line starting "Over 400 lines:". Exits 1 naming each file
// that does not.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** Lines a file of src/ may have before its header must say why it is one unit. */
const MAX_LINES = 400;
/** How far into a file the header's reason is looked for. */
const HEADER_LINES = 40;

function* sources(dir) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) yield* sources(p);
    else if (/\.(ts|mts|mjs)$/.test(e.name)) yield p;
  }
}

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const bad = [];
for (const file of sources(path.join(root, 'src'))) {
  const lines = readFileSync(file, 'utf8').split('\n');
  if (lines.length - 1 <= MAX_LINES) continue;
  const header = lines.slice(0, HEADER_LINES).join('\n');
  if (!/^\s*(\*|\/\/).*\bOver 400 lines:/m.test(header))
    bad.push(`${path.relative(root, file)} (${lines.length - 1} lines)`);
}
if (bad.length) {
  console.error(
    `${bad.length} file(s) over ${MAX_LINES} lines without a reason in their header. Split the file by ` +
      `concern, or add a header line " * Over 400 lines: <why this is one unit>" (docs/contributing.md):\n  ` +
      bad.join('\n  '),
  );
  process.exit(1);
}
