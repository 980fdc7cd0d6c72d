/**
 * `toDeepAgentsBackend` judges every operation by the registry's policy, as the matching tool's call
 * would be judged: ls as list, read and readRaw as read, write, edit, delete, grep and glob as
 * themselves, uploadFiles as write and downloadFiles as read, execute as bash. A deny is an `error` in
 * the protocol's shape (a `permission_denied` code for uploads and downloads) and changes nothing; an
 * ask goes to the policy's approver and is refused with a sentence without one; listings and searches
 * leave out what the read filter of list, glob and grep leaves out. The registry is the one a user makes
 * for `execute` (bash only): the file tools' permissions come from the built-in list, so the default
 * policy's secret-file asks (a `read` permission rule) hold too.
 */
import { describe, it, expect, beforeEach, afterEach } from '@jest/globals';
import { mkdir, readFile, readdir, writeFile, access } from 'node:fs/promises';
import path from 'node:path';
import {
  createPolicy,
  createRegistry,
  registerBuiltinTools,
  toDeepAgentsBackend,
  type PermissionRequest,
  type PolicyRule,
  type WorkspaceBackend,
} from '../../src/index.js';
import { tempDir } from '../support/helpers.js';

let ws: Awaited<ReturnType<typeof tempDir>>;
const backends: WorkspaceBackend[] = [];

beforeEach(async () => {
  ws = await tempDir('deepagents-policy-');
  await mkdir(path.join(ws.dir, 'secrets'));
  await mkdir(path.join(ws.dir, 'notes'));
  await writeFile(path.join(ws.dir, 'secrets', 'db.txt'), 'password=hunter2\n');
  await writeFile(path.join(ws.dir, '.env'), 'TOKEN=abc123\n');
  await writeFile(path.join(ws.dir, 'notes', 'a.txt'), 'password reset steps\n');
});
afterEach(async () => {
  for (const b of backends.splice(0)) await b.close();
  await ws.cleanup();
});

const DENY_SECRETS = { pattern: 'secrets/**', action: 'deny' as const, reason: 'secrets stay private' };

/** A backend over the workspace whose registry (bash only, as a user makes one for execute) has `policy`. */
async function backendWith(
  rules: PolicyRule[],
  onPermissionRequest?: (r: PermissionRequest) => 'once' | 'reject',
  virtualMode = true,
): Promise<WorkspaceBackend> {
  const policy = createPolicy({ rules }, onPermissionRequest ? { onPermissionRequest } : {});
  const registry = registerBuiltinTools(createRegistry({ policy, loopGuard: false }), ['bash']);
  const b = await toDeepAgentsBackend({ workspaceRoot: ws.dir, registry, virtualMode });
  backends.push(b);
  return b;
}

const exists = (p: string) =>
  access(path.join(ws.dir, p)).then(
    () => true,
    () => false,
  );

describe('a deny rule holds for every operation', () => {
  it('read, readRaw and downloadFiles of a denied file answer the refusal, not the content', async () => {
    const b = await backendWith([DENY_SECRETS]);
    const read = await b.read('/secrets/db.txt');
    expect(read.content).toBeUndefined();
    expect(read.error).toMatch(/^The read call was not run: .*secrets stay private/);
    expect((await b.readRaw('secrets/db.txt')).error).toMatch(/secrets stay private/);
    expect(await b.downloadFiles(['/secrets/db.txt', '/notes/a.txt'])).toEqual([
      { path: '/secrets/db.txt', content: null, error: 'permission_denied' },
      { path: '/notes/a.txt', content: new Uint8Array(Buffer.from('password reset steps\n')), error: null },
    ]);
  });

  it('write, edit, delete and uploadFiles under a denied directory change nothing', async () => {
    const b = await backendWith([DENY_SECRETS]);
    expect((await b.write('/secrets/planted.txt', 'x')).error).toMatch(/The write call was not run/);
    expect(await b.uploadFiles([['/secrets/up.txt', new Uint8Array([1])]])).toEqual([
      { path: '/secrets/up.txt', error: 'permission_denied' },
    ]);
    expect((await b.edit('/secrets/db.txt', 'hunter2', 'x')).error).toMatch(/The edit call was not run/);
    expect((await b.delete('/secrets/db.txt')).error).toMatch(/The delete call was not run/);
    expect((await b.delete('/secrets')).error).toMatch(/The delete call was not run/);
    expect(await readdir(path.join(ws.dir, 'secrets'))).toEqual(['db.txt']);
    expect(await readFile(path.join(ws.dir, 'secrets', 'db.txt'), 'utf8')).toBe('password=hunter2\n');
  });

  it('ls, glob and grep leave out what the rule denies, and refuse it when asked for directly', async () => {
    const b = await backendWith([DENY_SECRETS]);
    // (.env is left out too: the default policy's secret-file ask, which nobody can answer in a listing.)
    expect((await b.ls('/')).files!.map((f) => f.path)).toEqual(['/notes/']);
    expect((await b.ls('/secrets')).error).toMatch(/The list call was not run/);
    expect((await b.glob('**/*.txt')).files!.map((f) => f.path)).toEqual(['/notes/a.txt']);
    expect((await b.glob('*.txt', 'secrets')).error).toMatch(/The glob call was not run/);
    expect((await b.grep('password', '/')).matches).toEqual([
      { path: '/notes/a.txt', line: 1, text: 'password reset steps' },
    ]);
    expect((await b.grep('password', '/secrets')).error).toMatch(/The grep call was not run/);
  });

  it('holds with virtualMode false, by host path', async () => {
    const b = await backendWith([DENY_SECRETS], undefined, false);
    const secret = path.join(ws.dir, 'secrets', 'db.txt');
    expect((await b.read(secret)).error).toMatch(/secrets stay private/);
    expect((await b.write(path.join(ws.dir, 'secrets', 'x.txt'), 'x')).error).toMatch(/secrets stay private/);
    expect((await b.grep('password', ws.dir)).matches!.map((m) => m.path)).toEqual([
      path.join(ws.dir, 'notes', 'a.txt'),
    ]);
    expect(await exists('secrets/x.txt')).toBe(false);
  });
});

describe('an ask goes to the approver', () => {
  it("without an approver, the default policy's secret-file ask refuses read and download of .env", async () => {
    const b = await backendWith([]);
    expect((await b.read('/.env')).error).toMatch(/needs approval .*no approver is configured/);
    expect((await b.downloadFiles(['/.env']))[0]).toEqual({ path: '/.env', content: null, error: 'permission_denied' });
  });

  it("the approver is asked with the tool's name and the host path; 'once' lets the read run, 'reject' refuses it", async () => {
    const asked: PermissionRequest[] = [];
    let answer: 'once' | 'reject' = 'once';
    const b = await backendWith([], (r) => {
      asked.push(r);
      return answer;
    });
    expect((await b.read('/.env')).content).toBe('TOKEN=abc123');
    expect(asked.map((r) => [r.toolId, (r.args as { filePath: string }).filePath])).toEqual([
      ['read', path.join(ws.dir, '.env')],
    ]);
    answer = 'reject';
    expect((await b.readRaw('/.env')).error).toMatch(/the user rejected it/);
    expect(asked).toHaveLength(2);
  });

  it('searches leave out the files whose read would ask (nobody can approve one path of a walk)', async () => {
    const b = await backendWith([], () => 'reject');
    expect((await b.grep('TOKEN', '/')).matches).toEqual([]);
    expect((await b.glob('.*')).files!.map((f) => f.path)).toEqual([]);
    expect((await b.ls('/')).files!.map((f) => f.path)).toEqual(['/notes/', '/secrets/']);
  });
});
