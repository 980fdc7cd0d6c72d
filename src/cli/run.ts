/**
 * `toolbelt run <tool>`: one call through the registry, progress to stderr, output to stdout.
 * Session persistence is session.ts'; the progress line format is progress.ts'.
 * Must not run a call's steps itself: the call goes through registry.execute like every entry point.
 */
import { randomUUID } from 'node:crypto';
import { UsageError, unknownTool, type Command, type Setup, type Values } from './command.js';
import { resultText } from '../pipeline/result-text.js';
import { progressLine } from './progress.js';
import { PersistedSession, SESSION_ID_PATTERN } from './session.js';
import { terminalApprover, useApprover } from './approver.js';

async function run({ registry, initCtx, grant }: Setup, values: Values, positionals: string[]): Promise<number> {
  const [toolId, json = '{}'] = positionals;
  if (!registry.has(toolId)) throw unknownTool(registry, toolId);
  let args: unknown;
  try {
    args = JSON.parse(json);
  } catch (err) {
    throw new UsageError(
      `The arguments for "${toolId}" are not valid JSON (${(err as Error).message}): ${json.length > 200 ? `${json.slice(0, 200)}...` : json}\n` +
        `Quote them for the shell, e.g. toolbelt run ${toolId} '{"key":"value"}'`,
    );
  }
  let timeoutMs: number | undefined;
  if (values.timeout !== undefined) {
    timeoutMs = Number(values.timeout);
    if (!Number.isFinite(timeoutMs) || timeoutMs <= 0)
      throw new UsageError(
        `--timeout must be a positive number of milliseconds, got ${JSON.stringify(values.timeout)}.`,
      );
  }
  const sessionArg = values.session as string | undefined;
  if (sessionArg !== undefined && !SESSION_ID_PATTERN.test(sessionArg)) {
    throw new UsageError(
      `--session ${JSON.stringify(sessionArg)} is not a valid session id: use 1-128 letters, digits, ".", "_" or "-".`,
    );
  }
  const sessionID = sessionArg ?? `cli-${randomUUID()}`;
  const session = sessionArg
    ? await PersistedSession.open(sessionArg, initCtx, registry.tenant.readTracker)
    : undefined;

  const controller = new AbortController();
  // The policy's asks go to the human at the terminal, or --yes, or are refused with a sentence.
  const approver = terminalApprover({ yes: values.yes === true, command: 'run', signal: controller.signal });
  useApprover(registry.policy, approver.onPermissionRequest);
  const onSignal = () => controller.abort(new Error('interrupted by the user'));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const final = await registry.execute(toolId, args, { sessionID, agent: 'toolbelt-cli' }, initCtx, {
      enabledPermissions: grant,
      signal: controller.signal,
      timeoutMs,
      onToolResult: (u) => {
        if (u.status === 'running') process.stderr.write(`${progressLine(u)}\n`);
      },
    });
    await session?.save();
    if (values.json) {
      process.stdout.write(`${JSON.stringify(final, null, 2)}\n`);
      return final.success ? 0 : 1;
    }
    for (const a of final.result.attachments ?? []) {
      const size = a.data
        ? `${Math.floor((a.data.length * 3) / 4)} bytes`
        : a.text !== undefined
          ? `${a.text.length} chars`
          : 'link';
      process.stderr.write(`[${toolId}] attachment: ${a.type} ${a.mime}${a.uri ? ` ${a.uri}` : ''} (${size})\n`);
    }
    if (!final.success) {
      // A refusal the approver already told the human about is not repeated in the model's words.
      if (!approver.refused) process.stderr.write(`${resultText(final)}\n`);
      return 1;
    }
    process.stdout.write(final.result.output.endsWith('\n') ? final.result.output : `${final.result.output}\n`);
    return 0;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

export const runCommand: Command = {
  options: {
    session: { type: 'string' },
    timeout: { type: 'string' },
    json: { type: 'boolean' },
    yes: { type: 'boolean', short: 'y' },
  },
  positionals: [1, 2],
  usage:
    "toolbelt run <tool> ['<json args>'] [--workspace DIR] [--session ID] [--timeout MS] [--json] [--yes]   (or: toolbelt run <tool> --help)",
  run,
};
