/**
 * Where a server runs from and for which root: its executable (the workspace's `node_modules/.bin`,
 * this package's own dependencies for the built-ins, then `PATH`) and the project root of a file
 * (the nearest directory holding one of the server's root markers, within the workspace).
 * Must not start the server (server.ts) nor decide which server serves a file (config.ts).
 */
import { promises as fs } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { executableIn, findExecutable, statIfExists } from '../platform/files.js';
import type { ServerSpec } from './config.js';

/** How to start one server: the file to run, its arguments, and where it was found (for doctor and errors). */
export interface Launch {
  file: string;
  args: string[];
  /** `the workspace's node_modules/.bin`, `agent-toolbelt's dependencies` or `PATH`. */
  foundIn: string;
  initializationOptions?: unknown;
}

const requireHere = createRequire(import.meta.url);

/** The packages that ship the built-in servers, and the bin of each that speaks LSP. */
const BUILTIN_PACKAGES: Readonly<Record<string, { pkg: string; bin: string }>> = {
  typescript: { pkg: 'typescript-language-server', bin: 'typescript-language-server' },
  python: { pkg: 'pyright', bin: 'pyright-langserver' },
};

/** A bin script of a package this package can resolve (run with this Node), or undefined. */
async function ownBin(pkg: string, bin: string): Promise<string | undefined> {
  try {
    const manifest = requireHere.resolve(`${pkg}/package.json`);
    const json = JSON.parse(await fs.readFile(manifest, 'utf8')) as { bin?: string | Record<string, string> };
    const rel = typeof json.bin === 'string' ? json.bin : json.bin?.[bin];
    return rel ? path.join(path.dirname(manifest), rel) : undefined;
  } catch {
    return undefined;
  }
}

/** The tsserver.js of the TypeScript this package resolves (the fallback when the project has none). */
function ownTsserver(): string | undefined {
  try {
    return path.join(path.dirname(requireHere.resolve('typescript')), 'tsserver.js');
  } catch {
    return undefined;
  }
}

/** How to start `spec` for `root` (inside the workspace `wsRoot`), or a sentence saying why it cannot be found. */
export async function locateServer(spec: ServerSpec, root: string, wsRoot: string): Promise<Launch | string> {
  const found = await findCommand(spec, root, wsRoot);
  if (!found) {
    const where = spec.builtin
      ? `in the workspace's node_modules/.bin, in agent-toolbelt's dependencies or on PATH`
      : `in the workspace's node_modules/.bin or on PATH`;
    const install =
      BUILTIN_PACKAGES[spec.id] && spec.builtin ? ` (npm install -D ${BUILTIN_PACKAGES[spec.id].pkg})` : '';
    return `${spec.command} was not found ${where}; install it${install} or set initCtx.lsp.servers.${spec.id}.command`;
  }
  let initializationOptions = spec.initializationOptions;
  if (spec.diagnostics === 'tsserver') {
    // The project's own TypeScript wins (typescript-language-server looks in the root's node_modules);
    // ours is the fallback. No syntax-only server: while the project loads it would answer from the
    // open files alone (a definition at the import, references missing), where the agent needs the answer.
    const fallbackPath = ownTsserver();
    const given = (initializationOptions ?? {}) as { tsserver?: Record<string, unknown> };
    initializationOptions = {
      ...given,
      tsserver: { useSyntaxServer: 'never', ...(fallbackPath ? { fallbackPath } : {}), ...given.tsserver },
    };
  }
  return { ...found, initializationOptions };
}

async function findCommand(
  spec: ServerSpec,
  root: string,
  wsRoot: string,
): Promise<{ file: string; args: string[]; foundIn: string } | undefined> {
  if (path.isAbsolute(spec.command)) {
    return (await statIfExists(spec.command))?.isFile()
      ? { file: spec.command, args: spec.args, foundIn: 'the configured path' }
      : undefined;
  }
  const bins = [...new Set([root, wsRoot])].map((d) => path.join(d, 'node_modules', '.bin'));
  const local = await executableIn(bins, spec.command);
  if (local) return { file: local, args: spec.args, foundIn: "the workspace's node_modules/.bin" };
  const own = spec.builtin && BUILTIN_PACKAGES[spec.id];
  if (own && own.bin === spec.command) {
    const script = await ownBin(own.pkg, own.bin);
    // Run with this Node: the bin's shebang would need `node` on PATH.
    if (script)
      return { file: process.execPath, args: [script, ...spec.args], foundIn: "agent-toolbelt's dependencies" };
  }
  const onPath = await findExecutable(spec.command);
  return onPath ? { file: onPath, args: spec.args, foundIn: 'PATH' } : undefined;
}

/** The project root of `file`: the nearest directory from its own up to `wsRoot` holding a root marker, else `wsRoot`. */
export async function rootOf(file: string, markers: readonly string[], wsRoot: string): Promise<string> {
  if (!markers.length) return wsRoot;
  let dir = path.dirname(file);
  const inside = (d: string) => d === wsRoot || d.startsWith(wsRoot.endsWith(path.sep) ? wsRoot : wsRoot + path.sep);
  while (inside(dir)) {
    for (const m of markers) if (await statIfExists(path.join(dir, m))) return dir;
    if (dir === wsRoot) break;
    const up = path.dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  return wsRoot;
}
