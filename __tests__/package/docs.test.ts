/**
 * Docs that run as written: every fenced block of README.md and docs/**\/*.md is checked the way
 * a user would use it, against the packed package (conventions: docs/contributing.md).
 * - ts/js blocks: type-checked together by one `tsc --strict` in a project that has the tarball
 *   installed (imports resolve through `exports`), then run with node unless marked no-run.
 * - sh blocks: run in a copy of __tests__/fixtures/docs-workspace with the package's `toolbelt` on
 *   PATH; where the doc shows output (`$ cmd` then lines), the output is compared.
 * - json blocks: parsed.
 * - text blocks: prose (diagrams, sample output of tools).
 * A block that cannot run here carries `<!-- doctest: skip|no-run — reason -->` and is counted.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { execFile, spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ROOT } from '../support/dist.js';
import { allBlocks, exportedNames, outputMatches, shellSteps, where, type DocBlock } from '../support/doc-blocks.js';
import { makeUserProject, packPackage } from '../support/user-project.js';

const execFileP = promisify(execFile);
const FIXTURE = path.join(ROOT, '__tests__', 'fixtures', 'docs-workspace');
const RUN_TIMEOUT_MS = 60_000;

const blocks = allBlocks(ROOT);
let tmp: string;
let project: string;

/** One .ts file of the scratch project: a code block and the blocks that continue it. */
interface CodeFile {
  name: string;
  parts: { block: DocBlock; firstLine: number }[];
  run: boolean;
}

function codeFiles(): CodeFile[] {
  const files: CodeFile[] = [];
  const lastByDoc = new Map<string, CodeFile>();
  for (const b of blocks) {
    if (b.kind !== 'code' || b.marker?.mode === 'skip') continue;
    const prev = lastByDoc.get(b.doc);
    if (b.marker?.mode === 'continues' && prev) {
      prev.parts.push({ block: b, firstLine: 0 });
      continue;
    }
    const f: CodeFile = {
      name: `${b.doc.replace(/\.md$/, '').replace(/[^A-Za-z0-9]+/g, '_')}_L${b.line}`,
      parts: [{ block: b, firstLine: 0 }],
      run: b.marker?.mode !== 'no-run',
    };
    files.push(f);
    lastByDoc.set(b.doc, f);
  }
  return files;
}

/** A child process with a minimal environment: no API keys, a private HOME and TMPDIR. */
function runIn(
  cmd: string,
  args: string[],
  cwd: string,
): Promise<{ code: number | null; output: string; timedOut: boolean }> {
  const home = path.join(tmp, 'home');
  const env = {
    PATH: `${path.join(project, 'node_modules', '.bin')}${path.delimiter}${process.env.PATH ?? ''}`,
    HOME: home,
    TMPDIR: path.join(tmp, 'tmp'),
    LANG: 'C.UTF-8',
    NO_COLOR: '1',
  };
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (output += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (output += d));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, RUN_TIMEOUT_MS);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output, timedOut });
    });
  });
}

/** A fresh copy of the docs' example workspace. */
function workspace(): string {
  // Inside the project, so `npx toolbelt` finds the installed bin as it would in a user's project.
  const dir = mkdtempSync(path.join(project, 'ws-'));
  cpSync(FIXTURE, dir, { recursive: true });
  return dir;
}

/** Runs `tasks` two at a time (CI has two cores). */
async function pool<T>(tasks: (() => Promise<T>)[], width = 2): Promise<T[]> {
  const out: T[] = new Array<T>(tasks.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < tasks.length) {
        const i = next++;
        out[i] = await tasks[i]();
      }
    }),
  );
  return out;
}

/** Variables other programs read, which the docs mention by name. */
const FOREIGN_ENV = [
  'PATH',
  'HOME',
  'TMPDIR',
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
  'RIPGREP_CONFIG_PATH',
  // Read by the provider classes themselves (@langchain/openai, @langchain/anthropic).
  'OPENAI_BASE_URL',
  'ANTHROPIC_BASE_URL',
  'ANTHROPIC_API_URL',
];

/** Environment variable names: .env.example, `process.env.X` and provider key names in src, FOREIGN_ENV. */
function envVars(): Set<string> {
  const names = new Set(FOREIGN_ENV);
  for (const m of readFileSync(path.join(ROOT, '.env.example'), 'utf8').matchAll(/^([A-Z][A-Z0-9_]*)=/gm))
    names.add(m[1]);
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.ts'))
        for (const m of readFileSync(p, 'utf8').matchAll(/\benv\.([A-Z][A-Z0-9_]*)|'([A-Z][A-Z0-9_]*_API_KEY)'/g))
          names.add(m[1] ?? m[2]);
    }
  };
  walk(path.join(ROOT, 'src'));
  return names;
}

const names = exportedNames(ROOT, envVars());
/** Constants are exported from `agent-toolbelt/constants`, everything else from the root. */
const entryFor = (name: string) =>
  /^[A-Z][A-Z0-9]*(_[A-Z0-9]+)+$/.test(name) ? 'agent-toolbelt/constants' : 'agent-toolbelt';
const files = codeFiles();
const shells = blocks.filter((b) => b.kind === 'shell' && !b.marker);
const counts = {
  found: blocks.length,
  run: files.filter((f) => f.run).reduce((n, f) => n + f.parts.length, 0) + shells.length,
  typeChecked: files.reduce((n, f) => n + f.parts.length, 0),
  marked: blocks.filter((b) => b.marker && b.marker.mode !== 'continues').length,
};
let tscOutput = '';

