/**
 * The README is the index a newcomer reads: its documentation table links every page of docs/,
 * and its CLI line names every command docs/cli.md documents.
 */
import { it, expect } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from '../support/dist.js';

const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');

it('the documentation table links every page of docs/', () => {
  const table = readme.slice(readme.indexOf('## Documentation'));
  const linked = new Set([...table.matchAll(/^\| \[docs\/([^\]]+\.md)\]/gm)].map((m) => m[1]));
  const pages = readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md'));
  expect(pages.filter((p) => !linked.has(p))).toEqual([]);
});

it('the CLI line names every command docs/cli.md documents', () => {
  const cli = readFileSync(path.join(ROOT, 'docs', 'cli.md'), 'utf8');
  const block = /## Commands\s+```text\n([\s\S]*?)```/.exec(cli)![1];
  const commands = [...block.matchAll(/^toolbelt (\w+)/gm)].map((m) => m[1]);
  expect(commands.length).toBeGreaterThan(5);
  const line = /^- \*\*CLI\*\*: `toolbelt ([^`]+)`/m.exec(readme)![1].split(/\s*\|\s*/);
  expect(commands.filter((c) => !line.includes(c))).toEqual([]);
});
