// Peers benchmark: our file tools against the two a user would otherwise pick, on the same
// generated data in one process, interleaved rounds (the order of the contenders rotates every
// round), medians, ratio = ours / peer (below 1: we are faster).
//   - deepagents: FilesystemBackend({ virtualMode: true }) behind createFilesystemMiddleware's tools
//   - @modelcontextprotocol/server-filesystem: spawned over stdio, called with the MCP SDK client
// Ours and deepagents are both invoked as LangChain tools with a tool call (as an agent calls them);
// ours goes through the registry's full pipeline. Every round checks every side's result: a peer's
// wrong or cut result is counted and reported next to its time, ours must be exact or the run fails.
// Data (a node_modules-like tree, a 100 MB and a 7.6 MB log, a 10 MB source file) and our saved full outputs live
// in one temp dir that is removed at the end, also when the run fails or is interrupted (the MCP
// server's child process is closed then too). Build first (npm run bench does): node bench/peers.bench.mjs
// BENCH_ROUNDS=n scales the round counts; BENCH_ONLY=glob runs only the operations whose label has it.
// Every ratio's target is <= 1.00 (ours no slower than the peer); the run ends with one line per row
// and peer saying OK or MISSED, with the spread of the single rounds' ratios (quartiles) next to it.
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, rmSync, createWriteStream, realpathSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { FilesystemBackend, StateBackend, createFilesystemMiddleware } from 'deepagents';
import { AIMessage, ToolMessage } from '@langchain/core/messages';
import { Annotation, MemorySaver, MessagesAnnotation, StateGraph } from '@langchain/langgraph';
import { ToolNode } from '@langchain/langgraph/prebuilt';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { createRegistry, registerBuiltinTools } from '../dist/index.js';
import { median } from './lib.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const SCALE = Number(process.env.BENCH_ROUNDS ?? 1);
const rounds = (n) => Math.max(3, Math.round(n * SCALE));
const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'toolbelt-peers-')));
const root = path.join(base, 'ws'); // the workspace all three contenders see
const outputDir = path.join(base, 'outputs'); // our saved full outputs (kept out of the workspace)
mkdirSync(root);
const NEEDLE = 'toolbeltNeedle42';
const TAIL = 100;

