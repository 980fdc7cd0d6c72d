/**
 * Path-escape attack fixtures shared by every file tool's escape suite.
 *
 * API (keep it this small):
 *
 *   const fx = await setupAttackPaths(workspaceDir, outsideDir);
 *   fx.attacks   // AttackPath[] (>= 30): { label, path, expect }
 *   fx.secret    // the marker string written in every file outside the workspace
 *   fx.evilDir   // `${workspaceDir}-evil`: the sibling sharing the workspace's prefix (created here)
 *   await fx.snapshotOutside()  // Map<path, "content|mode"> of everything outside (outsideDir + evilDir);
 *                               // compare before/after a tool ran to prove nothing outside changed
 *   await fx.cleanup()          // removes evilDir (workspaceDir/outsideDir belong to the caller)
 *
 * `workspaceDir` and `outsideDir` must both exist, be realpath'd and empty; `outsideDir` should be
 * a sibling of the workspace (e.g. both under one tempDir()). The fixture fills them with real
 * symlinks (file, directory, dangling, chains, relative and absolute, and to a system root).
 *
 * The "system files" are decoys: `outsideDir/sysroot` holds `etc/passwd` and `etc/hostname` (with
 * the secret), `link-root` and `link-etc` point there, and the absolute, `//`, `/proc/self/root` and
 * overlong `..` attacks climb to `/` and name the decoy's absolute path. A tool that regressed can
 * only harm the decoy, never the host's /etc, and snapshotOutside() (which covers it) shows it.
 *
 * `expect`:
 *  - 'outside': the path resolves outside the workspace; every tool must refuse it with the
 *    "outside the workspace" error, and nothing outside may be read, listed, created or changed.
 *  - 'inside': the path only *looks* hostile (encoded dots, backslashes, a literal `~`, `..` that
 *    collapses back inside); it names something inside the workspace, so a tool may act on it,
 *    but it must still not reveal or touch anything outside.
 */
import { mkdir, writeFile, symlink, readdir, readFile, lstat, rm, readlink } from 'node:fs/promises';
import path from 'node:path';

/** One attack: a label for test names, the path a model would send, and what must happen. */
export interface AttackPath {
  label: string;
  path: string;
  expect: 'outside' | 'inside';
}

/** What `setupAttackPaths` returns. */
export interface AttackFixture {
  attacks: AttackPath[];
  secret: string;
  evilDir: string;
  snapshotOutside(): Promise<Map<string, string>>;
  cleanup(): Promise<void>;
}

/** The marker written into every file outside the workspace; it must never appear in tool output. */
export const SECRET = 'TOP-SECRET-OUTSIDE-7f3a9c';

