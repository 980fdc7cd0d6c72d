/**
 * Who answers the policy's asks in the `toolbelt` command. `run` and `agent`: the human at the
 * terminal (the call, the rule that asked, then y / n / a = always for this session), `--yes`
 * (approves every ask; a deny never reaches an approver), or, off a terminal without `--yes`, no
 * one: the call is refused with a sentence for the human naming the rule and `--yes`. `mcp`: the
 * client's user, by an MCP elicitation when the client declared that capability, else a refusal.
 * Must not judge calls: decisions are the policy's (src/policy/); this file only answers asks.
 */
import readline from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { sourceText } from '../policy/messages.js';
import type { OnPermissionRequest, PermissionReply, PermissionRequest, PolicyDecision } from '../policy/types.js';
import type { Policy } from '../policy/policy.js';
import { currentMcpCall } from '../mcp/call-context.js';

/** Characters of a call's arguments an ask shows; longer ones are cut with a marker. */
export const ASK_ARGS_CHARS = 500;
/** How long (ms) an MCP elicitation waits for the client's user before the call is refused (10 minutes). */
export const MCP_APPROVAL_TIMEOUT_MS = 10 * 60_000;

/** The call as one line: `read {"filePath":".env"}`, its arguments cut at ASK_ARGS_CHARS. */
export function callText(req: PermissionRequest): string {
  const args = JSON.stringify(req.args) ?? '';
  const shown = args.length > ASK_ARGS_CHARS ? `${args.slice(0, ASK_ARGS_CHARS)}... (${args.length} characters)` : args;
  return `${req.toolId} ${shown}`;
}

/** Each check of a decision that asked, with the rule that asked (its JSON carries its reason). */
export function askedBy(decision: PolicyDecision): string[] {
  const asked = decision.checks.filter((c) => c.action === 'ask');
  return (asked.length ? asked : [decision]).map((c) => {
    // A rule made on the spot (the loop guard's) has no place in a layer: its reason says it all.
    const rule =
      c.source === 'policy' && c.rule && c.ruleIndex === undefined
        ? (c.rule.reason ?? JSON.stringify(c.rule))
        : sourceText(c);
    return `${c.check.label}, asked by ${rule}`;
  });
}

/** How `run` and `agent` answer asks. */
export interface TerminalApproverOptions {
  /** `--yes`: approve every ask, saying so on stderr. */
  yes: boolean;
  /** The command, for sentences (`run`, `agent`). */
  command: string;
  /** Where answers are read from (default process.stdin); a human is asked only when it is a TTY. */
  input?: Readable & { isTTY?: boolean };
  /** Where asks and notes go (default process.stderr). */
  output?: Writable;
  /** Aborting it (Ctrl-C) answers a waiting ask with no. */
  signal?: AbortSignal;
}

/** The approver of `run` / `agent`; `refused` tells the command that a refusal was already said to the human. */
export interface TerminalApprover {
  onPermissionRequest: OnPermissionRequest;
  refused: boolean;
}

