/**
 * bash over a backend: the command runs through the backend's `execute` (deepagents'
 * `SandboxBackendProtocolV2`), never on this host. Same arguments, danger classification, time limit
 * and output cap (head and tail kept, the full text saved) as the local bash. `background: true`
 * starts a job in the registry's job table (backend-jobs.ts), read with bash_output and stopped with
 * bash_kill as locally. A backend without `execute` gets bash, bash_output and bash_kill that refuse
 * in a sentence and say so as `unavailable` (the registry then does not offer them).
 * Must not spawn a process, nor speak the job protocol (backend-jobs.ts).
 */
import posix from 'node:path/posix';
import { z } from 'zod';
import { Tool } from '../../authoring/tool.js';
import { tenantOf } from '../../workspace/tenant.js';
import { descriptionBeside } from '../../authoring/description.js';
import { backendOf } from '../files/backend/common.js';
import { classifyCommand } from './danger.js';
import { DEFAULT_TIMEOUT_MS, MAX_OUTPUT_CHARS, MAX_TIMEOUT_MS, backgroundMetadata, type BashMetadata } from './bash.js';
import { bashKillDefinition, bashOutputDefinition, jobIdParameter, jobsFor, type JobMetadata } from './jobs.js';
import { BACKEND_JOB_DEFAULT_TIMEOUT_MS, BackendJob } from './backend-jobs.js';

const parameters = z.object({
  command: z.string().describe('The shell command to run (bash -c). Chain steps with && ; quote paths with spaces.'),
  timeout: z
    .number()
    .optional()
    .describe(
      `Time limit in milliseconds (whole number, 1-${MAX_TIMEOUT_MS}). Default ${DEFAULT_TIMEOUT_MS}; for a background job ${BACKEND_JOB_DEFAULT_TIMEOUT_MS}.`,
    ),
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
    .describe(
      'Start the command as a background job and return its id at once; bash_output gives its output and exit code once it has ended (the backend answers once, at the end), bash_kill stops it. Default false.',
    ),
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
        const timeoutMs = args.timeout ?? (args.background ? BACKEND_JOB_DEFAULT_TIMEOUT_MS : DEFAULT_TIMEOUT_MS);
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
        if (args.background) {
          // Shown as the model wrote it; run with the workdir's cd.
          const job = jobsFor(ctx).add(
            (id) =>
              new BackendJob({
                id,
                command: args.command,
                run: command,
                sessionID: ctx.sessionID,
                outputs,
                backend: g,
                timeoutMs,
              }),
          );
          return backgroundResult(job, title, workdir, danger, timeoutMs, g.name);
        }
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

/**
 * bash_output / bash_kill on a backend: the local tools' own definitions (the job table holds backend
 * jobs too) when the backend runs commands; otherwise not offered, said as a sentence.
 */
function jobToolOnBackend(id: 'bash_output' | 'bash_kill', danger: Tool.DangerLevel) {
  const definition = id === 'bash_output' ? bashOutputDefinition : bashKillDefinition;
  return Tool.define<typeof jobIdParameter, JobMetadata>(
    {
      id,
      permissions: { required: ['execute'] },
      descriptionPath: descriptionBeside(new URL('./bash.js', import.meta.url).href, id),
      danger,
    },
    (initCtx) => {
      const g = backendOf(initCtx);
      if (g.canExecute) return definition;
      const unavailable = `${id} is not available: the backend ${g.name} cannot run commands (it has no execute method and id), so there are no background jobs to ${id === 'bash_kill' ? 'stop' : 'read'}.`;
      return {
        description: `${id} (not available on this backend).`,
        parameters: jobIdParameter,
        unavailable,
        execute() {
          return Promise.reject(new Error(unavailable));
        },
      };
    },
  );
}

export const BackendBashOutputTool = jobToolOnBackend('bash_output', 'safe');
export const BackendBashKillTool = jobToolOnBackend('bash_kill', 'moderate');

/** What bash answers when it started a job on the backend. */
function backgroundResult(
  job: BackendJob,
  title: string,
  workdir: string,
  danger: Awaited<ReturnType<typeof classifyCommand>>,
  timeoutMs: number,
  backend: string,
): Tool.Result<BashMetadata> {
  const output = [
    `Started background job ${job.id} on the backend ${backend} in ${workdir}: ${abbreviate(job.command)}`,
    `Its output and exit code arrive when it ends (the backend's execute answers once, at the end): read them with bash_output {"id": "${job.id}"}; stop it with bash_kill {"id": "${job.id}"}. It is stopped if still running after ${timeoutMs} ms.`,
  ].join('\n');
  return {
    title: `${title} (background ${job.id})`,
    output,
    metadata: { ...backgroundMetadata(job.id, title, workdir, danger, false), backend },
  };
}

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
