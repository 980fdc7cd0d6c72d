#!/usr/bin/env node
/**
 * The `toolbelt` command: list the tools, run one, serve them over MCP, or run an agent with them.
 * Output goes to stdout, progress and diagnostics to stderr. Exit codes: 0 ok, 1 the tool (or
 * agent) failed, 2 usage error (unknown command, flag, tool, bad JSON, bad model config).
 * Must not hold a command's logic (each is its own module in src/cli/): it parses argv, sets up and dispatches.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { isEntryPoint } from './cli/main-module.js';
import { COMMON, UsageError, didYouMean, makeRegistry, type Command, type Values } from './cli/command.js';
import { listCommand } from './cli/list.js';
import { runCommand } from './cli/run.js';
import { mcpCommand } from './cli/mcp.js';
import { doctorCommand } from './cli/doctor.js';
import { lspCommand } from './cli/lsp.js';
import { agentCommand } from './cli/agent.js';
import { loadDotEnv } from './providers/chat-model.js';
import { policyCommand } from './cli/policy.js';
import { memoryCommand } from './cli/memory.js';
import { skillsCommand } from './cli/skills.js';
import { toolHelp } from './cli/tool-help.js';
import { disconnectMcp } from './mcp/index.js';
import { ALL_PERMISSIONS } from './authoring/permissions.js';
import { describeThrown } from './text/describe.js';

const VERSION = '0.1.0';

const HELP = `toolbelt ${VERSION} - agent-toolbelt's tools from the command line

Usage:
  ${listCommand.usage}
  ${runCommand.usage}
  ${mcpCommand.usage}
  ${agentCommand.usage}
  ${policyCommand.usage}
  ${memoryCommand.usage}
  ${doctorCommand.usage}
  ${skillsCommand.usage}
  ${lspCommand.usage}

Commands:
  list    The tools the permissions allow, with their permissions and a one-line description.
  run     Run one tool. Progress goes to stderr as it happens, the output to stdout.
          Exit code 1 when the tool fails. --session ID shares read-before-edit state across runs.
  mcp     Serve the tools as an MCP server over stdio (default) or Streamable HTTP (--http PORT,
          0 picks a free port; binds 127.0.0.1 unless --host is given). HTTP requests need
          "Authorization: Bearer T" when --token T (or $TOOLBELT_MCP_TOKEN) is set, which any
          non-loopback --host requires; browser Origins other than the server's own get 403
          unless --allow-origin lists them (repeatable); --stateless serves without MCP sessions
          (a client without a session _meta keeps one session per bearer token, docs/mcp.md).
  policy  explain: the decision for a call and the rule that made it. check: validate a policy
          file (line and field of each problem). show: the policy in use (the default if none).
  memory  import: copy the memory directory's notes (.agent-memory) into the --store; notes
          already there are skipped and named (--overwrite replaces them, each reported).
  skills  list: the Agent Skills found (.agents/skills and .claude/skills in the workspace and in ~),
          with their source and problems. check [DIR]: every problem, exit 1 when one skips a
          skill. import DIR...: put skill folders into the --store (docs/skills.md).
  agent   Run a LangChain agent (createAgent) with the tools on a task. --model defaults to
          $TOOLBELT_MODEL; the provider's package (e.g. @langchain/openai) and key must be present.
          --max-retries N: retries of a failed model request (default 2, max 10). .env in the
          current directory is read first (docs/cli.md lists the variables). The agent is offered
          task with a general-purpose sub-agent (same model and tools); --no-task leaves it out.
          It is offered skill when Agent Skills are found (see skills); --no-skills leaves it out.
          --max-description-chars N fits tool descriptions under N characters (1024 for Azure).
  doctor  Which tools each provider API (OpenAI Chat, strict, Responses, Anthropic, Gemini,
          1,024-character endpoints) would refuse and why, the size of the definitions sent, and
          what the environment has (ripgrep, bubblewrap, the store). Exit 1 when any is refused.
  lsp     Ask a file's language server: diagnostics FILE (the errors and warnings now), or
          definition / references / hover FILE LINE:COLUMN (or LINE:NAME), documentSymbols FILE,
          workspaceSymbols FILE NAME. Exit 1 when no server answers (docs/lsp.md).

Options (every command):
  --workspace DIR     Workspace root the file tools are sandboxed to (default: $AGENT_WORKSPACE_ROOT
                      if set, else the current directory).
  --permissions LIST  Comma-separated: ${ALL_PERMISSIONS.join(', ')}, or all (default: all).
  --tools FILE        Load more tools from an ES module (repeatable): its default export is
                      (registry) => void, or an array of { info, permissions, descriptionPath? }.
  --mcp-config FILE   Import tools from the MCP servers in a JSON config (see docs/mcp.md).
  --rest-config FILE  Register REST and OpenAPI tools from a JSON config (see docs/rest-openapi.md).
  --no-builtins       Do not register the built-in tools.
  --policy FILE       Allow/ask/deny rules every call obeys, layered over the default policy (default:
                      ./toolbelt.policy.json if present, else the default policy alone: reading secret
                      files and dangerous commands ask, writes outside the workspace are denied).
  --no-policy         Apply no policy at all (not even the default one).
  -y, --yes           run, agent: approve what the policy asks about (never what it denies). Without it
                      run and agent ask at a terminal (y / n / a = always for this session) and refuse
                      off one; mcp asks the client by elicitation, or refuses if it cannot.
  --sandbox MODE      auto (default): run bash and rg in bubblewrap when it works, else uncontained with
                      one line on stderr; required: refuse bash without it; off (docs/sandbox.md).
  --store URL         Keep todo lists, memory notes and pending calls in this store (postgres://...;
                      default: $TOOLBELT_STORE_URL, else in the process, notes as files). Processes
                      given the same store and --store-namespace LIST (default cli) share that state.
  -h, --help          Show this help.   -v, --version   Show the version.

Examples:
  toolbelt run read '{"filePath":"README.md"}'
  toolbelt run grep '{"pattern":"TODO","include":"*.ts"}' --workspace ./src
  toolbelt mcp --permissions read            # a read-only MCP server over stdio
  toolbelt agent "Summarise README.md" --model openai:gpt-4o-mini
`;

const COMMANDS: Record<string, Command> = {
  list: listCommand,
  run: runCommand,
  mcp: mcpCommand,
  agent: agentCommand,
  policy: policyCommand,
  memory: memoryCommand,
  doctor: doctorCommand,
  skills: skillsCommand,
  lsp: lspCommand,
};

/** Runs the CLI with `argv` (without node and the script); resolves to the exit code. */
export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === '-h' || command === '--help' || command === 'help') {
    process.stdout.write(HELP);
    return command ? 0 : 2;
  }
  if (command === '-v' || command === '--version') {
    process.stdout.write(`${VERSION}\n`);
    return 0;
  }
  const spec = COMMANDS[command];
  try {
    if (!spec) {
      const near = didYouMean(command, Object.keys(COMMANDS));
      throw new UsageError(
        `Unknown command "${command}"${near ? ` — did you mean "${near}"?` : '.'} Commands: ${Object.keys(COMMANDS).join(', ')}.`,
      );
    }
    let parsed;
    try {
      parsed = parseArgs({ args: rest, options: { ...COMMON, ...spec.options }, allowPositionals: true, strict: true });
    } catch (err) {
      throw new UsageError(`${flagProblem(err as Error, { ...COMMON, ...spec.options })}\nUsage: ${spec.usage}`);
    }
    const values = parsed.values as Values;
    const toolHelpFor = command === 'run' && values.help ? parsed.positionals[0] : undefined;
    if (values.help && toolHelpFor === undefined) {
      process.stdout.write(HELP);
      return 0;
    }
    const [min, max] = spec.positionals;
    if (toolHelpFor === undefined && (parsed.positionals.length < min || parsed.positionals.length > max)) {
      throw new UsageError(
        `"toolbelt ${command}" takes ${min === max ? min : `${min}-${max}`} argument${max === 1 ? '' : 's'}, got ${parsed.positionals.length}` +
          `${parsed.positionals.length ? ` (${parsed.positionals.map((p) => JSON.stringify(p)).join(' ')})` : ''}.\nUsage: ${spec.usage}`,
      );
    }
    // .env in the working directory, as .env.example promises; variables already set win.
    loadDotEnv();
    const setup = await makeRegistry(values, spec.ownsPolicy);
    try {
      if (toolHelpFor !== undefined) return await toolHelp(setup, toolHelpFor);
      return await spec.run(setup, values, parsed.positionals);
    } finally {
      await disconnectMcp(setup.registry).catch(() => undefined);
      await setup.close?.().catch(() => undefined);
    }
  } catch (err) {
    const { usage, name, stack } = errorParts(err);
    if (usage || name === 'ModelConfigError') {
      process.stderr.write(`toolbelt: ${describeThrown(err)}\n`);
      if (usage) process.stderr.write(`Run "toolbelt --help" for usage.\n`);
      return 2;
    }
    if (name === 'ModelCallError') {
      // What the API or the network said, and what to check: one line, no stack.
      process.stderr.write(`toolbelt: ${describeThrown(err)}\n`);
      return 1;
    }
    process.stderr.write(`toolbelt: ${typeof stack === 'string' ? stack : describeThrown(err)}\n`);
    return 1;
  }
}

