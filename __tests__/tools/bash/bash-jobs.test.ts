import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { execFile, spawn } from 'node:child_process';
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { createAgent } from 'langchain';
import { AIMessage, HumanMessage, ToolMessage } from '@langchain/core/messages';
import { fakeModel } from '@langchain/core/testing';
import type { StructuredToolInterface } from '@langchain/core/tools';
import { createRegistry, registerBuiltinTools } from '../../../src/index.js';
import { MAX_JOB_UNREAD_CHARS, MAX_RUNNING_JOBS, type JobMetadata } from '../../../src/tools/bash/jobs.js';
import { groupAlive } from '../../../src/tools/bash/process-group.js';
import { tempDir } from '../../support/helpers.js';
import { callTool } from '../../support/tool-call.js';
import { ensureDist, ROOT } from '../../support/dist.js';

let dir: string;
let cleanup: () => Promise<void>;
beforeAll(async () => {
  ({ dir, cleanup } = await tempDir('bash-jobs-'));
});
afterAll(() => cleanup());

const JOB_TOOLS = ['bash', 'bash_output', 'bash_kill'];

async function setup() {
  const registry = registerBuiltinTools(createRegistry());
  const tools = await registry.tools({ ids: JOB_TOOLS, initCtx: { workspaceRoot: dir } });
  return { registry, tools };
}

/** A FIFO the job blocks on until the test writes to it: the job's progress is driven, not timed. */
async function fifo(name: string): Promise<string> {
  const p = path.join(dir, name);
  await promisify(execFile)('mkfifo', [p]);
  return p;
}

