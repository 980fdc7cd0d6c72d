import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  BashTool,
  DEFAULT_TIMEOUT_MS,
  MAX_OUTPUT_CHARS,
  MAX_TIMEOUT_MS,
  countNewlineBytes,
} from '../../../src/tools/bash/bash.js';
import { tempDir, makeCtx } from '../../support/helpers.js';
import { createRegistry, registerBuiltinTools } from '../../../src/index.js';

let dir: string;
let cleanup: () => Promise<void>;
let tool: Awaited<ReturnType<typeof BashTool.init>>;

beforeAll(async () => {
  ({ dir, cleanup } = await tempDir('toolbelt-bash-'));
  await mkdir(path.join(dir, 'sub'));
  await writeFile(path.join(dir, 'file.txt'), 'x');
  tool = await BashTool.init({ workspaceRoot: dir });
});
afterAll(async () => {
  await cleanup();
});

function run(args: Record<string, unknown>, ctx = makeCtx()) {
  return tool.execute(tool.parameters.parse({ description: 'test command', ...args }), ctx);
}

/** Live (non-zombie) processes in a process group, according to `ps`. */
function liveInGroup(pgid: number): string[] {
  const out = execFileSync('ps', ['-eo', 'pid=,pgid=,stat=,args='], { encoding: 'utf8' });
  return out
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .filter((f) => Number(f[1]) === pgid && !f[2]?.startsWith('Z'))
    .map((f) => f.join(' '));
}

/** Processes whose command line contains `needle`, according to `ps`. */
function liveMatching(needle: string): string[] {
  const out = execFileSync('ps', ['-eo', 'stat=,args='], { encoding: 'utf8' });
  return out.split('\n').filter((l) => l.includes(needle) && !l.trim().startsWith('Z'));
}

function shellPid(output: string): number {
  const m = /pid=(\d+)/.exec(output);
  if (!m) throw new Error(`no pid in ${output}`);
  return Number(m[1]);
}

describe('bash: running commands', () => {
  it('returns stdout and stderr, exit code 0 and untruncated metadata', async () => {
    const res = await run({ command: 'echo out; echo err >&2', description: 'Print two lines' });
    expect(res.output).toBe('out\nerr\n');
    expect(res.title).toBe('Print two lines');
    const m = res.metadata;
    expect(m.exitCode).toBe(0);
    expect(m.signal).toBeNull();
    expect(m.killed).toBeNull();
    expect(m.truncated).toBe(false);
    expect(m.outputPath).toBeUndefined();
    expect(m.danger).toBe('safe');
    expect(typeof m.durationMs).toBe('number');
  });

  it('treats a non-zero exit as a normal result with the code in title, output and metadata', async () => {
    const res = await run({ command: 'echo partial; exit 3', description: 'Fail on purpose' });
    expect(res.metadata.exitCode).toBe(3);
    expect(res.title).toBe('Fail on purpose (exit 3)');
    expect(res.output).toBe('partial\n\n[exit code 3]');
    expect(res.metadata.truncated).toBe(false);
  });

  it('reports a shell ended by a signal', async () => {
    const res = await run({ command: 'kill -TERM $$' });
    expect(res.metadata.signal).toBe('SIGTERM');
    expect(res.metadata.exitCode).toBeNull();
    expect(res.title).toMatch(/SIGTERM/);
    expect(res.output).toMatch(/ended by signal SIGTERM/);
  });

  it('says "(no output)" for a silent command', async () => {
    expect((await run({ command: 'true' })).output).toBe('(no output)');
  });

  it('runs under bash with a non-interactive environment and stdin closed', async () => {
    const res = await run({
      command:
        'echo "$BASH_VERSION" | cut -c1; echo $GIT_EDITOR $GIT_TERMINAL_PROMPT $PAGER $NO_COLOR; read x; echo "read=[$x] rc=$?"; cat; echo after-cat',
    });
    const lines = res.output.trim().split('\n');
    expect(lines[0]).toMatch(/^\d$/);
    expect(lines[1]).toBe('true 0 cat 1');
    expect(lines[2]).toBe('read=[] rc=1');
    expect(lines[3]).toBe('after-cat');
  });

  it('runs in its own process group', async () => {
    const res = await run({ command: 'echo pid=$$ pgid=$(ps -o pgid= -p $$ | tr -d " ")' });
    const m = /pid=(\d+) pgid=(\d+)/.exec(res.output)!;
    expect(m[1]).toBe(m[2]);
    expect(Number(m[2])).not.toBe(process.pid);
  });

  it('keeps multi-byte characters intact across pipe chunks', async () => {
    const res = await run({ command: "for i in $(seq 1 2000); do printf 'éü€'; done" });
    expect(res.output).toBe('éü€'.repeat(2000));
  });

  it('classifies the command and exposes the danger level in metadata', async () => {
    const res = await run({ command: 'mkdir -p made && rm -rf made', description: 'Make and remove a dir' });
    expect(res.metadata.danger).toBe('dangerous');
    expect(res.metadata.dangerReasons.join(' ')).toMatch(/rm -r/);
    expect((await run({ command: 'ls' })).metadata.danger).toBe('safe');
  });
});

