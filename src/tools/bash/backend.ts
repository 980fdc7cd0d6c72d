/**
 * bash over a backend: the command runs through the backend's `execute` (deepagents'
 * `SandboxBackendProtocolV2`), never on this host. Same arguments, danger classification, time limit
 * and output cap (head and tail kept, the full text saved) as the local bash. A backend without
 * `execute` gets a tool that refuses in a sentence and says so as `unavailable`; background jobs
 * (bash_output, bash_kill) are not offered over a backend: `execute` answers once, when the command
 * has finished.
 * Must not spawn a process.
 */
import posix from 'node:path/posix';
import { z } from 'zod';
import { Tool } from '../../tool.js';
import { tenantOf } from '../../tenant.js';
import { descriptionBeside } from '../../description.js';
import { backendOf } from '../files/backend/common.js';
import { classifyCommand } from './danger.js';
import { DEFAULT_TIMEOUT_MS, MAX_OUTPUT_CHARS, MAX_TIMEOUT_MS, type BashMetadata } from './bash.js';

const parameters = z.object({
  command: z.string().describe('The shell command to run (bash -c). Chain steps with && ; quote paths with spaces.'),
  timeout: z
    .number()
    .optional()
    .describe(`Time limit in milliseconds (whole number, 1-${MAX_TIMEOUT_MS}). Default ${DEFAULT_TIMEOUT_MS}.`),
  workdir: z
    .string()
    .optional()
    .describe(
      'Directory to run in, relative to the directory the backend runs commands in. Use this instead of "cd dir &&".',
    ),
  description: z
    .string()
    .describe('What the command does in 5-10 words, e.g. "Install dependencies" or "Run unit tests".'),
  background: z
    .boolean()
    .optional()
    .describe('Not available on this backend: commands run to completion. Default false.'),
});

/** Why bash is not offered on `initCtx.backend`, or undefined when it can run there. */
export function backendBashUnavailable(initCtx: Tool.InitContext): string | undefined {
  const g = backendOf(initCtx);
  return g.canExecute
    ? undefined
    : `bash is not available: the files live on the backend ${g.name}, which cannot run commands (it has no execute method and id), and a command run on this host would not see them. Use the file tools, or give the agent a sandbox backend.`;
}

export const BackendBashTool = Tool.define<typeof parameters, BashMetadata>(
  {
    id: 'bash',
    permissions: { required: ['execute'] },
    descriptionPath: descriptionBeside(new URL('./bash.js', import.meta.url).href, 'bash'),
    danger: 'dangerous',
  },
  (initCtx) => {
    const g = backendOf(initCtx);
    const outputs = tenantOf(initCtx).outputs;
    const unavailable = backendBashUnavailable(initCtx);
    return {
      description: `Run a shell command on the backend ${g.name} (time limit, output capped with the full text saved to a file).`,
      timeout: { managed: true },
      annotations: { readOnlyHint: false, destructiveHint: true, openWorldHint: true },
      parameters,
      ...(unavailable ? { unavailable } : {}),
      async execute(args, ctx) {
        if (unavailable) throw new Error(unavailable);
        if (args.background)
          throw new Error(
            `background is not available on the backend ${g.name}: its execute answers once the command has finished. Run the command without background, or redirect a long job's output to a file and start it with "nohup ... &".`,
          );
        const timeoutMs = args.timeout ?? DEFAULT_TIMEOUT_MS;
        if (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > MAX_TIMEOUT_MS)
          throw new Error(
            `timeout must be a whole number of milliseconds from 1 to ${MAX_TIMEOUT_MS}, got ${args.timeout}. Pass a value in that range or leave it out (default ${DEFAULT_TIMEOUT_MS}).`,
          );
        if (!args.command.trim()) throw new Error('The command is empty. Pass the shell command to run in "command".');
        const danger = await classifyCommand(args.command);
        const title = args.description || abbreviate(args.command);
        const workdir = args.workdir ? posix.normalize(args.workdir.replace(/^\/+/, '')) : '.';
        if (workdir.split('/').includes('..'))
          throw new Error(
            `workdir ${JSON.stringify(args.workdir)} leaves the backend's command directory; give a directory inside it.`,
          );
        const command = workdir === '.' ? args.command : `cd -- ${shellQuote(workdir)} && ${args.command}`;
        ctx.metadata({ title, metadata: { description: title, output: '', danger: danger.level } });
        const stop = new AbortController();
        const timer = setTimeout(() => stop.abort(), timeoutMs);
        const onAbort = () => stop.abort();
        ctx.abort.addEventListener('abort', onAbort, { once: true });
        const started = Date.now();
        let answer;
        try {
          answer = await g.execute(command, stop.signal);
        } catch (err) {
          if (!ctx.abort.aborted && stop.signal.aborted)
            throw new Error(
              `The backend ${g.name} did not finish the command within its time limit of ${timeoutMs} ms; it may still be running there. Pass a larger timeout (max ${MAX_TIMEOUT_MS} ms), or split the work.`,
              { cause: err },
            );
          throw err;
        } finally {
          clearTimeout(timer);
          ctx.abort.removeEventListener('abort', onAbort);
        }
        const capped = await cap(answer.output, outputs);
        const notes: string[] = [];
        if (answer.exitCode !== 0 && answer.exitCode !== null) notes.push(`[exit code ${answer.exitCode}]`);
        if (answer.truncated) notes.push(`[The backend ${g.name} cut this output itself; the rest is not available.]`);
        const body = capped.text.length ? capped.text : '(no output)';
        const output = notes.length ? `${body.replace(/\n+$/, '')}\n\n${notes.join('\n')}` : body;
        const metadata: BashMetadata = {
          description: title,
          workdir,
          exitCode: answer.exitCode,
          signal: null,
          // The backend contains (or not) its own commands; our OS sandbox wraps only local spawns.
          sandboxed: false,
          killed: null,
          durationMs: Date.now() - started,
          truncated: capped.truncated || answer.truncated,
          ...(capped.outputPath ? { outputPath: capped.outputPath } : {}),
          outputChars: answer.output.length,
          maxBufferedChars: answer.output.length,
          backgroundOutputDetached: false,
          danger: danger.level,
          dangerReasons: danger.segments.flatMap((s) => s.reasons),
          backend: g.name,
        };
        const failed = answer.exitCode !== 0 && answer.exitCode !== null;
        return { title: failed ? `${title} (exit ${answer.exitCode})` : title, output, metadata };
      },
    };
  },
);

