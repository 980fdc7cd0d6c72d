/**
 * Our protocol types are deepagents' own: each of our structural types and deepagents' exported
 * type are assignable both ways (checked by the compiler: `npx tsc --noEmit` fails on a drift), and
 * our `isSandboxBackend` and `liftBackend` agree with deepagents' `isSandboxBackend` and
 * `adaptBackendProtocol` on the same objects.
 */
import { describe, it, expect } from '@jest/globals';
import * as DA from 'deepagents';
import type * as Ours from '../../src/backend/protocol.js';
import { isSandboxBackend, liftBackend } from '../../src/backend/lift.js';

/** Compiles only when A and B are assignable both ways. */
type Mutual<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
/** Compiles only when `_T` is `true`; counts the checks made. */
let checked = 0;
function holds<_T extends true>(): void {
  checked++;
}
[
  () => holds<Mutual<Ours.BackendProtocolV2, DA.BackendProtocolV2>>(),
  () => holds<Mutual<Ours.SandboxBackendProtocolV2, DA.SandboxBackendProtocolV2>>(),
  () => holds<Mutual<Ours.BackendProtocolV1, DA.BackendProtocolV1>>(),
  () => holds<Mutual<Ours.SandboxBackendProtocolV1, DA.SandboxBackendProtocolV1>>(),
  () => holds<Mutual<Ours.AnyBackendProtocol, DA.AnyBackendProtocol>>(),
  () => holds<Mutual<Ours.ReadResult, DA.ReadResult>>(),
  () => holds<Mutual<Ours.ReadRawResult, DA.ReadRawResult>>(),
  () => holds<Mutual<Ours.LsResult, DA.LsResult>>(),
  () => holds<Mutual<Ours.GlobResult, DA.GlobResult>>(),
  () => holds<Mutual<Ours.GrepResult, DA.GrepResult>>(),
  () => holds<Mutual<Ours.WriteResult, DA.WriteResult>>(),
  () => holds<Mutual<Ours.EditResult, DA.EditResult>>(),
  () => holds<Mutual<Ours.ExecuteResponse, DA.ExecuteResponse>>(),
  () => holds<Mutual<Ours.FileData, DA.FileData>>(),
  () => holds<Mutual<Ours.FileInfo, DA.FileInfo>>(),
].forEach((check) => check());

describe('protocol types and guards match deepagents', () => {
  it('every type pair is mutually assignable (the compiler checks; this counts them)', () => {
    expect(checked).toBe(15);
  });

  it('isSandboxBackend agrees with deepagents on the same objects', async () => {
    const candidates: unknown[] = [
      new DA.StateBackend(),
      new DA.FilesystemBackend({ rootDir: '/nonexistent-root-for-types', virtualMode: true }),
      new DA.LocalShellBackend({ rootDir: '/nonexistent-root-for-types', virtualMode: true }),
      new DA.CompositeBackend(new DA.StateBackend(), {}),
      { execute: () => undefined, id: '' },
      { execute: () => undefined, id: 'x' },
      { execute: 'no', id: 'x' },
      null,
      'backend',
    ];
    expect(candidates.map((c) => isSandboxBackend(c))).toEqual(candidates.map((c) => DA.isSandboxBackend(c)));
  });

  it('liftBackend answers a V1 backend as adaptBackendProtocol does', async () => {
    const t = new Date(0).toISOString();
    const v1: Ours.BackendProtocolV1 = {
      lsInfo: () => [{ path: '/a.txt' }],
      read: () => 'text',
      readRaw: () => ({ content: ['x', 'y'], created_at: t, modified_at: t }),
      grepRaw: () => [
        { path: '/a.txt', line: 1, text: 'x' },
        { path: '/a.txt', line: 2, text: 'y' },
      ],
      globInfo: () => [{ path: '/a.txt' }],
      write: () => ({ path: '/a.txt' }),
      edit: () => ({ path: '/a.txt', occurrences: 1 }),
    };
    const ours = liftBackend(v1);
    const theirs = DA.adaptBackendProtocol(v1);
    expect(await ours.ls('/')).toEqual(await theirs.ls('/'));
    expect(await ours.read('/a.txt')).toEqual(await theirs.read('/a.txt'));
    expect(await ours.grep('x', '/', null, 1)).toEqual(await theirs.grep('x', '/', null, 1));
    expect(await ours.glob('*')).toEqual(await theirs.glob('*'));
    const raw = await ours.readRaw('/a.txt');
    // deepagents migrates V1 lines to V2 text; we keep the lines and join them where read (guard.ts).
    expect((raw.data as Ours.FileDataV1).content).toEqual(['x', 'y']);
  });
});