describe('bash: workdir', () => {
  it('runs in a workdir inside the workspace (relative or absolute)', async () => {
    expect((await run({ command: 'pwd', workdir: 'sub' })).output.trim()).toBe(path.join(dir, 'sub'));
    const abs = await run({ command: 'pwd', workdir: path.join(dir, 'sub') });
    expect(abs.output.trim()).toBe(path.join(dir, 'sub'));
    expect(abs.metadata.workdir).toBe('sub');
    expect((await run({ command: 'pwd' })).output.trim()).toBe(dir);
  });

  it('refuses a workdir outside the workspace', async () => {
    await expect(run({ command: 'pwd', workdir: '/' })).rejects.toThrow(/outside the workspace/);
    await expect(run({ command: 'pwd', workdir: '..' })).rejects.toThrow(/outside the workspace/);
    await expect(run({ command: 'pwd', workdir: `${dir}-evil` })).rejects.toThrow(/outside the workspace/);
  });

  it('refuses a missing workdir or a file, saying what to do', async () => {
    await expect(run({ command: 'pwd', workdir: 'nope' })).rejects.toThrow(/does not exist.*mkdir -p/);
    await expect(run({ command: 'pwd', workdir: 'file.txt' })).rejects.toThrow(/is a file, not a directory/);
  });
});

describe('bash: timeout parameter', () => {
  it('defaults to 120 s and accepts the 600 s maximum exactly', async () => {
    expect(DEFAULT_TIMEOUT_MS).toBe(120_000);
    expect(MAX_TIMEOUT_MS).toBe(600_000);
    const res = await run({ command: 'echo ok', timeout: MAX_TIMEOUT_MS });
    expect(res.output).toBe('ok\n');
  });

  it.each([0, -5, 1.5, MAX_TIMEOUT_MS + 1])(
    'rejects timeout=%p with a clear error instead of clamping',
    async (timeout) => {
      await expect(run({ command: 'echo never', timeout })).rejects.toThrow(
        /Invalid timeout .*whole number of milliseconds from 1 to 600000/,
      );
    },
  );

  it('checks the timeout itself too, for callers that skip the schema', async () => {
    await expect(
      tool.execute({ command: 'echo never', description: 'x', timeout: Number.NaN }, makeCtx()),
    ).rejects.toThrow(/Invalid timeout/);
  });

  it('rejects an empty command', async () => {
    await expect(run({ command: '   ' })).rejects.toThrow(/command is empty/);
  });
});