/** Calls bash_output until `done` says the accumulated output is what we wait for. */
async function readUntil(tools: StructuredToolInterface[], id: string, done: (all: string, m: JobMetadata) => boolean) {
  let all = '';
  for (;;) {
    const res = await callTool(tools, 'bash_output', { id });
    all += res.content + '\n';
    if (done(all, res.result.metadata as JobMetadata)) return { all, last: res };
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function start(tools: StructuredToolInterface[], command: string): Promise<{ id: string; pid: number }> {
  const res = await callTool(tools, 'bash', { command, description: 'background job', background: true });
  expect(res.status).toBe('success');
  const id = String(res.result.metadata.jobId);
  const pid = Number(/\(pid (\d+)\)/.exec(String(res.content))![1]);
  return { id, pid };
}

describe('background bash jobs', () => {
  it('an agent starts a job that returns at once, reads only new output, and sees the exit status', async () => {
    const { registry, tools } = await setup();
    const gate = await fifo('gate1');
    const model = fakeModel()
      .respondWithTools([
        {
          name: 'bash',
          args: { command: `echo first; cat ${gate}; echo done; exit 3`, description: 'gated job', background: true },
          id: 'b1',
        },
      ])
      .respond(new AIMessage('started'));
    const out = await createAgent({ model, tools }).invoke({ messages: [new HumanMessage('start it')] });
    const started = out.messages.find((m): m is ToolMessage => ToolMessage.isInstance(m))!;
    // The job is still blocked on the FIFO: the call returned without waiting for it.
    const id = /Started background job (job-[0-9a-f]+)/.exec(String(started.content))![1];
    expect(started.content).toContain(`bash_output {"id": "${id}"}`);

    const first = await readUntil(tools, id, (all) => all.includes('first'));
    expect(first.last.result.metadata).toMatchObject({ status: 'running', exitCode: null });
    expect(first.last.content).toMatch(/\[Still running: call bash_output again later/);
    await writeFile(gate, 'from the test\n');
    const rest = await readUntil(tools, id, (_all, m) => m.status === 'exited');
    expect(rest.all).toMatch(/from the test\n[^]*done\n/);
    expect(rest.all).not.toContain('first');
    expect(rest.last.content).toMatch(new RegExp(`^\\[job ${id}: exited with code 3 after \\d+\\.\\d s\\]`));
    expect((await callTool(tools, 'bash_output', { id })).content).toMatch(/\n\(no new output\)$/);
    await registry.dispose();
  });

  it('bash_kill ends the whole process group, children included', async () => {
    const { registry, tools } = await setup();
    const { id, pid } = await start(tools, 'sleep 1000 & sleep 1000 & echo up; wait');
    await readUntil(tools, id, (all) => all.includes('up'));
    expect(groupAlive(pid)).toBe(true);
    const killed = await callTool(tools, 'bash_kill', { id });
    expect(killed.content).toMatch(new RegExp(`^\\[job ${id}: killed after`));
    expect(groupAlive(pid)).toBe(false);
    const again = await callTool(tools, 'bash_kill', { id });
    expect(again.content).toContain('[It had already finished; nothing was killed.]');
    await registry.dispose();
  });

  it('registry.dispose() kills every job, including a daemon left behind by a job that exited', async () => {
    const { registry, tools } = await setup();
    const a = await start(tools, 'echo a; sleep 1000');
    const b = await start(tools, '(sleep 1000 &); echo b');
    await readUntil(tools, a.id, (all) => all.includes('a'));
    await readUntil(tools, b.id, (_all, m) => m.status === 'exited');
    expect(groupAlive(a.pid)).toBe(true);
    expect(groupAlive(b.pid)).toBe(true); // the daemon keeps b's group alive
    await registry.dispose();
    expect(groupAlive(a.pid)).toBe(false);
    expect(groupAlive(b.pid)).toBe(false);
  });

  it('jobs belong to their session: another session cannot read or kill them', async () => {
    const { registry, tools } = await setup();
    const other = await registry.tools({ ids: JOB_TOOLS, initCtx: { workspaceRoot: dir } });
    const { id } = await start(tools, 'sleep 1000');
    const res = await callTool(other, 'bash_kill', { id });
    expect(res.status).toBe('error');
    expect(res.content).toBe(`No background job "${id}" in this session. Start one with bash and background: true.`);
    const unknown = await callTool(tools, 'bash_output', { id: 'job-nope' });
    expect(unknown.content).toBe(`No background job "job-nope" in this session. This session's jobs: ${id} (running).`);
    await registry.dispose();
  });

  it(`runs at most MAX_RUNNING_JOBS (${MAX_RUNNING_JOBS}) jobs at once`, async () => {
    const { registry, tools } = await setup();
    const ids: string[] = [];
    for (let i = 0; i < MAX_RUNNING_JOBS; i++) ids.push((await start(tools, `sleep 100${i}`)).id); // distinct: the loop guard stops identical calls
    const refused = await callTool(tools, 'bash', { command: 'true', description: 'one more', background: true });
    expect(refused.status).toBe('error');
    expect(refused.content).toBe(
      `${MAX_RUNNING_JOBS} background jobs are already running (${ids.join(', ')}), the most one registry runs. Wait for one to finish (bash_output) or stop one with bash_kill, then start this one.`,
    );
    await callTool(tools, 'bash_kill', { id: ids[0] });
    expect((await start(tools, 'true')).id).toMatch(/^job-/);
    await registry.dispose();
  });

  it(`keeps at most MAX_JOB_UNREAD_CHARS (${MAX_JOB_UNREAD_CHARS}) unread characters and points to the full log`, async () => {
    const outputDir = path.join(dir, 'outputs');
    const registry = registerBuiltinTools(createRegistry({ truncate: { outputDir } }));
    const tools = await registry.tools({ ids: [...JOB_TOOLS, 'read'], initCtx: { workspaceRoot: dir } });
    const total = MAX_JOB_UNREAD_CHARS + 1000;
    const { id } = await start(tools, `head -c ${total} /dev/zero | tr '\\0' x`);
    // Read only once the job's log holds everything: the log is written as output is taken in, so
    // the unread buffer has had to hold all of it (waiting on the child alone races the pipe).
    const log = path.join(outputDir, await waitFor(() => logOf(outputDir, id)));
    await waitFor(async () => ((await stat(log)).size === total ? true : undefined));
    const res = await readUntil(tools, id, (_all, m) => m.status === 'exited');
    const meta = res.last.result.metadata as JobMetadata;
    expect(meta.logPath).toBe(log);
    expect(meta.outputChars).toBe(total);
    expect(meta.droppedChars).toBe(1000);
    expect(res.last.content).toContain(
      `[1000 earlier characters were not read in time and were dropped here; the full output is in ${log} (read it with the read tool).]`,
    );
    expect(res.last.content).toContain('x'.repeat(MAX_JOB_UNREAD_CHARS));
    expect(res.last.content).not.toContain('x'.repeat(MAX_JOB_UNREAD_CHARS + 1));
    // What the note promises: the read tool of this registry opens the log; the file is this user's only.
    expect((await stat(log)).mode & 0o777).toBe(0o600);
    const read = await callTool(tools, 'read', { filePath: log });
    expect(read.status).toBe('success');
    expect(read.content).toContain('x'.repeat(100));
    expect((await readFile(log, 'utf8')).length).toBe(total);
    await registry.dispose();
  });

  it('reports "exited" only once everything the job printed is readable', async () => {
    const { registry, tools } = await setup();
    for (let i = 0; i < 5; i++) {
      const { id } = await start(tools, `seq 1 2000${i}`);
      const res = await readUntil(tools, id, (_all, m) => m.status === 'exited');
      const lines = res.all.split('\n').filter((l) => /^\d+$/.test(l));
      expect(lines.at(-1)).toBe(`2000${i}`);
    }
    await registry.dispose();
  });

  it("keeps a job's log out of reach of other registries", async () => {
    const a = await setup();
    const { id } = await start(a.tools, 'echo secret-job-output');
    const res = await readUntil(a.tools, id, (_all, m) => m.status === 'exited');
    const log = (res.last.result.metadata as JobMetadata).logPath!;
    expect(await readFile(log, 'utf8')).toBe('secret-job-output\n');
    const other = registerBuiltinTools(createRegistry());
    const otherTools = await other.tools({ ids: ['read'], initCtx: { workspaceRoot: dir } });
    const denied = await callTool(otherTools, 'read', { filePath: log });
    expect(denied.status).toBe('error');
    expect(denied.content).not.toContain('secret-job-output');
    await a.registry.dispose();
  });
});

/** The file name of job `id`'s log in `outputDir`, once it exists. */
async function logOf(outputDir: string, id: string): Promise<string | undefined> {
  const names = await readdir(outputDir).catch(() => [] as string[]);
  return names.find((n) => n.startsWith(`bash-job-${id}-`));
}

/** Polls `probe` until it gives a value (the job's progress is observed, not timed). */
async function waitFor<T>(probe: () => Promise<T | undefined>): Promise<T> {
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('jobs do not outlive the host process', () => {
  beforeAll(() => ensureDist(), 180_000);

  const host = (ending: string) => `
    import { createRegistry, registerBuiltinTools } from ${JSON.stringify(path.join(ROOT, 'dist/index.js'))};
    const registry = registerBuiltinTools(createRegistry());
    const res = await registry.execute('bash', { command: 'sleep 1000 & sleep 1000', description: 'outlive', background: true },
      {}, { workspaceRoot: ${JSON.stringify(dir)} });
    process.stdout.write(String(/\\(pid (\\d+)\\)/.exec(res.result.output)[1]) + '\\n');
    // Go on once the test has seen the job alive.
    process.stdin.once('data', () => {
      process.stdin.destroy();
      ${ending}
    });
  `;

  for (const [name, ending] of [
    ['the host ends on its own', ''],
    ['the host calls process.exit', 'process.exit(0);'],
    ['the host gets SIGTERM', 'setInterval(() => {}, 1000); process.kill(process.pid, "SIGTERM");'],
  ] as const) {
    it(`${name}: the job's whole group is killed`, async () => {
      const child = spawn(process.execPath, ['--input-type=module', '-e', host(ending)], {
        stdio: ['pipe', 'pipe', 'inherit'],
      });
      const pid = await new Promise<number>((resolve) =>
        child.stdout.once('data', (d: Buffer) => resolve(Number(String(d).trim()))),
      );
      expect(groupAlive(pid)).toBe(true);
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.stdin.end('go\n');
      await exited;
      // SIGKILL delivery is asynchronous: give the kernel a moment (a surviving group fails below).
      for (let i = 0; i < 500 && groupAlive(pid); i++) await new Promise((r) => setTimeout(r, 10));
      const survived = groupAlive(pid);
      if (survived) process.kill(-pid, 'SIGKILL');
      expect(survived).toBe(false);
    }, 30_000);
  }
});
