/**
 * Whether a module is the process's entry point, shared by the CLI and the demo.
 * Must not hold anything but that check.
 */
import { realpath } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

/** True when `moduleUrl` (pass `import.meta.url`) is what `node` was asked to run, also through an npm bin symlink. */
export async function isEntryPoint(moduleUrl: string): Promise<boolean> {
  if (!process.argv[1]) return false;
  try {
    return (await realpath(process.argv[1])) === (await realpath(fileURLToPath(moduleUrl)));
  } catch {
    return false;
  }
}