describe('bash: killing', () => {
  it('timeout kills the whole tree: no process of the group survives', async () => {
    const res = await run({ command: 'echo pid=$$; sleep 97.31 & sleep 97.31', timeout: 600 });
    const m = res.metadata;
    expect(m.killed).toBe('timeout');
    expect(res.title).toBe('test command (timed out after 600 ms)');
    expect(res.output).toMatch(/^pid=\d+\n\n\[Command killed: timed out after 600 ms/);
    expect(liveInGroup(shellPid(res.output))).toEqual([]);
    expect(liveMatching('sleep 97.31')).toEqual([]);
  });

  it('escalates to SIGKILL for a tree that ignores SIGTERM', async () => {
    // SIG_IGN is inherited across exec, so both sleeps ignore SIGTERM too.
    const res = await run({ command: "trap '' TERM; echo pid=$$; sleep 96.52 & sleep 96.52", timeout: 500 });
    expect(res.metadata.killed).toBe('timeout');
    expect(liveInGroup(shellPid(res.output))).toEqual([]);
    expect(liveMatching('sleep 96.52')).toEqual([]);
  });

  it('abort kills the tree after output has streamed, and says so', async () => {
    const ctx = makeCtx();
    const events: string[] = [];
    const origMetadata = ctx.metadata.bind(ctx);
    ctx.metadata = (u) => {
      origMetadata(u);
      const out = textField(u.metadata?.output);
      if (out.includes('started') && !events.includes('saw-started')) {
        events.push('saw-started');
        events.push('abort');
        ctx.abortNow();
      }
    };
    const res = await run({ command: 'echo pid=$$ started; sleep 95.7 & sleep 95.7' }, ctx);
    events.push('result');
    expect(events).toEqual(['saw-started', 'abort', 'result']);
    expect(res.metadata.killed).toBe('aborted');
    expect(res.title).toBe('test command (aborted)');
    expect(res.output).toMatch(/\[Command killed: the call was aborted/);
    expect(liveInGroup(shellPid(res.output))).toEqual([]);
    expect(liveMatching('sleep 95.7')).toEqual([]);
  });

  it('an abort through the pipeline returns the output printed so far with the abort notice, after the group is gone', async () => {
    const r = registerBuiltinTools(createRegistry(), ['bash']);
    const controller = new AbortController();
    const res = await r.execute(
      'bash',
      { command: "trap '' TERM; echo pid=$$ started; echo second line; sleep 93.4 & sleep 93.4", description: 'wait' },
      {},
      { workspaceRoot: dir },
      {
        signal: controller.signal,
        onToolResult: (u) => {
          if (u.status === 'running' && textField(u.result.metadata.output).includes('second line')) controller.abort();
        },
      },
    );
    expect(res.status).toBe('error');
    expect(res.error).toBe('Tool "bash" was aborted before it finished.');
    expect(res.result.output).toMatch(/^pid=\d+ started\nsecond line\n/);
    expect(res.result.output).toMatch(/\[Command killed: the call was aborted/);
    expect(res.result.output).toMatch(/Tool "bash" was aborted before it finished\.$/);
    expect(res.result.metadata.killed).toBe('aborted');
    // The answer comes once the tool stopped: the group (which ignored SIGTERM) is already gone.
    expect(liveInGroup(shellPid(res.result.output))).toEqual([]);
    expect(liveMatching('sleep 93.4')).toEqual([]);
  });

  it('does not start a command when the call is already aborted', async () => {
    const ctx = makeCtx();
    ctx.abortNow();
    const marker = path.join(dir, 'should-not-exist');
    await expect(run({ command: `touch ${marker}` }, ctx)).rejects.toThrow(/aborted before it started/);
    await expect(stat(marker)).rejects.toThrow();
  });

  it('returns when the shell exits even if a background child holds stdout open', async () => {
    const res = await run({ command: 'echo pid=$$; sleep 94.3 & echo done' });
    try {
      expect(res.output).toMatch(/^pid=\d+\ndone\n/);
      expect(res.metadata.exitCode).toBe(0);
      expect(res.metadata.backgroundOutputDetached).toBe(true);
      expect(res.output).toMatch(/background process still held its output/);
    } finally {
      // The background child is the user's on a normal exit; clean up ours.
      try {
        process.kill(-shellPid(res.output), 'SIGKILL');
      } catch {
        /* gone */
      }
    }
  }, 10_000);

  it('a background child with its output redirected is not reported as holding the pipes', async () => {
    const res = await run({ command: 'echo pid=$$; sleep 93.1 > /dev/null 2>&1 & echo done' });
    try {
      expect(res.metadata.backgroundOutputDetached).toBe(false);
    } finally {
      try {
        process.kill(-shellPid(res.output), 'SIGKILL');
      } catch {
        /* gone */
      }
    }
  });
});

describe('bash: output', () => {
  it('streams output as throttled progress while the command runs', async () => {
    const ctx = makeCtx();
    const res = await run(
      { command: 'echo first; sleep 1.5; for i in $(seq 1 300); do echo line$i; sleep 0.002; done' },
      ctx,
    );
    const outputs = ctx.updates.map((u) => textField(u.metadata?.output));
    // Some report showed "first" before the loop's output existed: it streamed, not buffered to the end.
    expect(outputs).toContainEqual(expect.stringMatching(/^(?![\s\S]*line1)[\s\S]*first/)); // "first", no "line1"
    expect(outputs).toContainEqual(expect.stringContaining('line1\n'));
    // ~300 separate writes, yet only a handful of reports.
    expect(ctx.updates.length).toBeLessThan(100);
    expect(res.output.split('\n')).toHaveLength(302);
  });

  it('keeps output of exactly MAX_OUTPUT_CHARS whole', async () => {
    const res = await run({
      command: `printf HEAD; head -c ${MAX_OUTPUT_CHARS - 8} /dev/zero | tr '\\0' a; printf TAIL`,
    });
    expect(res.output).toHaveLength(MAX_OUTPUT_CHARS);
    expect(res.metadata.truncated).toBe(false);
    expect(res.metadata.outputPath).toBeUndefined();
  });

  it('one character more keeps head and tail with a marker and saves the full output to a file', async () => {
    const res = await run({
      command: `printf 'HEAD\\n'; head -c ${MAX_OUTPUT_CHARS - 9} /dev/zero | tr '\\0' a; printf '\\nTAIL'`,
    });
    const m = res.metadata;
    try {
      expect(m.truncated).toBe(true);
      expect(m.outputChars).toBe(MAX_OUTPUT_CHARS + 1);
      expect(res.output.startsWith('HEAD\n')).toBe(true);
      expect(res.output).toMatch(/TAIL$/);
      expect(res.output).toMatch(/characters omitted/);
      expect(res.output).toContain(`saved at ${m.outputPath}`);
      const full = await readFile(m.outputPath!, 'utf8');
      expect(full).toHaveLength(MAX_OUTPUT_CHARS + 1);
      expect(full.startsWith('HEAD\naaa')).toBe(true);
    } finally {
      if (m.outputPath) await rm(m.outputPath, { force: true });
    }
  });

  it('saves multi-byte output to the file byte for byte, across the spill boundary', async () => {
    const res = await run({ command: "for i in $(seq 1 40000); do printf 'é€'; done" });
    const m = res.metadata;
    try {
      expect(m.truncated).toBe(true);
      expect(m.outputChars).toBe(80_000);
      expect(await readFile(m.outputPath!, 'utf8')).toBe('é€'.repeat(40_000));
      expect(res.output).not.toContain('\uFFFD');
    } finally {
      if (m.outputPath) await rm(m.outputPath, { force: true });
    }
  });

  it('counts newlines exactly at every alignment (the word-at-a-time counter)', () => {
    const bytes = Buffer.alloc(1031);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 7919) % 5 === 0 ? 10 : (i * 31) % 256;
    for (let off = 0; off < 8; off++) {
      for (const len of [0, 1, 3, 4, 5, 17, 1000]) {
        const slice = bytes.subarray(off, off + len);
        const naive = [...slice].filter((b) => b === 10).length;
        expect(countNewlineBytes(slice)).toBe(naive);
      }
    }
    expect(countNewlineBytes(Buffer.from('\n\n\n\n\n\n\n\n'))).toBe(8);
    expect(countNewlineBytes(Buffer.from([0x0b, 0x8a, 0x0a, 0xff, 0x00]))).toBe(1);
  });

  it('keeps memory bounded under a flood and saves every byte to the file', async () => {
    const total = 30_000_000;
    const res = await run({ command: `yes | head -c ${total}; echo; echo LAST-LINE` });
    const m = res.metadata;
    try {
      expect(m.truncated).toBe(true);
      expect(m.outputChars).toBe(total + 11);
      // Held in memory: the head, the tail ring and at most a pipe chunk or so, never the flood.
      expect(m.maxBufferedChars).toBeLessThan(3 * MAX_OUTPUT_CHARS + 256 * 1024);
      expect(res.output.length).toBeLessThan(MAX_OUTPUT_CHARS + 1_000);
      expect(res.output.startsWith('y\ny\n')).toBe(true);
      expect(res.output).toMatch(/LAST-LINE\n$/);
      expect(res.output).toMatch(/tail below starts at line \d+/);
      expect((await stat(m.outputPath!)).size).toBe(total + 11);
    } finally {
      if (m.outputPath) await rm(m.outputPath, { force: true });
    }
  });

  it('a timed-out flood is still bounded and its output file complete up to the kill', async () => {
    // Twice MAX_OUTPUT_CHARS before the endless loop: cut however slowly a loaded machine runs it.
    const res = await run({
      command: `echo pid=$$; head -c ${2 * MAX_OUTPUT_CHARS} /dev/zero | tr '\\0' f; echo; while :; do echo flood-line-with-some-text; done`,
      timeout: 700,
    });
    const m = res.metadata;
    try {
      expect(m.killed).toBe('timeout');
      expect(liveInGroup(shellPid(res.output))).toEqual([]);
      expect(m.truncated).toBe(true);
      expect(m.maxBufferedChars).toBeLessThan(3 * MAX_OUTPUT_CHARS + 256 * 1024);
      expect((await stat(m.outputPath!)).size).toBe(m.outputChars);
    } finally {
      if (m.outputPath) await rm(m.outputPath, { force: true });
    }
  });
});

/** A progress field that should be text (metadata values are `unknown`). */
function textField(v: unknown): string {
  return typeof v === 'string' ? v : '';
}