/** parseArgs' complaint, with the flag the user most likely meant when the flag is unknown (`--workspce`). */
function flagProblem(err: Error, options: NonNullable<ParseArgsConfig['options']>): string {
  const message = err.message.replace(/\. To specify a positional argument.*$/s, '.');
  const unknown = /^Unknown option '--?([^'=]+)'/.exec(message)?.[1];
  const near = unknown === undefined ? undefined : didYouMean(unknown, Object.keys(options));
  return near ? message.replace(/\.$/, ` — did you mean --${near}?`) : message;
}

/** What `main` reads of a thrown value, without throwing (a thrown proxy's traps may throw). */
function errorParts(err: unknown): { usage: boolean; name?: unknown; stack?: unknown } {
  try {
    return { usage: err instanceof UsageError, name: (err as Error).name, stack: (err as Error).stack };
  } catch {
    return { usage: false };
  }
}

/** How long (ms) the CLI waits, after its command finished, for pending work (an aborted tool's cleanup) before exiting anyway. */
const EXIT_GRACE_MS = 1_000;

if (await isEntryPoint(import.meta.url)) {
  const code = await main(process.argv.slice(2));
  // Exit as soon as pending work settles (stdout drained, an aborted tool's cleanup done), and at
  // most EXIT_GRACE_MS later even if a tool left a handle open.
  process.exitCode = code;
  setTimeout(() => process.exit(code), EXIT_GRACE_MS).unref();
}
