// Edit formats: the same edits, made from this repository's own source files, expressed as `edit`
// calls (str_replace, with `move` for a rename) and as `apply_patch` patches. Prints each tool's
// success rate on the well-formed edits (target >= 99%), its refusal rate on malformed ones with
// nothing changed (target 100%), and time per applied edit: apply_patch <= 1.2x edit for one hunk,
// one 20-file patch <= 20 single edits.
// Kinds: single-line, multi-hunk (3 changes in a file), multi-file (3 files), whitespace-drifted
// (the file on disk has trailing whitespace the edit does not), Unicode punctuation drift (the file
// has typographic quotes and dashes where the edit has ASCII), moved files (rename + change).
// Run: npm run build && node bench/edit-formats.bench.mjs
import { mkdirSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { EditTool } from '../dist/tools/files/edit.js';
import { MoveTool } from '../dist/tools/files/move.js';
import { ApplyPatchTool } from '../dist/tools/patch/apply-patch.js';
import { readTracker } from '../dist/workspace/workspace.js';
import { benchCtx, median, timeMs } from './lib.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.dirname(here);
const out = path.join(here, 'out', 'edit-formats');
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

// ---------------------------------------------------------------------------------------------
// The corpus: real source files, and a seeded random number generator (the same run every time)
// ---------------------------------------------------------------------------------------------

const walk = (d) =>
  readdirSync(d, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(path.join(d, e.name)) : e.name.endsWith('.ts') ? [path.join(d, e.name)] : [],
  );
const sources = walk(path.join(repo, 'src'))
  .sort()
  .map((f) => ({ name: path.relative(repo, f), lines: readFileSync(f, 'utf8').replace(/\n$/, '').split('\n') }))
  .filter((s) => s.lines.length >= 60 && !s.lines.some((l) => l.includes('\r')));
let seed = 0x5eed;
const random = () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const pick = (xs) => xs[Math.floor(random() * xs.length)];

/** How often `block` (lines) occurs in `lines`. */
function occurrences(lines, block) {
  let n = 0;
  for (let i = 0; i + block.length <= lines.length; i++) if (block.every((b, j) => lines[i + j] === b)) n++;
  return n;
}

/** A line worth changing (long enough, and with `want` in it when given), or undefined. */
function pickLine(lines, taken, want) {
  for (let tries = 0; tries < 200; tries++) {
    const i = 4 + Math.floor(random() * (lines.length - 8));
    if (lines[i].trim().length < 12 || taken.some((t) => Math.abs(t - i) < 10)) continue;
    if (want && !want.test(lines[i])) continue;
    return i;
  }
  return undefined;
}

/** The smallest block around line `i` whose text occurs once in the file (edit matches inside lines too), or undefined. */
function uniqueAround(lines, i) {
  const text = lines.join('\n');
  for (let r = 0; r <= 4; r++) {
    const block = lines.slice(Math.max(0, i - r), i + r + 1).join('\n');
    const at = text.indexOf(block);
    if (text.indexOf(block, at + 1) === -1) return { from: Math.max(0, i - r), to: i + r + 1 };
  }
  return undefined;
}

/** A patch hunk changing line `i` to `next`: 3 lines of context each side, more while it is not unique. */
function hunkAt(lines, i, next, contextOf = (l) => l) {
  let r = 3;
  while (occurrences(lines, lines.slice(Math.max(0, i - r), i + r + 1)) > 1 && r < 12) r++;
  const before = lines.slice(Math.max(0, i - r), i).map((l) => ` ${contextOf(l)}`);
  const after = lines.slice(i + 1, i + 1 + r).map((l) => ` ${contextOf(l)}`);
  return ['@@', ...before, `-${contextOf(lines[i])}`, `+${next}`, ...after];
}

const TRAILING = (l) => (l.trim() ? `${l}  ` : l);
const UNICODE = (l) => l.replace(/'/g, '\u2019').replace(/"/g, '\u201d').replace(/ - /g, ' \u2013 ');

// ---------------------------------------------------------------------------------------------
// Cases: files on disk before, the edit calls, the patch, the tree each should leave
// ---------------------------------------------------------------------------------------------

/**
 * A change of one line of `src` to `next`: on disk the file is `drift`ed; the model wrote the edit
 * from the clean file. edit replaces its oldString's block by newString; apply_patch replaces the
 * '-' line and keeps the file's own context lines.
 */
function lineChange(src, i, next, drift = (l) => l) {
  const span = uniqueAround(src.lines, i);
  if (!span) return undefined;
  return {
    edit: {
      oldString: src.lines.slice(span.from, span.to).join('\n'),
      newString: src.lines
        .slice(span.from, span.to)
        .map((l, k) => (span.from + k === i ? next : l))
        .join('\n'),
    },
    hunk: hunkAt(src.lines, i, next),
    patchLines: (lines) => lines.map((l, k) => (k === i ? next : l)),
    editLines: (lines) => lines.map((l, k) => (k === i ? next : span.from <= k && k < span.to ? src.lines[k] : l)),
    drift,
  };
}

function makeCase(kind, n) {
  const next = (line) => `${line} // edit ${n}`;
  const want = kind === 'unicode' ? /'|"| - / : undefined;
  const drift = kind === 'whitespace' ? TRAILING : kind === 'unicode' ? UNICODE : (l) => l;
  const files = kind === 'multi-file' ? [pick(sources), pick(sources), pick(sources)] : [pick(sources)];
  if (new Set(files).size !== files.length) return undefined;
  const perFile = kind === 'multi-hunk' ? 3 : 1;
  const c = { kind, before: {}, edits: [], moves: [], patch: ['*** Begin Patch'], patchAfter: {}, editAfter: {} };
  for (const src of files) {
    const taken = [];
    const changes = [];
    for (let k = 0; k < perFile; k++) {
      const i = pickLine(src.lines, taken, want);
      if (i === undefined) return undefined;
      taken.push(i);
      const ch = lineChange(src, i, next(src.lines[i]), drift);
      if (!ch) return undefined;
      changes.push({ i, ...ch });
    }
    changes.sort((a, b) => a.i - b.i);
    const name = src.name;
    const onDisk = src.lines.map(drift);
    c.before[name] = `${onDisk.join('\n')}\n`;
    let patched = onDisk;
    let edited = onDisk;
    for (const ch of changes) {
      patched = ch.patchLines(patched);
      edited = ch.editLines(edited);
    }
    const target = kind === 'moved' ? name.replace(/\.ts$/, '.moved.ts') : name;
    c.patchAfter[target] = `${patched.join('\n')}\n`;
    c.editAfter[target] = `${edited.join('\n')}\n`;
    c.patch.push(`*** Update File: ${name}`);
    if (kind === 'moved') {
      c.patch.push(`*** Move to: ${target}`);
      c.moves.push({ from: name, to: target });
    }
    for (const ch of changes) {
      c.patch.push(...ch.hunk);
      c.edits.push({ filePath: target, ...ch.edit });
    }
  }
  c.patch.push('*** End Patch');
  c.patch = c.patch.join('\n');
  return c;
}

const PLAN = [
  ['single-line', 80],
  ['multi-hunk', 40],
  ['multi-file', 30],
  ['whitespace', 30],
  ['unicode', 30],
  ['moved', 20],
];
const cases = [];
for (const [kind, count] of PLAN) {
  let made = 0;
  for (let n = 0; made < count && n < count * 20; n++) {
    const c = makeCase(kind, cases.length);
    if (c) {
      cases.push(c);
      made++;
    }
  }
}

/** Malformed patches and edits, each made from a well-formed case: they must be refused with nothing changed. */
const BREAKS = [
  ['no end marker', (p) => p.replace(/\n\*\*\* End Patch$/, '')],
  ['context line without its space', (p) => p.replace(/\n \s*([A-Za-z_])/, '\n$1')],
  ['context not in the file', (p) => p.replace(/\n (\s*\S)/, '\n $1NOT_THERE_')],
  ['unknown file header', (p) => p.replace('*** Update File:', '*** Modify File:')],
  [
    'second file missing',
    (p) => p.replace(/\*\*\* End Patch$/, '*** Update File: no/such/file.ts\n@@\n-x\n+y\n*** End Patch'),
  ],
];
const malformed = cases
  .filter((c) => c.kind === 'single-line' || c.kind === 'multi-file')
  .slice(0, 40)
  .map((c, k) => {
    const [why, breakIt] = BREAKS[k % BREAKS.length];
    return {
      ...c,
      why,
      patch: breakIt(c.patch),
      edits: [{ ...c.edits[0], oldString: `${c.edits[0].oldString}NOT_THERE` }],
    };
  });

// ---------------------------------------------------------------------------------------------
// Running them
// ---------------------------------------------------------------------------------------------

const ctx = benchCtx();
let dirSeq = 0;

/** A fresh directory holding `files`, each recorded as read; the tools initialised on it. */
async function setUp(files) {
  const dir = path.join(out, String(++dirSeq));
  for (const [name, text] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, name)), { recursive: true });
    await writeFile(path.join(dir, name), text);
    await readTracker.recordNow(ctx.sessionID, path.join(dir, name));
  }
  const init = { workspaceRoot: dir };
  return {
    dir,
    edit: await EditTool.init(init),
    move: await MoveTool.init(init),
    patch: await ApplyPatchTool.init(init),
  };
}

