/**
 * Ignore files are read only when they are regular files inside the sandbox, and only up to a cap:
 * a FIFO `.gitignore` must not hang list/glob/grep (nor the thread pool other calls need), a
 * symlinked one (to /dev/zero, outside the workspace, anywhere: git does not follow them either) is not read.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { mkdir, symlink, writeFile, readFile } from 'node:fs/promises';
import { openSync, closeSync, constants as fsConstants } from 'node:fs';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { ListTool } from '../../../src/tools/files/list.js';
import { GlobTool } from '../../../src/tools/files/glob.js';
import { GrepTool } from '../../../src/tools/grep/grep.js';
import { MAX_IGNORE_FILE_BYTES } from '../../../src/tools/files/search-common.js';
import { tempDir, makeCtx } from '../../support/helpers.js';

let base: { dir: string; cleanup: () => Promise<void> };
let ws: string;
const fifos: string[] = [];

beforeAll(async () => {
  base = await tempDir('ignore-files-');
  ws = path.join(base.dir, 'ws');
  const out = path.join(base.dir, 'outside');
  await mkdir(out);
  await writeFile(path.join(out, 'rules'), '*.txt\n');
  // More FIFO ignore files than libuv has threads (4): one blocked read each would starve the pool.
  for (let i = 0; i < 6; i++) {
    const d = path.join(ws, `fifo${i}`);
    await mkdir(d, { recursive: true });
    await writeFile(path.join(d, 'kept.txt'), 'needle\n');
    const fifo = path.join(d, '.gitignore');
    execFileSync('mkfifo', [fifo]);
    fifos.push(fifo);
  }
  await mkdir(path.join(ws, 'zero'));
  await writeFile(path.join(ws, 'zero', 'kept.txt'), 'needle\n');
  await symlink('/dev/zero', path.join(ws, 'zero', '.ignore'));
  await mkdir(path.join(ws, 'outlink'));
  await writeFile(path.join(ws, 'outlink', 'kept.txt'), 'needle\n');
  await symlink(path.join(out, 'rules'), path.join(ws, 'outlink', '.gitignore'));
  // Even a link to rules inside the workspace is not followed (as git).
  await mkdir(path.join(ws, 'inlink'));
  await writeFile(path.join(ws, 'inlink', 'dropped.log'), 'needle\n');
  await writeFile(path.join(ws, 'inlink', 'kept.txt'), 'needle\n');
  await writeFile(path.join(ws, 'rules-inside'), '*.log\n');
  await symlink(path.join(ws, 'rules-inside'), path.join(ws, 'inlink', '.gitignore'));
  // Over the cap: rules after the first MAX_IGNORE_FILE_BYTES are not used.
  await mkdir(path.join(ws, 'huge'));
  await writeFile(path.join(ws, 'huge', 'early.md'), 'needle\n');
  await writeFile(path.join(ws, 'huge', 'late.txt'), 'needle\n');
  const filler = '# filler line to grow the file past the cap\n';
  await writeFile(
    path.join(ws, 'huge', '.gitignore'),
    '*.md\n' + filler.repeat(Math.ceil(MAX_IGNORE_FILE_BYTES / filler.length)) + '*.txt\n',
  );
});

afterAll(async () => {
  // Should a regression leave a reader blocked on a FIFO, give it EOF so the process can exit.
  for (const f of fifos) {
    try {
      closeSync(openSync(f, fsConstants.O_WRONLY | fsConstants.O_NONBLOCK));
    } catch {
      // no reader waiting: nothing to release
    }
  }
  await base.cleanup();
});

describe('hostile ignore files', () => {
  it('list, glob and grep finish, skip FIFO / device / outside ignore files, and other I/O keeps flowing', async () => {
    const init = { workspaceRoot: ws };
    const [list, glob, grep] = await Promise.all([
      ListTool.init(init),
      GlobTool.init(init),
      GrepTool.init({ ...init, grepBackend: 'js' }),
    ]);
    const results = await Promise.all([
      list.execute(list.parameters.parse({}), makeCtx()),
      glob.execute(glob.parameters.parse({ pattern: '**/*' }), makeCtx()),
      grep.execute(grep.parameters.parse({ pattern: 'needle' }), makeCtx()),
      readFile(path.join(ws, 'zero', 'kept.txt'), 'utf8').then((t) => ({ output: t })),
    ]);
    const [listed, globbed, grepped, plainRead] = results.map((r) => r.output);
    expect(plainRead).toBe('needle\n');
    for (const out of [globbed, grepped]) {
      for (let i = 0; i < 6; i++) expect(out).toContain(`fifo${i}/kept.txt`);
      expect(out).toContain('zero/kept.txt');
      expect(out).toContain('outlink/kept.txt'); // the outside "*.txt" rules were not applied
      expect(out).toContain('inlink/kept.txt');
      expect(out).toContain('inlink/dropped.log');
      expect(out).toContain('huge/late.txt'); // past the cap
      expect(out).not.toContain('huge/early.md'); // within the cap
    }
    expect(listed).toContain('kept.txt');
    expect(listed).toContain('dropped.log');
  });
});