/** bash_output / bash_kill on a backend: not offered (no background jobs there), said as a sentence. */
function jobToolOnBackend(id: 'bash_output' | 'bash_kill', file: string, danger: Tool.DangerLevel) {
  const jobParameters = z.object({
    id: z.string().describe('The job id that bash returned when it started the job in the background.'),
  });
  return Tool.define(
    {
      id,
      permissions: { required: ['execute'] },
      descriptionPath: descriptionBeside(new URL('./bash.js', import.meta.url).href, file),
      danger,
    },
    (initCtx) => {
      const unavailable = `${id} is not available: commands on the backend ${backendOf(initCtx).name} run to completion through its execute, so there are no background jobs to ${id === 'bash_kill' ? 'stop' : 'read'}.`;
      return {
        description: `${id} (not available on this backend).`,
        parameters: jobParameters,
        unavailable,
        execute() {
          return Promise.reject(new Error(unavailable));
        },
      };
    },
  );
}

export const BackendBashOutputTool = jobToolOnBackend('bash_output', 'bash_output', 'safe');
export const BackendBashKillTool = jobToolOnBackend('bash_kill', 'bash_kill', 'moderate');

/** Head and tail kept past MAX_OUTPUT_CHARS, the whole text saved, with the local bash's marker. */
async function cap(
  text: string,
  outputs: ReturnType<typeof tenantOf>['outputs'],
): Promise<{ text: string; truncated: boolean; outputPath?: string }> {
  if (text.length <= MAX_OUTPUT_CHARS) return { text, truncated: false };
  const file = await outputs.save('bash', text);
  let head = text.slice(0, Math.floor(MAX_OUTPUT_CHARS / 2));
  let tail = text.slice(text.length - Math.floor(MAX_OUTPUT_CHARS / 2));
  const headNl = head.lastIndexOf('\n');
  if (headNl >= head.length / 2) head = head.slice(0, headNl + 1);
  const tailNl = tail.indexOf('\n');
  if (tailNl !== -1 && tailNl < tail.length / 2) tail = tail.slice(tailNl + 1);
  const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
  const tailLines = tail.split('\n').length - (tail.endsWith('\n') ? 1 : 0);
  const tailStartLine = Math.max(1, lines - tailLines + 1);
  const omitted = text.length - head.length - tail.length;
  const where =
    `The full output (${text.length} chars, ${lines} lines) is saved at ${file}. ` +
    `Read it with the read tool (the tail below starts at line ${tailStartLine}, use offset to page) instead of re-running the command.`;
  return {
    text: `${head.endsWith('\n') ? head : `${head}\n`}\n... [${omitted} characters omitted] ...\n${where}\n\n${tail}`,
    truncated: true,
    outputPath: file,
  };
}

function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

function abbreviate(command: string): string {
  const t = command.trim().replace(/\s+/g, ' ');
  return t.length > 60 ? `${t.slice(0, 57)}...` : t;
}