/** The MCP filesystem server's client (and so its child process), once connected. */
let mcp;
let cleanedUp = false;
/** Closes the MCP server's child and removes every generated file: on success, failure and Ctrl-C. */
async function cleanup() {
  if (cleanedUp) return;
  cleanedUp = true;
  try {
    await mcp?.close();
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}
for (const signal of ['SIGINT', 'SIGTERM'])
  process.once(signal, () => void cleanup().finally(() => process.exit(128 + (signal === 'SIGINT' ? 2 : 15))));

try {
  // ------------------------------------------------------------------------------------------------
  // Data
  // ------------------------------------------------------------------------------------------------

  /** A node_modules-like tree: packages with .d.ts, .js (some minified, one long line), .json, .md. */
  function generateTree() {
    const tree = path.join(root, 'tree');
    const planted = []; // files holding the needle, with their matching lines
    let dts = 0;
    let files = 0;
    for (let p = 0; p < 470; p++) {
      const pkg = path.join(tree, p % 5 === 0 ? `@scope${p % 7}` : '', `pkg-${p}`);
      for (const sub of ['lib', 'dist', 'types']) mkdirSync(path.join(pkg, sub), { recursive: true });
      writeFileSync(
        path.join(pkg, 'package.json'),
        JSON.stringify({ name: `pkg-${p}`, version: '1.0.0', main: 'lib/index.js' }, null, 2),
      );
      writeFileSync(path.join(pkg, 'README.md'), `# pkg-${p}\n\nSome documentation.\n`.repeat(20));
      files += 2;
      for (let f = 0; f < 6; f++) {
        const body = Array.from(
          { length: 60 },
          (_, i) => `export declare function fn${p}_${f}_${i}(a: string, b: number): Promise<void>;`,
        );
        writeFileSync(path.join(pkg, 'types', `mod${f}.d.ts`), body.join('\n') + '\n');
        dts++;
        files++;
        const js = Array.from({ length: 80 }, (_, i) => `function fn${p}_${f}_${i}(a, b) { return a + b * ${i}; }`);
        let count = 0;
        if ((p * 6 + f) % 150 === 0) {
          // A plain line with the needle, and a minified line (3,000+ chars) with it twice.
          js[10] = `  const key = "${NEEDLE}"; // plain`;
          js[40] = `var a=${'x=1,'.repeat(400)}b="${NEEDLE}",c=${'y=2,'.repeat(350)}d="${NEEDLE}";`;
          count = 1;
        }
        writeFileSync(path.join(pkg, 'lib', `mod${f}.js`), js.join('\n') + '\n');
        writeFileSync(path.join(pkg, 'dist', `mod${f}.min.js`), js.join(';'));
        files += 2;
        if (count) {
          // Two matching lines in lib/, and one (the whole minified file) in dist/.
          planted.push({ rel: `${path.relative(root, pkg)}/lib/mod${f}.js`, count: 2 });
          planted.push({ rel: `${path.relative(root, pkg)}/dist/mod${f}.min.js`, count: 1 });
        }
      }
    }
    return { dts, files, planted };
  }

  async function generateLog(file, bytes) {
    const ws = createWriteStream(file);
    let size = 0;
    let i = 0;
    while (size < bytes) {
      const l = `2026-11-23T10:${String(i % 60).padStart(2, '0')}:00.000Z INFO worker-${i % 17} request ${i} served in ${i % 997} ms\n`;
      size += l.length;
      i++;
      if (!ws.write(l)) await new Promise((r) => ws.once('drain', r));
    }
    await new Promise((r) => ws.end(r));
    return i; // lines
  }

  function editSource() {
    const lines = Array.from({ length: 180_000 }, (_, i) => `    value_${i} = compute(${i}, "padding text here");`);
    lines[150_000] = '    target_line = 0;';
    return lines.join('\n') + '\n';
  }

  const t0 = performance.now();
  const tree = generateTree();
  const logLines = await generateLog(path.join(root, 'big.log'), 100e6);
  const source = editSource();
  for (const who of ['ours', 'deepagents', 'mcp']) writeFileSync(path.join(root, `${who}.txt`), source);
  const lastLines = readFileSync(path.join(root, 'big.log'), 'utf8')
    .split('\n')
    .slice(-TAIL - 1, -1);
  const midLines = await generateLog(path.join(root, 'mid.log'), 7.6e6);
  const midLast = readFileSync(path.join(root, 'mid.log'), 'utf8')
    .split('\n')
    .slice(-TAIL - 1, -1);
  const needleMatches = tree.planted.reduce((n, f) => n + f.count, 0);
  console.log(
    `data in ${root} (${((performance.now() - t0) / 1000).toFixed(1)} s): tree ${tree.files} files (${tree.dts} .d.ts, ` +
      `"${NEEDLE}" on ${needleMatches} lines of ${tree.planted.length} files), big.log 100 MB (${logLines} lines), mid.log 7.6 MB (${midLines} lines), 10 MB source x3`,
  );

  // ------------------------------------------------------------------------------------------------
  // Contenders
  // ------------------------------------------------------------------------------------------------

  let callId = 0;
  const toolCall = (name, args) => ({ name, args, id: `call_${++callId}`, type: 'tool_call' });
  const text = (msg) => (typeof msg.content === 'string' ? msg.content : msg.content.map((c) => c.text ?? '').join(''));

  // The loop guard is off: a benchmark repeats identical calls on purpose.
  const registry = registerBuiltinTools(createRegistry({ loopGuard: false, truncate: { outputDir } }));
  const oursTools = await registry.tools({
    ids: ['read', 'edit', 'grep', 'glob'],
    initCtx: { workspaceRoot: root, searchIgnored: true },
  });
  const oursJsTools = await registry.tools({
    ids: ['grep'],
    initCtx: { workspaceRoot: root, grepBackend: 'js', searchIgnored: true },
  });
  const ours = Object.fromEntries(oursTools.map((t) => [t.name, t]));
  /** Our tool's result: the model's text and the Tool.Result riding on the artifact. */
  async function callOurs(name, args, tools = ours) {
    const msg = await tools[name].invoke(toolCall(name, args));
    if (msg.status === 'error') throw new Error(`ours ${name} failed: ${text(msg)}`);
    return { text: text(msg), result: msg.artifact };
  }

  const da = Object.fromEntries(
    createFilesystemMiddleware({ backend: new FilesystemBackend({ rootDir: root, virtualMode: true }) }).tools.map(
      (t) => [t.name, t],
    ),
  );
  const callDa = async (name, args) => text(await da[name].invoke(toolCall(name, args)));
  /** deepagents' grep without ripgrep: its own substring fallback runs when `rg` cannot be spawned. */
  async function callDaNoRg(name, args) {
    const saved = process.env.PATH;
    process.env.PATH = '/nonexistent';
    try {
      return await callDa(name, args);
    } finally {
      process.env.PATH = saved;
    }
  }

  mcp = new Client({ name: 'peers-bench', version: '1.0.0' });
  await mcp.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [
        path.join(here, '..', 'node_modules', '@modelcontextprotocol', 'server-filesystem', 'dist', 'index.js'),
        root,
      ],
      stderr: 'ignore',
    }),
  );
  const callMcp = async (name, args) => {
    const res = await mcp.callTool({ name, arguments: args });
    if (res.isError) throw new Error(`MCP ${name} failed: ${res.content[0]?.text}`);
    return res.content.map((c) => c.text).join('');
  };

  // ------------------------------------------------------------------------------------------------
  // Harness
  // ------------------------------------------------------------------------------------------------

  /**
   * Runs each side once as a warm-up, then `n` rounds with the order rotated each round. Each side
   * is { name, run(round) -> result, check(result, round) -> '' | what is wrong }. Ours must be
   * right every round; a peer's problems are collected and reported.
   */
  async function measure(label, n, sides) {
    if (process.env.BENCH_ONLY && !label.includes(process.env.BENCH_ONLY)) return null;
    const times = sides.map(() => []);
    const cpu = sides.map(() => []); // process CPU ms (main thread and thread pool; not the MCP server's)
    const problems = sides.map(() => new Map());
    const first = [];
    for (let r = -1; r < n; r++) {
      for (let k = 0; k < sides.length; k++) {
        const i = (k + Math.max(r, 0)) % sides.length;
        const side = sides[i];
        const c = process.cpuUsage();
        const t = performance.now();
        const res = await side.run(r);
        const ms = performance.now() - t;
        const used = process.cpuUsage(c);
        if (r === -1) first[i] = ms;
        else {
          times[i].push(ms);
          cpu[i].push((used.user + used.system) / 1000);
        }
        const wrong = await side.check(res, r);
        if (wrong) {
          if (side.name.startsWith('ours')) throw new Error(`${label}: ours is wrong in round ${r}: ${wrong}`);
          problems[i].set(wrong, (problems[i].get(wrong) ?? 0) + 1);
        }
      }
    }
    const med = times.map(median);
    const row = {
      label,
      sides: sides.map((s, i) => ({
        name: s.name,
        ms: med[i],
        cpuMs: median(cpu[i]),
        times: times[i],
        first: first[i],
        problems: problems[i],
      })),
    };
    console.log(`\n${label} (${n} rounds)`);
    for (const s of row.sides) {
      const issues = [...s.problems].map(([what, count]) => `${what} (${count}/${n + 1} rounds)`).join('; ');
      console.log(
        `  ${s.name.padEnd(24)} median ${s.ms.toFixed(1).padStart(8)} ms   cpu ${s.cpuMs.toFixed(1).padStart(8)} ms   first call ${s.first.toFixed(1).padStart(8)} ms${issues ? `   WRONG: ${issues}` : ''}`,
      );
    }
    return row;
  }

  const rows = [];

  // 1. grep a literal in the tree, rg on both sides.
  const plantedFiles = new Set(tree.planted.map((f) => f.rel));
  function checkOursGrep({ result }) {
    const m = result.metadata;
    if (m.matches !== needleMatches || m.files !== tree.planted.length)
      return `${m.matches} matches in ${m.files} files, expected ${needleMatches} in ${tree.planted.length}`;
    // Every match is in the text the model gets, or in the full output it is pointed at.
    const full = m.outputPath ? readFileSync(m.outputPath, 'utf8') : result.output;
    const shownFiles = [...full.matchAll(/^(\S.*):$/gm)].map((x) => x[1]);
    if (shownFiles.length !== plantedFiles.size || !shownFiles.every((f) => plantedFiles.has(f)))
      return `files listed differ: ${shownFiles.length} listed, e.g. ${shownFiles.find((f) => !plantedFiles.has(f)) ?? [...plantedFiles].find((f) => !shownFiles.includes(f))}`;
    return '';
  }
  function checkDaGrep(out) {
    const lines = out.split('\n').filter((l) => /^\s+\d+: /.test(l)).length;
    if (lines === needleMatches) return '';
    return `shows ${lines} of ${needleMatches} matching lines${/truncated/.test(out) ? ' (cut at 80,000 chars, no total)' : ''}`;
  }
  rows.push(
    await measure('grep a literal in the tree (rg on both sides)', rounds(9), [
      { name: 'ours', run: () => callOurs('grep', { pattern: NEEDLE, path: 'tree' }), check: checkOursGrep },
      { name: 'deepagents', run: () => callDa('grep', { pattern: NEEDLE, path: '/tree' }), check: checkDaGrep },
    ]),
  );

  // 2. grep without rg: our JS backend vs deepagents' substring fallback.
  rows.push(
    await measure('grep a literal without rg (JS on both sides)', rounds(5), [
      {
        name: 'ours',
        run: () => callOurs('grep', { pattern: NEEDLE, path: 'tree' }, { grep: oursJsTools[0] }),
        check: checkOursGrep,
      },
      { name: 'deepagents', run: () => callDaNoRg('grep', { pattern: NEEDLE, path: '/tree' }), check: checkDaGrep },
    ]),
  );

  // 3. glob **/*.d.ts.
  function checkGlobList(paths, label) {
    const dts = paths.filter((p) => p.endsWith('.d.ts')).length;
    return dts === tree.dts ? '' : `${label}${dts} of ${tree.dts} paths`;
  }
  rows.push(
    await measure('glob **/*.d.ts', rounds(9), [
      {
        name: 'ours',
        run: () => callOurs('glob', { pattern: '**/*.d.ts', path: 'tree' }),
        check: ({ result }) => {
          if (result.metadata.count !== tree.dts) return `count ${result.metadata.count}, expected ${tree.dts}`;
          const full = result.metadata.fullListPath
            ? readFileSync(result.metadata.fullListPath, 'utf8')
            : result.output;
          return checkGlobList(full.split('\n'), 'complete list has ');
        },
      },
      {
        name: 'deepagents',
        run: () => callDa('glob', { pattern: '**/*.d.ts', path: '/tree' }),
        check: (out) => checkGlobList(out.split('\n'), `cut at 80,000 chars${/truncated/.test(out) ? '' : '?'}: `),
      },
      {
        name: 'mcp',
        run: () => callMcp('search_files', { path: path.join(root, 'tree'), pattern: '**/*.d.ts' }),
        check: (out) => checkGlobList(out.split('\n'), ''),
      },
    ]),
  );

  // 4. The last 100 lines of the 100 MB log.
  // Ours numbers them from the end (-100 .. -1), saying so: counting 100 MB of lines is not cheap.
  const lastFromEnd = lastLines.map((l, i) => `${i - TAIL}: ${l}`).join('\n');
  rows.push(
    await measure(`last ${TAIL} lines of a 100 MB file`, rounds(15), [
      {
        name: 'ours',
        run: () => callOurs('read', { filePath: 'big.log', offset: -TAIL }),
        check: ({ result }) =>
          result.output.startsWith(`${lastFromEnd}\n\n(End of file. Lines are numbered from the end`)
            ? ''
            : 'wrong lines',
      },
      {
        // deepagents has no tail: it is given the right 0-based offset (a model would first need the line count).
        name: 'deepagents',
        run: () => callDa('read_file', { file_path: '/big.log', offset: logLines - TAIL, limit: TAIL }),
        check: (out) =>
          out.trimEnd().endsWith(lastLines.join('\n')) && out.includes(`${lastLines[0]}\n`) ? '' : 'wrong lines',
      },
      {
        name: 'mcp',
        run: () => callMcp('read_text_file', { path: path.join(root, 'big.log'), tail: TAIL }),
        check: (out) => {
          const got = out.split('\n').filter((l) => l !== '');
          if (got.length !== TAIL) return `returns ${got.length} lines for tail=${TAIL}`;
          return got.join('\n') === lastLines.join('\n') ? '' : 'wrong lines';
        },
      },
    ]),
  );

  // 4b. The last 100 lines of a 7.6 MB log (under TAIL_COUNT_MAX_BYTES): ours counts the lines before
  // them for absolute numbers. A fresh read tool each round, so every call counts (none is cached).
  const midRounds = rounds(11);
  const freshReads = [];
  for (let r = 0; r <= midRounds; r++)
    freshReads.push((await registry.tools({ ids: ['read'], initCtx: { workspaceRoot: root } }))[0]);
  const midNumbered = midLast.map((l, i) => `${midLines - TAIL + 1 + i}: ${l}`).join('\n');
  rows.push(
    await measure(`last ${TAIL} lines of a 7.6 MB file, first call (lines counted)`, midRounds, [
      {
        name: 'ours',
        run: (r) => callOurs('read', { filePath: 'mid.log', offset: -TAIL }, { read: freshReads[r + 1] }),
        check: ({ result }) =>
          result.output.startsWith(`${midNumbered}\n\n(End of file - ${midLines} lines total)`) ? '' : 'wrong lines',
      },
      {
        name: 'deepagents',
        run: () => callDa('read_file', { file_path: '/mid.log', offset: midLines - TAIL, limit: TAIL }),
        check: (out) => (out.trimEnd().endsWith(midLast.join('\n')) ? '' : 'wrong lines'),
      },
      {
        name: 'mcp',
        run: () => callMcp('read_text_file', { path: path.join(root, 'mid.log'), tail: TAIL }),
        check: (out) => {
          const got = out.split('\n').filter((l) => l !== '');
          if (got.length !== TAIL) return `returns ${got.length} lines for tail=${TAIL}`;
          return got.join('\n') === midLast.join('\n') ? '' : 'wrong lines';
        },
      },
    ]),
  );

  // 5. Edit one line of a 10 MB file (each side has its own copy; the result is checked on disk).
  await callOurs('read', { filePath: 'ours.txt', limit: 1 }); // ours refuses to edit an unread file
  const expected = { ours: source, deepagents: source, mcp: source };
  const editCheck = (who, r) => () => {
    const from = `target_line = ${r + 1};`;
    expected[who] = expected[who].replace(`target_line = ${r + 1 - 1};`, from);
    return readFileSync(path.join(root, `${who}.txt`), 'utf8') === expected[who]
      ? ''
      : 'file content differs from the expected edit';
  };
  rows.push(
    await measure('edit one line of a 10 MB file', rounds(11), [
      {
        name: 'ours',
        run: (r) =>
          callOurs('edit', {
            filePath: 'ours.txt',
            oldString: `target_line = ${r + 1};`,
            newString: `target_line = ${r + 2};`,
          }),
        check: (_, r) => editCheck('ours', r + 1)(),
      },
      {
        name: 'deepagents',
        run: (r) =>
          callDa('edit_file', {
            file_path: '/deepagents.txt',
            old_string: `target_line = ${r + 1};`,
            new_string: `target_line = ${r + 2};`,
          }),
        check: (_, r) => editCheck('deepagents', r + 1)(),
      },
      {
        name: 'mcp',
        run: (r) =>
          callMcp('edit_file', {
            path: path.join(root, 'mcp.txt'),
            edits: [{ oldText: `target_line = ${r + 1};`, newText: `target_line = ${r + 2};` }],
          }),
        check: (_, r) => editCheck('mcp', r + 1)(),
      },
    ]),
  );

  // 6. On a backend: our tools and deepagents' own, both over the same deepagents backend and data.
  // FilesystemBackend (virtual mode) over the workspace above: ours through initCtx.backend.
  const fsBackend = new FilesystemBackend({ rootDir: root, virtualMode: true });
  const oursOnFs = Object.fromEntries(
    (
      await registry.tools({
        ids: ['read', 'edit', 'grep', 'glob'],
        initCtx: { backend: fsBackend, searchIgnored: true },
      })
    ).map((t) => [t.name, t]),
  );
  rows.push(
    await measure('FilesystemBackend: grep a literal in the tree (the backend greps, both sides)', rounds(15), [
      {
        name: 'ours',
        run: () => callOurs('grep', { pattern: NEEDLE, path: 'tree' }, oursOnFs),
        check: ({ result }) =>
          result.metadata.matches === needleMatches ? '' : `${result.metadata.matches} of ${needleMatches} matches`,
      },
      { name: 'deepagents', run: () => callDa('grep', { pattern: NEEDLE, path: '/tree' }), check: checkDaGrep },
    ]),
  );
  rows.push(
    await measure('FilesystemBackend: glob **/*.d.ts', rounds(15), [
      {
        name: 'ours',
        run: () => callOurs('glob', { pattern: '**/*.d.ts', path: 'tree' }, oursOnFs),
        check: ({ result }) => (result.metadata.count === tree.dts ? '' : `count ${result.metadata.count}`),
      },
      {
        name: 'deepagents',
        run: () => callDa('glob', { pattern: '**/*.d.ts', path: '/tree' }),
        check: (out) => checkGlobList(out.split('\n'), 'cut: '),
      },
    ]),
  );
  const firstMid = readFileSync(path.join(root, 'mid.log'), 'utf8').split('\n', 100);
  rows.push(
    await measure('FilesystemBackend: first 100 lines of a 7.6 MB file', rounds(21), [
      {
        name: 'ours',
        run: () => callOurs('read', { filePath: 'mid.log', limit: 100 }, oursOnFs),
        check: ({ result }) => (result.output.startsWith(`1: ${firstMid[0]}\n`) ? '' : 'wrong lines'),
      },
      {
        name: 'deepagents',
        run: () => callDa('read_file', { file_path: '/mid.log', offset: 0, limit: 100 }),
        check: (out) => (out.includes(firstMid[99]) ? '' : 'wrong lines'),
      },
    ]),
  );
  await callOurs('read', { filePath: 'ours.txt', limit: 1 }, oursOnFs);
  let fsEdit = 1000;
  let daEdit = 1000;
  writeFileSync(path.join(root, 'ours.txt'), source.replace('target_line = 0;', 'target_line = 1000;'));
  writeFileSync(path.join(root, 'deepagents.txt'), source.replace('target_line = 0;', 'target_line = 1000;'));
  await callOurs('read', { filePath: 'ours.txt', limit: 1 }, oursOnFs);
  rows.push(
    await measure('FilesystemBackend: edit one line of a 10 MB file', rounds(15), [
      {
        name: 'ours',
        run: () =>
          callOurs(
            'edit',
            { filePath: 'ours.txt', oldString: `target_line = ${fsEdit};`, newString: `target_line = ${++fsEdit};` },
            oursOnFs,
          ),
        check: () =>
          readFileSync(path.join(root, 'ours.txt'), 'utf8').includes(`target_line = ${fsEdit};`) ? '' : 'not edited',
      },
      {
        name: 'deepagents',
        run: () =>
          callDa('edit_file', {
            file_path: '/deepagents.txt',
            old_string: `target_line = ${daEdit};`,
            new_string: `target_line = ${++daEdit};`,
          }),
        check: () =>
          readFileSync(path.join(root, 'deepagents.txt'), 'utf8').includes(`target_line = ${daEdit};`)
            ? ''
            : 'not edited',
      },
    ]),
  );

  // StateBackend: files in LangGraph state (MemorySaver), each call one graph step through ToolNode,
  // on a thread of its own per side; 300 files of about 2 KB, one with the needle.
  const stateFiles = {};
  const now = new Date().toISOString();
  for (let i = 0; i < 300; i++) {
    const lines = Array.from({ length: 40 }, (_, k) => `const v${i}_${k} = ${k}; // line ${k} of file ${i}`);
    if (i === 150) lines[20] = `const hit = "${NEEDLE}";`;
    if (i === 7) lines[5] = 'let counter = 1;';
    stateFiles[`/state/f${i}.ts`] = {
      content: lines.join('\n') + '\n',
      mimeType: 'text/plain',
      created_at: now,
      modified_at: now,
    };
  }
  const GraphState = Annotation.Root({
    ...MessagesAnnotation.spec,
    files: Annotation({
      reducer: (cur, upd) => {
        const out = { ...(cur ?? {}) };
        for (const [k, v] of Object.entries(upd ?? {}))
          if (v === null) delete out[k];
          else out[k] = v;
        return out;
      },
      default: () => ({}),
    }),
  });
  const saver = new MemorySaver();
  const stateBackend = new StateBackend();
  const oursState = await registry.tools({
    ids: ['read', 'edit', 'grep', 'glob'],
    initCtx: { backend: stateBackend, searchIgnored: true },
  });
  // The same tools with `artifact: 'minimal'`: the ToolMessages carry no artifact where the text
  // says it all, so the thread's checkpoints hold what deepagents' messages hold (see the sizes printed below).
  const oursStateMinimal = await registry.tools({
    ids: ['read', 'edit', 'grep', 'glob'],
    initCtx: { backend: stateBackend, searchIgnored: true },
    artifact: 'minimal',
  });
  const daState = createFilesystemMiddleware({ backend: stateBackend }).tools.filter((t) =>
    ['read_file', 'edit_file', 'grep', 'glob'].includes(t.name),
  );
  const graphOf = (tools) =>
    new StateGraph(GraphState)
      .addNode('tools', new ToolNode(tools))
      .addEdge('__start__', 'tools')
      .compile({ checkpointer: saver });
  const graphs = { ours: graphOf(oursState), 'ours-minimal': graphOf(oursStateMinimal), deepagents: graphOf(daState) };
  for (const who of Object.keys(graphs))
    await graphs[who].updateState({ configurable: { thread_id: `bench-${who}` } }, { files: stateFiles }, 'tools');
  async function inGraph(who, name, args) {
    const id = `call_${++callId}`;
    const out = await graphs[who].invoke(
      { messages: [new AIMessage({ content: '', tool_calls: [{ id, name, args }] })] },
      { configurable: { thread_id: `bench-${who}` } },
    );
    const msg = out.messages.find((m) => ToolMessage.isInstance(m) && m.tool_call_id === id);
    return text(msg);
  }
  await inGraph('ours', 'read', { filePath: 'state/f7.ts' });
  await inGraph('ours-minimal', 'read', { filePath: 'state/f7.ts' });
  let oursN = 1;
  let leanN = 1;
  let daN = 1;
  rows.push(
    await measure('StateBackend: read a file (one graph step)', rounds(31), [
      {
        name: 'ours',
        run: () => inGraph('ours', 'read', { filePath: 'state/f3.ts' }),
        check: (o) => (o.includes('v3_39') ? '' : o),
      },
      {
        name: 'ours-minimal',
        run: () => inGraph('ours-minimal', 'read', { filePath: 'state/f3.ts' }),
        check: (o) => (o.includes('v3_39') ? '' : o),
      },
      {
        name: 'deepagents',
        run: () => inGraph('deepagents', 'read_file', { file_path: '/state/f3.ts' }),
        check: (o) => (o.includes('v3_39') ? '' : o),
      },
    ]),
  );
  rows.push(
    await measure('StateBackend: edit a line (one graph step)', rounds(31), [
      {
        name: 'ours',
        run: () =>
          inGraph('ours', 'edit', {
            filePath: 'state/f7.ts',
            oldString: `counter = ${oursN};`,
            newString: `counter = ${++oursN};`,
          }),
        check: (o) => (o.startsWith('Edited') ? '' : o),
      },
      {
        name: 'ours-minimal',
        run: () =>
          inGraph('ours-minimal', 'edit', {
            filePath: 'state/f7.ts',
            oldString: `counter = ${leanN};`,
            newString: `counter = ${++leanN};`,
          }),
        check: (o) => (o.startsWith('Edited') ? '' : o),
      },
      {
        name: 'deepagents',
        run: () =>
          inGraph('deepagents', 'edit_file', {
            file_path: '/state/f7.ts',
            old_string: `counter = ${daN};`,
            new_string: `counter = ${++daN};`,
          }),
        check: (o) => (o.includes('Successfully') ? '' : o),
      },
    ]),
  );
  rows.push(
    await measure('StateBackend: grep a literal in 300 files (one graph step)', rounds(31), [
      {
        name: 'ours',
        run: () => inGraph('ours', 'grep', { pattern: NEEDLE }),
        check: (o) => (o.includes('f150.ts') ? '' : o),
      },
      {
        name: 'ours-minimal',
        run: () => inGraph('ours-minimal', 'grep', { pattern: NEEDLE }),
        check: (o) => (o.includes('f150.ts') ? '' : o),
      },
      {
        name: 'deepagents',
        run: () => inGraph('deepagents', 'grep', { pattern: NEEDLE, path: '/' }),
        check: (o) => (o.includes('f150.ts') ? '' : o),
      },
    ]),
  );
  rows.push(
    await measure('StateBackend: glob **/*.ts in 300 files (one graph step)', rounds(31), [
      {
        name: 'ours',
        run: () => inGraph('ours', 'glob', { pattern: '**/*.ts' }),
        check: (o) => (o.includes('state/f') ? '' : o),
      },
      {
        name: 'ours-minimal',
        run: () => inGraph('ours-minimal', 'glob', { pattern: '**/*.ts' }),
        check: (o) => (o.includes('state/f') ? '' : o),
      },
      {
        name: 'deepagents',
        run: () => inGraph('deepagents', 'glob', { pattern: '**/*.ts', path: '/' }),
        check: (o) => (o.includes('/state/f') ? '' : o),
      },
    ]),
  );

  // What each StateBackend step pays for its thread's history: every step loads the last checkpoint
  // (MemorySaver: JSON.parse, then LangGraph's and LangChain core's revivers walk every value of every
  // message, awaiting each) and writes a new one. Printed after the rows so the gap has its parts:
  // the files map is the same on both threads, the messages are each side's own ToolMessages.
  if (!process.env.BENCH_ONLY || 'StateBackend'.includes(process.env.BENCH_ONLY)) {
    console.log('\nStateBackend threads after the rows: the last checkpoint each graph step loads (loads interleaved)');
    const threads = Object.keys(graphs).map((who) => {
      const checkpoints = saver.storage[`bench-${who}`][''];
      const [bytes] = checkpoints[Object.keys(checkpoints).sort().at(-1)];
      return { who, bytes, parsed: JSON.parse(new TextDecoder().decode(bytes)), loads: [] };
    });
    for (let i = 0; i < 21; i++)
      for (const t of i % 2 ? threads : [...threads].reverse()) {
        const start = performance.now();
        await saver.serde.loadsTyped('json', t.bytes);
        t.loads.push(performance.now() - start);
      }
    for (const { who, bytes, parsed, loads } of threads) {
      const { messages, files } = parsed.channel_values;
      const withArtifact = messages.filter((m) => m.id?.at(-1) === 'ToolMessage' && m.kwargs.artifact !== undefined);
      console.log(
        `  ${who.padEnd(12)} ${(bytes.length / 1024).toFixed(0)} KiB (messages ${(JSON.stringify(messages).length / 1024).toFixed(0)} KiB in ${messages.length}, ` +
          `${withArtifact.length} tool messages with an artifact; files ${(JSON.stringify(files).length / 1024).toFixed(0)} KiB), ` +
          `loaded in ${median(loads).toFixed(1)} ms`,
      );
    }
  }

  // ------------------------------------------------------------------------------------------------
  // Report
  // ------------------------------------------------------------------------------------------------

  // One verdict per row and peer: the ratio of the medians against TARGET, with the single rounds'
  // ratios (ours and the peer back to back) as quartiles, so a reader sees how stable it is.
  const TARGET = 1.0;
  const quartiles = (xs) => {
    const s = [...xs].sort((a, b) => a - b);
    return [0.25, 0.5, 0.75].map((q) => s[Math.min(s.length - 1, Math.floor(q * s.length))]);
  };
  console.log(`\ntargets: ratio = ours / peer <= ${TARGET.toFixed(2)} (median of ours / median of the peer)`);
  let missed = 0;
  for (const row of rows.filter(Boolean)) {
    for (const o of row.sides.filter((s) => s.name.startsWith('ours')))
      for (const p of row.sides.filter((s) => !s.name.startsWith('ours'))) {
        const ratio = o.ms / p.ms;
        const [q1, q2, q3] = quartiles(o.times.map((t, r) => t / p.times[r]));
        const ok = ratio <= TARGET;
        if (!ok) missed++;
        console.log(
          `  ${ok ? 'OK    ' : 'MISSED'} ${ratio.toFixed(2)}  ${o.name === 'ours' ? '' : `${o.name} `}vs ${p.name.padEnd(10)} ${row.label}  ` +
            `(rounds: median ${q2.toFixed(2)}, quartiles ${q1.toFixed(2)}-${q3.toFixed(2)}; CPU ${(o.cpuMs / p.cpuMs).toFixed(2)})`,
        );
      }
  }
  console.log(missed ? `${missed} ratio(s) above the target` : 'every ratio within the target');

  console.log(
    '\nratio = ours / peer: medians of the interleaved rounds (below 1 = ours is faster); in parentheses the lowest and\n' +
      'highest ratio of one round (ours and the peer ran back to back); first calls in brackets. CPU: medians of\n' +
      "this process's CPU time per call (ours and deepagents both run in it; the MCP server is another process)",
  );
  console.log('| operation | vs deepagents | vs MCP filesystem server | CPU vs deepagents |');
  console.log('|---|---|---|---|');
  for (const row of rows.filter(Boolean)) {
    const o = row.sides.find((s) => s.name === 'ours');
    const cell = (name) => {
      const p = row.sides.find((s) => s.name === name);
      if (!p) return '—';
      const wrong = p.problems.size ? ` (theirs: ${[...p.problems.keys()].join('; ')})` : '';
      const perRound = o.times.map((t, r) => t / p.times[r]);
      const spread = `${Math.min(...perRound).toFixed(2)}-${Math.max(...perRound).toFixed(2)}`;
      return `${(o.ms / p.ms).toFixed(2)} (${spread}) [${(o.first / p.first).toFixed(2)}]${wrong}`;
    };
    const da = row.sides.find((s) => s.name === 'deepagents');
    const cpuRatio = da ? (o.cpuMs / da.cpuMs).toFixed(2) : '—';
    console.log(`| ${row.label} | ${cell('deepagents')} | ${cell('mcp')} | ${cpuRatio} |`);
  }
} finally {
  await cleanup();
}