/** Creates the outside files, the `-evil` sibling and the hostile symlinks; returns the attack list. */
export async function setupAttackPaths(workspaceDir: string, outsideDir: string): Promise<AttackFixture> {
  const ws = workspaceDir;
  const out = outsideDir;
  const evil = `${ws}-evil`;
  const wsName = path.basename(ws);
  const outName = path.basename(out);
  const rel = path.relative(ws, out); // e.g. "../outside"

  // Outside content, with a decoy system root (never the host's own files).
  const sysroot = path.join(out, 'sysroot');
  const sysFile = `${sysroot}/etc/passwd`;
  const fromRoot = (p: string) => p.slice(1); // the decoy's absolute path without its leading slash
  await mkdir(path.join(sysroot, 'etc'), { recursive: true });
  await writeFile(sysFile, `root:x:0:0:${SECRET}:/root:/bin/sh\n`);
  await writeFile(path.join(sysroot, 'etc', 'hostname'), `${SECRET}-host\n`);
  await mkdir(path.join(out, 'dir', 'nested'), { recursive: true });
  await writeFile(path.join(out, 'secret.txt'), `${SECRET}\nline two\n`);
  await writeFile(path.join(out, 'dir', 'secret.txt'), `${SECRET} in dir\n`);
  await writeFile(path.join(out, 'dir', 'nested', 'deep.txt'), `${SECRET} deep\n`);
  await mkdir(evil, { recursive: true });
  await writeFile(path.join(evil, 'secret.txt'), `${SECRET} evil sibling\n`);

  // Inside content (legitimate files some 'inside' attacks land on).
  await mkdir(path.join(ws, 'sub', 'deeper'), { recursive: true });
  await writeFile(path.join(ws, 'inside.txt'), 'inside content\n');

  // Hostile links inside the workspace.
  await symlink(path.join(out, 'secret.txt'), path.join(ws, 'link-file'));
  await symlink(path.join(out, 'dir'), path.join(ws, 'link-dir'));
  await symlink(path.join(rel, 'dir'), path.join(ws, 'link-dir-rel'));
  await symlink(path.join(out, 'missing.txt'), path.join(ws, 'dangling'));
  await symlink(path.join(out, 'missing-dir'), path.join(ws, 'dangling-dir'));
  await symlink(path.join(ws, 'chain2'), path.join(ws, 'chain1'));
  await symlink(path.join(out, 'secret.txt'), path.join(ws, 'chain2'));
  await symlink('dangling-chain2', path.join(ws, 'dangling-chain1'));
  await symlink(path.join(out, 'chain-missing.txt'), path.join(ws, 'dangling-chain2'));
  await symlink(path.join(sysroot, 'etc'), path.join(ws, 'link-etc'));
  await symlink(sysroot, path.join(ws, 'link-root'));
  await symlink('..', path.join(ws, 'link-parent'));
  await symlink('../..', path.join(ws, 'sub', 'link-up'));
  await symlink(evil, path.join(ws, 'link-evil'));
  await symlink(path.join(out, 'dir'), path.join(ws, 'sub', 'deeper', 'link-deep'));

  const attacks: AttackPath[] = [
    // `..` and absolute paths
    { label: 'relative .. to outside file', path: `${rel}/secret.txt`, expect: 'outside' },
    { label: './../ prefix', path: `./${rel}/secret.txt`, expect: 'outside' },
    { label: 'sub/../../ chain', path: `sub/../../${outName}/secret.txt`, expect: 'outside' },
    {
      label: 'deep .. chain past / to a system file',
      path: `${'../'.repeat(40)}${fromRoot(sysFile)}`,
      expect: 'outside',
    },
    { label: 'absolute outside file', path: path.join(out, 'secret.txt'), expect: 'outside' },
    { label: 'absolute outside new file', path: path.join(out, 'created-by-attack.txt'), expect: 'outside' },
    { label: 'absolute outside dir', path: out, expect: 'outside' },
    { label: 'absolute system file', path: sysFile, expect: 'outside' },
    { label: 'double slash //system file', path: `/${sysFile}`, expect: 'outside' },
    { label: 'absolute workspace/../outside', path: `${ws}/../${outName}/secret.txt`, expect: 'outside' },
    { label: '/proc/self/root', path: `/proc/self/root${sysFile}`, expect: 'outside' },
    { label: 'trailing slash outside dir', path: `${rel}/`, expect: 'outside' },
    { label: 'workspace parent itself', path: '..', expect: 'outside' },
    // shared-prefix sibling
    { label: 'sibling -evil relative', path: `../${wsName}-evil/secret.txt`, expect: 'outside' },
    { label: 'sibling -evil absolute', path: path.join(evil, 'secret.txt'), expect: 'outside' },
    { label: 'sibling -evil new file', path: path.join(evil, 'new.txt'), expect: 'outside' },
    { label: 'sibling -evil dir', path: evil, expect: 'outside' },
    // symlinks
    { label: 'symlinked file to outside', path: 'link-file', expect: 'outside' },
    { label: 'symlinked file, absolute form', path: path.join(ws, 'link-file'), expect: 'outside' },
    { label: 'symlinked dir, file inside', path: 'link-dir/secret.txt', expect: 'outside' },
    { label: 'symlinked dir, new file', path: 'link-dir/new.txt', expect: 'outside' },
    { label: 'symlinked dir, new nested dirs', path: 'link-dir/a/b/c.txt', expect: 'outside' },
    { label: 'symlinked dir itself', path: 'link-dir', expect: 'outside' },
    { label: 'symlinked dir trailing slash', path: 'link-dir/', expect: 'outside' },
    { label: 'relative symlinked dir', path: 'link-dir-rel/nested/deep.txt', expect: 'outside' },
    { label: 'symlink nested in subdirs', path: 'sub/deeper/link-deep/secret.txt', expect: 'outside' },
    { label: 'dangling symlink to outside', path: 'dangling', expect: 'outside' },
    { label: 'dangling dir symlink, child', path: 'dangling-dir/x.txt', expect: 'outside' },
    { label: 'symlink chain to outside', path: 'chain1', expect: 'outside' },
    { label: 'dangling symlink chain', path: 'dangling-chain1', expect: 'outside' },
    { label: 'symlink to etc', path: 'link-etc/passwd', expect: 'outside' },
    { label: 'symlink to etc, new file', path: 'link-etc/toolbelt-escape-probe', expect: 'outside' },
    { label: 'symlink to a system root', path: 'link-root/etc/hostname', expect: 'outside' },
    { label: 'symlink to ..', path: `link-parent/${outName}/secret.txt`, expect: 'outside' },
    { label: 'relative ../.. symlink in subdir', path: `sub/link-up/${outName}/secret.txt`, expect: 'outside' },
    { label: 'symlink to -evil sibling', path: 'link-evil/secret.txt', expect: 'outside' },
    // NUL bytes
    { label: 'NUL byte truncation', path: `inside.txt\0${'../'.repeat(40)}${fromRoot(sysFile)}`, expect: 'outside' },
    { label: 'NUL byte after outside path', path: `${rel}/secret.txt\0.txt`, expect: 'outside' },
    // Glob and brace syntax (literal to file tools), very long names
    { label: 'glob star after ..', path: `${rel}/*.txt`, expect: 'outside' },
    { label: 'brace group after ..', path: `${rel}/{secret,x}.txt`, expect: 'outside' },
    { label: 'long .. chain (600 chars)', path: `${'../'.repeat(200)}${fromRoot(sysFile)}`, expect: 'outside' },
    { label: 'long name outside', path: `${rel}/${'x'.repeat(300)}`, expect: 'outside' },
    // Hostile-looking but inside
    { label: 'one-dot-leader lookalike of ..', path: `\u2024\u2024/${outName}/secret.txt`, expect: 'inside' },
    { label: 'brace group naming ..', path: `{..,x}/${outName}/secret.txt`, expect: 'inside' },
    { label: 'url-encoded dots', path: `%2e%2e/${outName}/secret.txt`, expect: 'inside' },
    { label: 'url-encoded slash', path: `..%2f${outName}%2fsecret.txt`, expect: 'inside' },
    { label: 'backslash traversal (literal on POSIX)', path: `..\\${outName}\\secret.txt`, expect: 'inside' },
    { label: 'literal tilde', path: '~/secret.txt', expect: 'inside' },
    { label: 'fullwidth slash lookalike', path: `..\uFF0F${outName}\uFF0Fsecret.txt`, expect: 'inside' },
    { label: 'leading space before ..', path: ` ../${outName}/secret.txt`, expect: 'inside' },
    { label: '.. through a symlinked dir collapses lexically', path: 'link-dir/../inside.txt', expect: 'inside' },
    { label: 'dot segments staying inside', path: './sub/./../inside.txt', expect: 'inside' },
  ];
  return {
    attacks,
    secret: SECRET,
    evilDir: evil,
    snapshotOutside: async () => {
      const snap = new Map<string, string>();
      await snapshotInto(out, snap);
      await snapshotInto(evil, snap);
      return snap;
    },
    cleanup: () => rm(evil, { recursive: true, force: true }),
  };
}

async function snapshotInto(dir: string, snap: Map<string, string>): Promise<void> {
  for (const name of await readdir(dir)) {
    const p = path.join(dir, name);
    const st = await lstat(p);
    if (st.isSymbolicLink()) snap.set(p, `link|${await readlink(p)}`);
    else if (st.isDirectory()) {
      snap.set(p, `dir|${st.mode}`);
      await snapshotInto(p, snap);
    } else snap.set(p, `${(await readFile(p)).toString('base64')}|${st.mode}`);
  }
}
