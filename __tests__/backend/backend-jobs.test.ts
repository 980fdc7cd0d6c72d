/**
 * Background jobs over a backend's execute: deepagents' real LocalShellBackend runs the job; bash_output
 * says it is running (no partial output: execute answers once), then gives the output and exit code
 * capped as locally; bash_kill, the job's time limit and registry.dispose() end its whole process group
 * through a second execute; a stop that reaches the backend before the job does keeps it from starting.
 * Broken backends (execute throws, hangs, answers malformed) leave a job `failed` or `lost` with a
 * sentence. The job's helper symlink lives in the backend's TMPDIR (a temp dir here) and is gone after.
 */
import { describe, it, expect, beforeEach, afterEach } from '@jest/globals';
import { readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { LocalShellBackend } from 'deepagents';
import { createRegistry, registerBuiltinTools, toDeepAgentsBackend } from '../../src/index.js';
import { MAX_JOB_UNREAD_CHARS, MAX_RUNNING_JOBS, type JobMetadata } from '../../src/tools/bash/jobs.js';
import { BACKEND_JOB_DEFAULT_TIMEOUT_MS, BACKEND_JOB_STOP_WAIT_MS } from '../../src/tools/bash/backend-jobs.js';
import { tempDir, until } from '../support/helpers.js';

let root: { dir: string; cleanup: () => Promise<void> };
let tmp: { dir: string; cleanup: () => Promise<void> };
let registry: ReturnType<typeof createRegistry>;
let backend: LocalShellBackend;

beforeEach(async () => {
  root = await tempDir('backend-jobs-root-');
  tmp = await tempDir('backend-jobs-tmp-');
  // PATH as dash's default; TMPDIR: where the job's pid symlink goes (checked empty after each test).
  backend = await LocalShellBackend.create({ rootDir: root.dir, virtualMode: true, env: { TMPDIR: tmp.dir } });
  registry = registerBuiltinTools(createRegistry({ loopGuard: false }));
});

afterEach(async () => {
  await registry.dispose();
  expect(await readdir(tmp.dir)).toEqual([]);
  await root.cleanup();
  await tmp.cleanup();
});

const initCtx = () => ({ backend });

async function call(tool: string, args: Record<string, unknown>, ctx: object = initCtx()) {
  return registry.execute(tool, args, { sessionID: 's' }, ctx);
}

async function start(command: string, extra: Record<string, unknown> = {}, ctx: object = initCtx()) {
  const u = await call('bash', { command, description: 'job', background: true, ...extra }, ctx);
  expect(u.error).toBeUndefined();
  return u.result.metadata.jobId as string;
}

/** The pid the job wrote to `file` in the backend's root (its process group id: setsid made it a leader). */
async function readPid(file = 'job.pid'): Promise<number> {
  const at = path.join(root.dir, file);
  let text = '';
  const started = Date.now();
  while (!/^\d+\n$/.test(text)) {
    if (Date.now() - started > 10_000) throw new Error(`the job never wrote ${file}`);
    text = await readFile(at, 'utf8').catch(() => '');
    if (!/^\d+\n$/.test(text)) await new Promise((r) => setTimeout(r, 10));
  }
  return Number(text);
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

async function outputUntil(id: string, done: (m: JobMetadata) => boolean, ctx: object = initCtx()) {
  let last = await call('bash_output', { id }, ctx);
  const started = Date.now();
  while (!done(last.result.metadata as JobMetadata)) {
    if (Date.now() - started > 20_000) throw new Error(`job ${id} never reached the state: ${last.result.output}`);
    await new Promise((r) => setTimeout(r, 20));
    last = await call('bash_output', { id }, ctx);
  }
  return last;
}

describe('a background job on LocalShellBackend', () => {
  it('bash_output says it is running without partial output, then gives its output and exit code', async () => {
    const id = await start(
      'echo $$ > job.pid; echo first; while [ ! -e go ]; do sleep 0.05; done; echo second; exit 3',
    );
    await readPid();
    const running = await call('bash_output', { id });
    expect(running.result.output).toBe(
      `[job ${id}: running on the backend ${(running.result.metadata as JobMetadata).backend} for ${/for (\d+\.\d) s/.exec(running.result.output)![1]} s; its output arrives when it ends (the backend's execute answers once)]\n(no new output)\n[Still running: call bash_output again later, or bash_kill to stop it.]`,
    );
    expect(running.result.metadata).toMatchObject({ status: 'running', pid: null, exitCode: null });
    await call('write', { filePath: 'go', content: '' });
    const ended = await outputUntil(id, (m) => m.status !== 'running');
    expect(ended.result.metadata).toMatchObject({ status: 'exited', exitCode: 3 });
    expect(ended.result.output).toMatch(
      new RegExp(
        `^\\[job ${id}: exited with code 3 after \\d+\\.\\d s on the backend LocalShellBackend \\(local-[0-9a-f]+\\)\\]\\nfirst\\nsecond\\n\\nExit code: 3$`,
      ),
    );
    // Read once: the next read has nothing new.
    expect((await call('bash_output', { id })).result.output).toMatch(/\n\(no new output\)$/);
  });

  it('the wrapper runs any command text exactly as the foreground does: quotes, $, newlines, heredocs, an early exit', async () => {
    const command = [
      `printf '%s|' 'single '"'"'quoted'"'" "double \\"q\\" \\$HOME" \\$\\(not run\\)`,
      'x=$(echo sub); echo "$x"; echo `echo tick`',
      'cat <<EOF',
      "here 'doc' $x",
      'EOF',
      "case a in a) echo ') paren';; esac",
      'exit 7 # trailing comment',
    ].join('\n');
    const foreground = await call('bash', { command, description: 'fg' });
    const id = await start(command);
    const ended = await outputUntil(id, (m) => m.status !== 'running');
    expect(ended.result.metadata).toMatchObject({ status: 'exited', exitCode: 7 });
    const body = ended.result.output.slice(ended.result.output.indexOf('\n') + 1);
    expect(body).toBe(foreground.result.output.replace(/\n\n\[exit code 7\]$/, ''));
    expect(body).toContain(`single 'quoted'|double "q" $HOME|$(not|run)|`);
    expect(body).toContain("here 'doc' sub");
  });

  it('workdir applies to a background job as to the foreground', async () => {
    await call('write', { filePath: 'sub/f.txt', content: 'in sub\n' });
    const id = await start('cat f.txt; pwd', { workdir: 'sub' });
    const ended = await outputUntil(id, (m) => m.status !== 'running');
    expect(ended.result.output).toMatch(new RegExp(`\\nin sub\\n${path.join(root.dir, 'sub')}$`));
  });

  it('output past MAX_JOB_UNREAD_CHARS: the tail is shown, the dropped part named, the whole kept in the log file', async () => {
    const over = MAX_JOB_UNREAD_CHARS + 5;
    const id = await start(`head -c ${over} /dev/zero | tr '\\0' a; echo; echo end`);
    const ended = await outputUntil(id, (m) => m.status !== 'running');
    const m = ended.result.metadata as JobMetadata;
    expect(m).toMatchObject({ status: 'exited', exitCode: 0, truncated: true });
    // The job printed over + 5 characters ("\n", "end\n"); what is kept unread is exactly the cap.
    expect(m.outputChars).toBe(over + 5);
    expect(m.droppedChars).toBe(over + 5 - MAX_JOB_UNREAD_CHARS);
    expect(ended.result.output).toContain(
      `[${m.droppedChars} earlier characters were not read in time and were dropped here; the full output is in ${m.logPath} (read it with the read tool).]`,
    );
    expect(await readFile(m.logPath!, 'utf8')).toBe(`${'a'.repeat(over)}\nend\n`);
  });

  it('output at MAX_JOB_UNREAD_CHARS exactly: nothing is dropped', async () => {
    const id = await start(`head -c ${MAX_JOB_UNREAD_CHARS} /dev/zero | tr '\\0' b`);
    const ended = await outputUntil(id, (m) => m.status !== 'running');
    expect(ended.result.metadata).toMatchObject({
      droppedChars: 0,
      truncated: false,
      outputChars: MAX_JOB_UNREAD_CHARS,
    });
  });

  it('bash_kill ends the whole process group through execute and returns what it printed', async () => {
    const id = await start('echo $$ > job.pid; sleep 60 & echo up; sleep 60');
    const pgid = await readPid();
    expect(groupAlive(pgid)).toBe(true);
    const killed = await call('bash_kill', { id });
    expect(killed.error).toBeUndefined();
    expect(killed.result.metadata).toMatchObject({ status: 'killed', exitCode: 143 });
    expect(killed.result.output).toMatch(
      new RegExp(
        `^\\[job ${id}: stopped after \\d+\\.\\d s on the backend LocalShellBackend \\(local-[0-9a-f]+\\) \\(exit code 143\\)\\]\\nup\\n`,
      ),
    );
    // Both sleeps (the one in the background too) are gone: the group was signalled, not just the shell.
    await until(() => !groupAlive(pgid), 'the group to end');
    const again = await call('bash_kill', { id });
    expect(again.result.output).toContain('[It had already finished; nothing was killed.]');
  });

  it('a stop that reaches the backend before the job keeps the command from ever running', async () => {
    const real = backend.execute.bind(backend);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let calls = 0;
    // The job's execute is held back until the stop's execute has answered.
    backend.execute = async (command: string) => {
      calls++;
      if (calls === 1) {
        await held;
        return real(command);
      }
      const answer = await real(command);
      release();
      return answer;
    };
    const id = await start('touch ran.txt');
    const killed = await call('bash_kill', { id });
    expect(killed.result.metadata).toMatchObject({ status: 'killed', exitCode: 143 });
    expect(killed.result.output).toContain('[toolbelt: the job was stopped before it started]');
    await expect(readFile(path.join(root.dir, 'ran.txt'))).rejects.toThrow();
  });

  it('the time limit stops the job through execute and says so', async () => {
    const id = await start('echo $$ > job.pid; sleep 60', { timeout: 300 });
    const pgid = await readPid();
    const ended = await outputUntil(id, (m) => m.status !== 'running');
    expect(ended.result.metadata).toMatchObject({ status: 'killed', exitCode: 143 });
    expect(ended.result.output).toMatch(/\n\[Stopped: it passed its time limit of 300 ms\.\]$/);
    await until(() => !groupAlive(pgid), 'the group to end');
  });

  it('registry.dispose() stops running backend jobs', async () => {
    await start('echo $$ > job.pid; sleep 60');
    const pgid = await readPid();
    await registry.dispose();
    await until(() => !groupAlive(pgid), 'the group to end');
  });

  it('without a timeout a backend job gets BACKEND_JOB_DEFAULT_TIMEOUT_MS, and the start says so', async () => {
    const u = await call('bash', { command: 'true', description: 'x', background: true });
    expect(u.result.output).toMatch(
      new RegExp(
        `^Started background job job-[0-9a-f]{8} on the backend LocalShellBackend \\(local-[0-9a-f]+\\) in \\.: true\\n.* It is stopped if still running after ${BACKEND_JOB_DEFAULT_TIMEOUT_MS} ms\\.$`,
      ),
    );
    const given = await call('bash', { command: 'true', description: 'x', background: true, timeout: 1234 });
    expect(given.result.output).toMatch(/It is stopped if still running after 1234 ms\.$/);
  });

  it('a timeout past the bash maximum is refused before anything runs', async () => {
    const u = await call('bash', { command: 'touch ran.txt', description: 'x', background: true, timeout: 600_001 });
    expect(u.error).toMatch(/^timeout must be a whole number of milliseconds from 1 to 600000, got 600001/);
    const ok = await call('bash', { command: 'true', description: 'x', background: true, timeout: 600_000 });
    expect(ok.error).toBeUndefined();
  });
});

describe('a background job over our own workspace backend (toDeepAgentsBackend: execute runs bash -c)', () => {
  it('runs under bash, and bash_kill ends its process group', async () => {
    const ours = await toDeepAgentsBackend({ workspaceRoot: root.dir });
    try {
      const ctx = { backend: ours };
      const done = await start('echo "${BASH_VERSION:+bash}"; [[ 1 == 1 ]] && echo double-brackets', {}, ctx);
      const ended = await outputUntil(done, (m) => m.status !== 'running', ctx);
      expect(ended.result.metadata).toMatchObject({ status: 'exited', exitCode: 0 });
      expect(ended.result.output).toMatch(/\nbash\ndouble-brackets$/);

      const id = await start('echo $$ > job.pid; sleep 60', {}, ctx);
      const pgid = await readPid();
      const killed = await call('bash_kill', { id }, ctx);
      expect(killed.result.metadata).toMatchObject({ status: 'killed' });
      await until(() => !groupAlive(pgid), 'the group to end');
    } finally {
      await ours.close();
    }
  });
});

describe('a backend where the job cannot leave its record (TMPDIR missing)', () => {
  it(
    'the job still runs and answers; bash_kill finds no record, stops waiting and says it may still be running',
    async () => {
      const bare = await LocalShellBackend.create({
        rootDir: root.dir,
        virtualMode: true,
        env: { TMPDIR: path.join(tmp.dir, 'missing') },
      });
      const done = await start('echo ran', {}, { backend: bare });
      const ended = await outputUntil(done, (m) => m.status !== 'running', { backend: bare });
      expect(ended.result.metadata).toMatchObject({ status: 'exited', exitCode: 0 });
      expect(ended.result.output).toMatch(/\nran$/);

      const id = await start('echo $$ > job.pid; sleep 60', {}, { backend: bare });
      const pgid = await readPid();
      const killed = await call('bash_kill', { id }, { backend: bare });
      try {
        expect(killed.result.metadata).toMatchObject({ status: 'lost' });
        expect(killed.result.output).toMatch(
          /\n\[The backend LocalShellBackend \(local-[0-9a-f]+\) has no record of it to signal \(its shell may lack ln\/readlink, or run each command in a fresh machine\): the command may still be running on the backend, and its output will not be collected\. Check there, e\.g\. with ps through bash\.\]$/,
        );
        expect(groupAlive(pgid)).toBe(true);
      } finally {
        process.kill(-pgid, 'SIGKILL');
      }
    },
    BACKEND_JOB_STOP_WAIT_MS * 3,
  );
});

describe('broken backends', () => {
  it('execute throws: the job is failed, with the sentence naming the backend', async () => {
    backend.execute = () => {
      throw new Error('sandbox gone');
    };
    const id = await start('echo hi');
    const ended = await outputUntil(id, (m) => m.status !== 'running');
    expect(ended.result.metadata).toMatchObject({ status: 'failed', exitCode: null });
    expect(ended.result.output).toMatch(
      /\n\[The backend LocalShellBackend \(local-[0-9a-f]+\) failed at execute of the command: sandbox gone\. Nothing more was done; check the backend, or retry\. The command may still be running on the backend\.\]$/,
    );
  });

  it('execute answers malformed: the job is failed, the answer discarded', async () => {
    backend.execute = (() => ({ output: 42, exitCode: 'x' })) as never;
    const id = await start('echo hi');
    const ended = await outputUntil(id, (m) => m.status !== 'running');
    expect(ended.result.metadata).toMatchObject({ status: 'failed' });
    expect(ended.result.output).toMatch(
      /answered execute of the command with a malformed result \(its output is not text\)/,
    );
  });

  it(
    'execute hangs: bash_kill stops waiting after the stop wait and says the command may still be running',
    async () => {
      backend.execute = () => new Promise(() => {});
      const id = await start('sleep 1');
      const killed = await call('bash_kill', { id });
      expect(killed.result.metadata).toMatchObject({ status: 'lost' });
      expect(killed.result.output).toMatch(
        /\n\[The backend LocalShellBackend \(local-[0-9a-f]+\) could not be asked to stop it \(The backend LocalShellBackend \(local-[0-9a-f]+\) did not answer execute of the command before the call was stopped \(timeout or abort\)\. Retry later, or check the backend\): the command may still be running on the backend, and its output will not be collected\./,
      );
    },
    BACKEND_JOB_STOP_WAIT_MS * 3,
  );

  it(
    `MAX_RUNNING_JOBS (${MAX_RUNNING_JOBS}) backend jobs run at once; one more is refused; dispose gives up on hung ones`,
    async () => {
      backend.execute = () => new Promise(() => {});
      for (let i = 0; i < MAX_RUNNING_JOBS; i++) await start('sleep 1');
      const refused = await call('bash', { command: 'sleep 1', description: 'x', background: true });
      expect(refused.error).toMatch(new RegExp(`^${MAX_RUNNING_JOBS} background jobs are already running`));
      await registry.dispose();
    },
    BACKEND_JOB_STOP_WAIT_MS * 3,
  );
});