async function treeOf(dir) {
  const got = {};
  const walkDir = async (d, rel) => {
    for (const e of await readdir(d, { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) await walkDir(path.join(d, e.name), r);
      else got[r] = await readFile(path.join(d, e.name), 'utf8');
    }
  };
  await walkDir(dir, '');
  return got;
}

const same = (a, b) => JSON.stringify(Object.entries(a).sort()) === JSON.stringify(Object.entries(b).sort());
/** Trees compared with trailing whitespace ignored: after a whitespace-drifted edit, where the file's own trailing blanks end up is not the point. */
const trimmed = (t) => Object.fromEntries(Object.entries(t).map(([k, v]) => [k, v.replace(/[ \t]+$/gm, '')]));

/** Runs `fn` and says whether it succeeded; the tools throw on refusal. */
async function attempt(fn) {
  try {
    await fn();
    return true;
  } catch {
    return false;
  }
}

async function runEdits(t, c) {
  for (const m of c.moves) await t.move.execute({ from: m.from, to: m.to }, ctx);
  for (const e of c.edits) await t.edit.execute(e, ctx);
}
const runPatch = (t, c) => t.patch.execute({ input: c.patch }, ctx);

const tally = { edit: { ok: 0, kinds: {} }, patch: { ok: 0, kinds: {} } };
const oneHunk = { edit: [], patch: [] };
for (const c of cases) {
  const unchangedAfter = (after) => ({
    ...Object.fromEntries(Object.entries(c.before).filter(([n]) => !c.moves.some((m) => m.from === n))),
    ...after,
  });
  for (const tool of ['edit', 'patch']) {
    const t = await setUp(c.before);
    let ms = 0;
    const ok = await attempt(async () => {
      ms = await timeMs(() => (tool === 'edit' ? runEdits(t, c) : runPatch(t, c)));
    });
    const want = unchangedAfter(tool === 'edit' ? c.editAfter : c.patchAfter);
    const got = await treeOf(t.dir);
    const good = ok && (c.kind === 'whitespace' ? same(trimmed(got), trimmed(want)) : same(got, want));
    if (good) tally[tool].ok++;
    else {
      (tally[tool].kinds[c.kind] ??= []).push(c.patch.split('\n')[1]);
      if (process.env.BENCH_DEBUG && c.kind !== 'whitespace')
        console.log('FAILED', tool, c.kind, JSON.stringify(c.edits).slice(0, 500));
    }
    void ms;
  }
}

const refused = { edit: 0, patch: 0 };
for (const c of malformed) {
  for (const tool of ['edit', 'patch']) {
    const t = await setUp(c.before);
    const ok = await attempt(() => (tool === 'edit' ? t.edit.execute(c.edits[0], ctx) : runPatch(t, c)));
    if (!ok && same(await treeOf(t.dir), c.before)) refused[tool]++;
    else if (process.env.BENCH_DEBUG)
      console.log('NOT REFUSED', tool, c.why, JSON.stringify(tool === 'edit' ? c.edits[0] : c.patch).slice(0, 600));
  }
}

// One hunk: the single-line cases again, edit and apply_patch alternately, several rounds.
const singles = cases.filter((c) => c.kind === 'single-line').slice(0, 40);
for (let round = 0; round < 5; round++) {
  for (const c of singles) {
    const a = await setUp(c.before);
    oneHunk.edit.push(await timeMs(() => runEdits(a, c)));
    const b = await setUp(c.before);
    oneHunk.patch.push(await timeMs(() => runPatch(b, c)));
  }
}

// 20 files: one patch against 20 edit calls, interleaved rounds.
const twenty = [];
for (let k = 0; twenty.length < 20 && k < 400; k++) {
  const src = sources[k % sources.length];
  if (twenty.some((t) => t.src === src)) continue;
  const i = pickLine(src.lines, []);
  const ch = i === undefined ? undefined : lineChange(src, i, `${src.lines[i]} // twenty`);
  if (ch) twenty.push({ src, ch });
}
const twentyBefore = Object.fromEntries(twenty.map((t) => [t.src.name, `${t.src.lines.join('\n')}\n`]));
const twentyPatch = [
  '*** Begin Patch',
  ...twenty.flatMap((t) => [`*** Update File: ${t.src.name}`, ...t.ch.hunk]),
  '*** End Patch',
].join('\n');
const tPatch20 = [];
const tEdit20 = [];
for (let round = 0; round < 15; round++) {
  const a = await setUp(twentyBefore);
  tPatch20.push(await timeMs(() => a.patch.execute({ input: twentyPatch }, ctx)));
  const b = await setUp(twentyBefore);
  tEdit20.push(
    await timeMs(async () => {
      for (const t of twenty) await b.edit.execute({ filePath: t.src.name, ...t.ch.edit }, ctx);
    }),
  );
}

const pct = (n, d) => `${((100 * n) / d).toFixed(1)}%`;
const counts = Object.fromEntries(PLAN.map(([k]) => [k, cases.filter((c) => c.kind === k).length]));
console.log(
  `corpus: ${sources.length} source files; ${cases.length} well-formed edits ${JSON.stringify(counts)}, ${malformed.length} malformed`,
);
for (const tool of ['edit', 'patch']) {
  const name = tool === 'patch' ? 'apply_patch' : 'edit';
  const failed = Object.entries(tally[tool].kinds)
    .map(([k, v]) => `${k}: ${v.length}`)
    .join(', ');
  console.log(
    `${name}: ${tally[tool].ok}/${cases.length} well-formed applied (${pct(tally[tool].ok, cases.length)}, target >= 99%)${failed ? ` — failed: ${failed}` : ''}; ` +
      `${refused[tool]}/${malformed.length} malformed refused with nothing changed (${pct(refused[tool], malformed.length)}, target 100%)`,
  );
}
const r1 = median(oneHunk.patch) / median(oneHunk.edit);
console.log(
  `one hunk: apply_patch ${median(oneHunk.patch).toFixed(2)} ms, edit ${median(oneHunk.edit).toFixed(2)} ms per applied edit, ratio = ${r1.toFixed(2)} (target <= 1.2) ${r1 <= 1.2 ? 'OK' : 'MISSED'}`,
);
const r20 = median(tPatch20) / median(tEdit20);
console.log(
  `20 files: one patch ${median(tPatch20).toFixed(1)} ms, 20 edit calls ${median(tEdit20).toFixed(1)} ms, ratio = ${r20.toFixed(2)} (target <= 1) ${r20 <= 1 ? 'OK' : 'MISSED'}`,
);
rmSync(out, { recursive: true, force: true });
