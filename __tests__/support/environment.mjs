/**
 * The suites' jest environment: Node's, plus a temp dir of the suite's own. Before the suite loads,
 * TMPDIR (in the worker's real environment, which os.tmpdir() and every child process read) points
 * at `<run temp dir>/<suite>-XXXXXX`; after the suite, anything left there is named path by path
 * (on stderr, and in a report the run's global teardown fails the run with), and the dir is removed. The package's own tool-output directories
 * (`agent-toolbelt-<uid>-<pid>-<pid namespace>-<16 hex>`, kept for the model to read back until the
 * registry is disposed or the process exits) and the CLI's session store
 * (`agent-toolbelt-<uid>`) are the host's to remove: here the test run is the host, so they go first.
 * Must not touch anything outside the suite's dir.
 */
import NodeEnvironment from 'jest-environment-node';
import { chmodSync, existsSync, lstatSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPORTS_DIR, removeAll, walk } from './host-guard.mjs';

/** What the package leaves in the temp dir by design (saved outputs, CLI sessions), as the host removes it. */
function packageOwned(name) {
  const uid = process.getuid?.() ?? 'u';
  return name === `agent-toolbelt-${uid}` || new RegExp(`^agent-toolbelt-${uid}-\\d+-\\d+-[0-9a-f]{16}$`).test(name);
}

export default class GuardedEnvironment extends NodeEnvironment {
  constructor(config, context) {
    const parent = os.tmpdir();
    const suite = path.basename(context.testPath).replace(/\.(test|fixture)\.ts$/, '');
    const dir = mkdtempSync(path.join(parent, `${suite}-`));
    // 0711: a child run as `nobody` may pass through to a directory of its own inside.
    chmodSync(dir, 0o711);
    const saved = process.env.TMPDIR;
    process.env.TMPDIR = dir;
    super(config, context);
    this.suiteTmp = { dir, saved, rel: path.relative(config.globalConfig?.rootDir ?? process.cwd(), context.testPath) };
  }

  async teardown() {
    await super.teardown();
    const { dir, saved, rel } = this.suiteTmp;
    if (saved === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = saved;
    for (const name of readdirSync(dir)) {
      const p = path.join(dir, name);
      if (packageOwned(name) && lstatSync(p).isDirectory()) removeAll(p);
    }
    const leftovers = walk(dir);
    removeAll(dir);
    if (!leftovers.length) return;
    const listed = leftovers.map((p) => `  ${path.relative(dir, p)}`).join('\n');
    process.stderr.write(
      `host guard: ${rel} left ${leftovers.length} path(s) in its temp dir (now removed):\n${listed}\n`,
    );
    // The run's global teardown fails the run naming them: throwing here would replace the suite's
    // own results (a timed-out test, say) with this message.
    const reports = path.join(path.dirname(dir), REPORTS_DIR);
    if (!existsSync(reports))
      throw new Error(
        `${rel} left ${leftovers.length} path(s) in its temp dir (TMPDIR=${dir}, now removed):\n${listed}`,
      );
    writeFileSync(
      path.join(reports, `${path.basename(dir)}.json`),
      JSON.stringify({ suite: rel, leftovers: leftovers.map((p) => path.relative(dir, p)) }),
    );
  }
}