beforeAll(async () => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'toolbelt-docs-'));
  mkdirSync(path.join(tmp, 'home'));
  mkdirSync(path.join(tmp, 'tmp'));
  const packed = await packPackage(tmp);
  // @langchain/openai: the provider the README's install line names.
  project = await makeUserProject(packed.tarball, [
    '@types/node',
    '@langchain/openai',
    // docs/telemetry.md sets up the OpenTelemetry SDK as an app would.
    '@opentelemetry/sdk-trace-base',
    '@opentelemetry/context-async-hooks',
  ]);
  mkdirSync(path.join(project, 'blocks'));
  for (const f of files) {
    let text = '';
    let line = 1;
    for (const p of f.parts) {
      p.firstLine = line;
      text += p.block.body;
      line += p.block.body.split('\n').length - 1;
    }
    writeFileSync(path.join(project, 'blocks', `${f.name}.ts`), `${text}export {};\n`);
  }
  // One import per name a doc presents as exported (line i+1 is names[i]); `import type` accepts values and types.
  writeFileSync(
    path.join(project, 'blocks', 'exported_names.ts'),
    names.map((n, i) => `import type { ${n.name} as _${i} } from '${entryFor(n.name)}';\n`).join('') + 'export {};\n',
  );
  writeFileSync(
    path.join(project, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        lib: ['ES2023', 'DOM'],
        types: ['node'],
        strict: true,
        skipLibCheck: true,
        outDir: 'out',
        rootDir: '.',
        noEmitOnError: false,
      },
      include: ['blocks'],
    }),
  );
  try {
    await execFileP(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', '.'], {
      cwd: project,
      maxBuffer: 16 * 1024 * 1024,
    });
  } catch (err) {
    tscOutput = String((err as { stdout?: string }).stdout ?? err);
  }
}, 240_000);

afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
  if (project) rmSync(project, { recursive: true, force: true });
  process.stdout.write(
    `docs test: ${counts.found} blocks found, ${counts.run} run, ${counts.typeChecked} type-checked, ${counts.marked} marked (skip/no-run)\n`,
  );
});

describe('docs: every fenced block', () => {
  it('has a known language and a well-formed doctest marker', () => {
    const problems = blocks.flatMap((b) => [
      ...(b.kind === 'unknown'
        ? [`${where(b)}: give the block a language (ts, sh, json or text), not "${b.lang}"`]
        : []),
      ...(b.markerError ? [`${where(b)}: ${b.markerError}`] : []),
      ...(b.marker?.mode === 'continues' && b.kind !== 'code' ? [`${where(b)}: only code blocks can continue`] : []),
    ]);
    expect(problems).toEqual([]);
  });

  it('ts/js blocks type-check with tsc --strict against the packed package', () => {
    const errors: string[] = [];
    for (const m of tscOutput.matchAll(/^blocks\/(\w+)\.ts\((\d+),(\d+)\): (error TS\d+: .*)$/gm)) {
      if (m[1] === 'exported_names') continue;
      const f = files.find((x) => x.name === m[1]);
      const line = Number(m[2]);
      const part = f && [...f.parts].reverse().find((p) => p.firstLine <= line);
      errors.push(part ? `${part.block.doc}:${part.block.line + 1 + line - part.firstLine}: ${m[4]}` : m[0]);
    }
    if (tscOutput && !/^blocks\//m.test(tscOutput)) errors.push(tscOutput); // tsc failed before checking
    expect(errors).toEqual([]);
  });

  it('ts/js blocks run to completion (exit code 0)', async () => {
    const runnable = files.filter((f) => f.run);
    const results = await pool(
      runnable.map((f) => async () => {
        const res = await runIn(process.execPath, [path.join(project, 'out', 'blocks', `${f.name}.js`)], workspace());
        return res.code === 0
          ? undefined
          : `${where(f.parts[0].block)}: ${res.timedOut ? 'timed out' : `exit ${res.code}`}\n${res.output.slice(-2000)}`;
      }),
    );
    expect(results.filter(Boolean)).toEqual([]);
  }, 240_000);

  it('sh blocks run, and show the output they really print', async () => {
    const results = await pool(
      shells.map((b) => async () => {
        const ws = workspace();
        const problems: string[] = [];
        for (const step of shellSteps(b.body)) {
          const res = await runIn('sh', ['-c', step.command], ws);
          if (step.expected !== undefined) {
            if (!outputMatches(step.expected, res.output))
              problems.push(
                `${where(b)}: \`${step.command}\` printed\n${res.output}\nbut the doc shows\n${step.expected}`,
              );
          } else if (res.code !== 0) {
            problems.push(`${where(b)}: \`${step.command}\` exited ${res.code}\n${res.output.slice(-2000)}`);
          }
        }
        return problems.join('\n');
      }),
    );
    expect(results.filter(Boolean)).toEqual([]);
  }, 240_000);

  it('every name a doc presents as exported is exported by the package', () => {
    expect(names.length).toBeGreaterThan(50);
    const missing = [...tscOutput.matchAll(/^blocks\/exported_names\.ts\((\d+),\d+\): error TS\d+: (.*)$/gm)].map(
      (m) => {
        const n = names[Number(m[1]) - 1];
        return `${n.doc}:${n.line}: \`${n.name}\` is not exported from ${entryFor(n.name)}`;
      },
    );
    expect(missing).toEqual([]);
  });

  it('json blocks parse', () => {
    const bad = blocks
      .filter((b) => b.kind === 'json' && b.marker?.mode !== 'skip')
      .flatMap((b) => {
        try {
          JSON.parse(b.body);
          return [];
        } catch (err) {
          return [`${where(b)}: ${(err as Error).message}`];
        }
      });
    expect(bad).toEqual([]);
  });
});
