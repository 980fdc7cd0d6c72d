/**
 * `policyMiddleware(policy)`: human-in-the-loop for `createAgent`, decided per call by the policy's
 * rules and the call's arguments. It interrupts with the payload `humanInTheLoopMiddleware` uses
 * (`{ actionRequests, reviewConfigs }`, resumed with `{ decisions: [approve | edit | reject] }`), so
 * existing HITL UIs work. Each action request also carries the tool call `id` and `argsHash`: an
 * approval becomes a one-call grant bound to both, so it cannot run another or an edited call, and a
 * decision that names a different call, or that the policy now denies, is refused with a message.
 *
 * Imported from `agent-toolbelt/middleware` (it loads langchain; the main entry does not).
 * Must not judge rules itself: every decision is Policy.decide's (policy.ts).
 */
import { createMiddleware, AIMessage, ToolMessage, type ToolCall } from 'langchain';
import { interrupt } from '@langchain/langgraph';
import { argsHash } from './approvals.js';
import type { CheckEnvironment } from './checks.js';
import type { Policy } from './policy.js';
import type { PolicyDecision } from './types.js';

/** One call awaiting review, in humanInTheLoopMiddleware's shape plus the binding. */
export interface PolicyActionRequest {
  name: string;
  args: Record<string, unknown>;
  description: string;
  /** The tool call id this request is for. */
  id: string;
  /** Hash of the arguments under review (see `argsHash`). */
  argsHash: string;
}

/** What may be decided about a request (all three, as humanInTheLoopMiddleware's `true`). */
export interface PolicyReviewConfig {
  actionName: string;
  allowedDecisions: Array<'approve' | 'edit' | 'reject'>;
}

/** The interrupt value. */
export interface PolicyInterrupt {
  actionRequests: PolicyActionRequest[];
  reviewConfigs: PolicyReviewConfig[];
}

/** A reviewer's decision; `id`/`argsHash`, when given, must name the call under review. */
export type PolicyReviewDecision = (
  | { type: 'approve' }
  | { type: 'edit'; editedAction: { name: string; args: Record<string, unknown> } }
  | { type: 'reject'; message?: string }
) & { id?: string; argsHash?: string };

/** Options of `policyMiddleware`. */
export interface PolicyMiddlewareOptions {
  /** Where paths resolve and what the tools are; pass `registry.policyEnvironment(initCtx)` (default: cwd, no tool facts). */
  env?: CheckEnvironment;
}

type Review = { call: ToolCall & { id: string }; decision: PolicyDecision; hash: string };

/** The middleware; see the module comment. */
export function policyMiddleware(policy: Policy, options: PolicyMiddlewareOptions = {}) {
  const env = options.env ?? { workspaceRoot: process.cwd() };
  return createMiddleware({
    name: 'PolicyMiddleware',
    afterModel: {
      canJumpTo: ['model'],
      hook: async (state) => {
        const last = [...state.messages].reverse().find((m) => AIMessage.isInstance(m));
        if (!last || !AIMessage.isInstance(last) || !last.tool_calls?.length) return undefined;
        const answered = new Set(state.messages.filter((m) => ToolMessage.isInstance(m)).map((m) => m.tool_call_id));
        const reviews: Review[] = [];
        for (const call of last.tool_calls) {
          if (!call.id || answered.has(call.id)) continue;
          const decision = await policy.decide(call.name, call.args, env);
          // Allowed calls run; denied ones are refused by the pipeline with the rule's reason.
          if (decision.action === 'ask')
            reviews.push({ call: call as Review['call'], decision, hash: argsHash(call.name, call.args) });
        }
        if (!reviews.length) return undefined;
        const request: PolicyInterrupt = {
          actionRequests: reviews.map(({ call, decision, hash }) => ({
            name: call.name,
            args: call.args,
            description: `Tool execution requires approval: ${decision.reason}\n\nTool: ${call.name}\nArgs: ${JSON.stringify(call.args, null, 2)}`,
            id: call.id,
            argsHash: hash,
          })),
          reviewConfigs: reviews.map(({ call }) => ({
            actionName: call.name,
            allowedDecisions: ['approve', 'edit', 'reject'],
          })),
        };
        const response = interrupt<typeof request, { decisions?: PolicyReviewDecision[] } | undefined>(request);
        const decisions = response?.decisions;
        if (!Array.isArray(decisions) || decisions.length !== reviews.length) {
          throw new Error(
            `The resume value must be { decisions: [...] } with one decision per action request (${reviews.length}), in order; got ${JSON.stringify(response)}.`,
          );
        }
        const replies: ToolMessage[] = [];
        const calls = last.tool_calls.map((c) => ({ ...c }));
        for (let i = 0; i < reviews.length; i++) {
          const outcome = await apply(policy, env, reviews[i], decisions[i]);
          if (outcome.refusal) replies.push(refusal(reviews[i].call, outcome.refusal));
          if (outcome.args) calls.find((c) => c.id === reviews[i].call.id)!.args = outcome.args;
        }
        const revised = new AIMessage({ ...last, id: last.id, content: last.content, tool_calls: calls });
        const pending = calls.filter((c) => !answered.has(c.id!) && !replies.some((r) => r.tool_call_id === c.id));
        return { messages: [revised, ...replies], ...(pending.length ? {} : { jumpTo: 'model' as const }) };
      },
    },
  });
}

/** Applies one decision: a grant for the (possibly edited) call, or the refusal text. */
async function apply(
  policy: Policy,
  env: CheckEnvironment,
  review: Review,
  decision: PolicyReviewDecision,
): Promise<{ refusal?: string; args?: Record<string, unknown> }> {
  const { call, hash } = review;
  if (
    (decision.id !== undefined && decision.id !== call.id) ||
    (decision.argsHash !== undefined && decision.argsHash !== hash)
  ) {
    return {
      refusal: `The decision given for call ${call.id} of "${call.name}" was made for a different call (${decision.id ?? call.id}, arguments ${decision.argsHash ?? hash}), so it was not applied and the call was not run. Make the call again to ask for a new decision.`,
    };
  }
  if (decision.type === 'reject') {
    return {
      refusal: decision.message ?? `The user rejected the ${call.name} call (${call.id}). Do not retry the same call.`,
    };
  }
  let args = call.args as Record<string, unknown>;
  if (decision.type === 'edit') {
    const edited = decision.editedAction;
    if (!edited || edited.name !== call.name || !edited.args || typeof edited.args !== 'object') {
      return {
        refusal: `The edit for call ${call.id} must keep the tool "${call.name}" and give its arguments as an object; the call was not run.`,
      };
    }
    args = edited.args;
  } else if (decision.type !== 'approve') {
    return { refusal: `Unknown decision ${JSON.stringify(decision)} for call ${call.id}; the call was not run.` };
  }
  // The policy may have changed since the question was asked (a resume in another process, an edit).
  const now = await policy.decide(call.name, args, env);
  if (now.action === 'deny') {
    return { refusal: `The approval for call ${call.id} is stale: ${now.reason} The call was not run.` };
  }
  policy.grantCall(call.id, call.name, args);
  return decision.type === 'edit' ? { args } : {};
}

function refusal(call: ToolCall & { id: string }, text: string): ToolMessage {
  return new ToolMessage({ content: text, name: call.name, tool_call_id: call.id, status: 'error' });
}