/** The approver of `toolbelt run` and `toolbelt agent` (see the file comment). */
export function terminalApprover(options: TerminalApproverOptions): TerminalApprover {
  const input = options.input ?? process.stdin;
  const output = options.output ?? process.stderr;
  // One ask at a time (an agent may make several calls at once); what was answered "always" is not
  // asked again by an ask that waited behind it.
  let queue: Promise<unknown> = Promise.resolve();
  const always = new Set<string>();
  const keyOf = (decision: PolicyDecision) =>
    decision.checks
      .filter((c) => c.action === 'ask')
      .map((c) => `${c.check.tool}\0${c.check.label}`)
      .join('\n');

  const approver: TerminalApprover = {
    refused: false,
    onPermissionRequest: (req) => {
      if (options.yes) {
        output.write(`toolbelt: --yes approved ${callText(req)}: ${askedBy(req.decision).join('; ')}\n`);
        return 'once';
      }
      if (!input.isTTY) {
        approver.refused = true;
        output.write(
          `toolbelt: ${callText(req)} was not run: the policy asks for approval (${askedBy(req.decision).join('; ')}), ` +
            `and there is no terminal to ask you at (stdin is not a TTY). Run the command in a terminal to answer, ` +
            `add --yes to approve what the policy asks about, or allow the call in the policy file ` +
            `("toolbelt policy show" lists the rules).\n`,
        );
        throw new Error(`no one can approve it: toolbelt ${options.command} runs without a terminal and without --yes`);
      }
      const answer = queue.then(() => ask(req));
      queue = answer.catch(() => undefined);
      return answer;
    },
  };

  async function ask(req: PermissionRequest): Promise<PermissionReply> {
    const key = keyOf(req.decision);
    if (key && always.has(key)) return 'once';
    output.write([`toolbelt: ${callText(req)}`, ...askedBy(req.decision).map((a) => `  ${a}`)].join('\n') + '\n');
    for (;;) {
      const line = await readAnswer(
        input,
        output,
        'Allow it? [y] yes, once  [n] no  [a] always for this session: ',
        options.signal,
      );
      const reply = line?.trim().toLowerCase();
      if (reply === 'y' || reply === 'yes') return 'once';
      if (reply === 'a' || reply === 'always') {
        if (key) always.add(key);
        return 'always';
      }
      if (reply === undefined || reply === 'n' || reply === 'no' || reply === '') {
        approver.refused = true;
        output.write(
          `toolbelt: ${req.toolId} was not run: ${reply === undefined ? 'no answer' : 'you answered no'}.\n`,
        );
        return 'reject';
      }
      output.write(`Answer y, n or a (got ${JSON.stringify(line)}).\n`);
    }
  }
  return approver;
}

/** One line read from `input` after `prompt`; undefined at the end of input or on abort. */
function readAnswer(
  input: Readable,
  output: Writable,
  prompt: string,
  signal?: AbortSignal,
): Promise<string | undefined> {
  if (signal?.aborted) return Promise.resolve(undefined);
  return new Promise((resolve) => {
    const rl = readline.createInterface({ input, terminal: false });
    let done = false;
    const finish = (line: string | undefined) => {
      if (done) return;
      done = true;
      signal?.removeEventListener('abort', onAbort);
      rl.close();
      resolve(line);
    };
    const onAbort = () => finish(undefined);
    signal?.addEventListener('abort', onAbort, { once: true });
    rl.once('line', (line) => finish(line));
    rl.once('close', () => finish(undefined));
    output.write(prompt);
  });
}

/** The answer an elicitation asks for: this call, or every call like it for the rest of the session. */
const ELICITED_SCHEMA = {
  type: 'object' as const,
  properties: {
    decision: {
      type: 'string' as const,
      title: 'Allow this call?',
      enum: ['once', 'always'],
      enumNames: ['Yes, this call', 'Yes, and for the rest of this session'],
    },
  },
  required: ['decision'],
};

/**
 * The approver of `toolbelt mcp`: each ask goes to the client the call came from as an
 * `elicitation/create` request (form mode). Accepted: the call runs (`always`: the same checks are
 * allowed for the rest of the session); declined or cancelled: refused. A client that did not
 * declare the elicitation capability is not asked: the call is refused with a sentence saying so.
 */
export function mcpClientApprover(): OnPermissionRequest {
  return async (req) => {
    const call = currentMcpCall();
    if (!call) throw new Error('the call did not come from an MCP client, so no one can be asked');
    if (!call.server.getClientCapabilities()?.elicitation?.form)
      throw new Error(
        'the MCP client does not support elicitation (it did not declare the capability), so its user cannot be asked; allow the call in the policy file toolbelt mcp was started with (--policy), or use a client that supports elicitation',
      );
    const message = `Run ${callText(req)}?\nThe policy asks about it: ${askedBy(req.decision).join('; ')}.`;
    let result;
    try {
      result = await call.server.elicitInput(
        { mode: 'form', message, requestedSchema: ELICITED_SCHEMA },
        { relatedRequestId: call.requestId, signal: call.signal, timeout: MCP_APPROVAL_TIMEOUT_MS },
      );
    } catch (err) {
      throw new Error(`the MCP client did not answer the approval request (${(err as Error).message})`, {
        cause: err,
      });
    }
    if (result.action !== 'accept') return 'reject'; // declined or cancelled
    return result.content?.decision === 'always' ? 'always' : 'once';
  };
}

/** Sets the approver of the policy the command runs under (none with --no-policy). */
export function useApprover(policy: Policy | undefined, approver: OnPermissionRequest): void {
  if (policy) policy.onPermissionRequest = approver;
}
