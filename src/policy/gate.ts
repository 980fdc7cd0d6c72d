/**
 * Step 2 of the pipeline for one registry: the loop guard, then the policy (with its approver).
 * The registry owns one gate, so loop-guard memory and the environment are per registry.
 * Must not judge rules or ask the approver itself: both are the Policy's (policy.ts authorize, requestApproval).
 */
import type { AuthorizeCall } from '../pipeline/call.js';
import type { Tool } from '../tool.js';
import { workspaceRootFor } from '../workspace.js';
import type { CheckEnvironment, ToolFacts } from './checks.js';
import { LoopGuard } from './loop-guard.js';
import { refusalMessage } from './messages.js';
import type { Policy } from './policy.js';
import type { ApprovalRecords } from './approvals.js';
import type { LoopGuardOptions, PolicyDecision } from './types.js';

/** The gate's settings, from `createRegistry({ policy, loopGuard })`. */
export interface GateOptions {
  policy?: Policy;
  /** Default: the policy's `loopGuard`, else on with threshold 3; `false` turns it off. */
  loopGuard?: LoopGuardOptions | false;
}

/** Loop guard + policy for one registry. */
export class PolicyGate {
  policy?: Policy;
  loopGuard?: LoopGuard;

  constructor(
    private readonly facts: (toolId: string) => ToolFacts | undefined,
    options: GateOptions = {},
    /** Where a call's "always" approvals live when the registry has a store. */
    private readonly approvalsFor: (ctx: AuthorizeCall['ctx']) => ApprovalRecords | undefined = () => undefined,
  ) {
    this.configure(options);
  }

  /** Replaces the policy and/or loop guard settings. */
  configure(options: GateOptions): void {
    if ('policy' in options) this.policy = options.policy;
    const guard = options.loopGuard ?? this.policy?.loopGuard ?? {};
    this.loopGuard = guard === false ? undefined : new LoopGuard(guard);
  }

  /** Where paths of calls made under `initCtx` resolve, and what the tools are. */
  environment(initCtx: Tool.InitContext = {}): CheckEnvironment {
    const extra = Array.isArray(initCtx.additionalRoots) ? initCtx.additionalRoots : undefined;
    const env: CheckEnvironment = {
      workspaceRoot: workspaceRootFor(initCtx),
      additionalRoots: extra,
      toolFacts: this.facts,
    };
    if (initCtx.backend !== undefined) env.backendPaths = true; // paths are the backend's (checks.ts)
    return env;
  }

  /** The pipeline's step 2; synchronous undefined when nothing needs judging. */
  authorize(call: AuthorizeCall): Promise<string | undefined> | string | undefined {
    const sessionID = call.ctx?.sessionID ?? 'default';
    let repeated: number | undefined;
    // Calls without a session are a program's, not a model's: the guard watches sessions only.
    if (this.loopGuard && call.ctx?.sessionID !== undefined) {
      const count = this.loopGuard.note(sessionID, call.toolId, call.rawArgs, call.ctx.messageID);
      if (this.loopGuard.trips(count)) {
        if (this.loopGuard.action === 'deny' || !this.policy) return this.loopGuard.message(call.toolId, count);
        repeated = count;
      }
    }
    if (!this.policy) return undefined;
    return this.judge(this.policy, call, sessionID, repeated);
  }

  private async judge(
    policy: Policy,
    call: AuthorizeCall,
    sessionID: string,
    repeated?: number,
  ): Promise<string | undefined> {
    const initCtx = (call.ctx?.extra?.initCtx ?? {}) as Tool.InitContext;
    const req = {
      toolId: call.toolId,
      args: call.args,
      callID: call.callID,
      sessionID,
      env: this.environment(initCtx),
      approvals: this.approvalsFor(call.ctx),
    };
    // Approvals are bound to the arguments as the caller sent them.
    const result = await policy.authorize({ ...req, args: call.args, hashArgs: call.rawArgs });
    if (!result.allowed) return result.message;
    if (repeated === undefined) return undefined;
    const decision: PolicyDecision = {
      ...result.decision,
      action: 'ask',
      source: 'policy',
      rule: { tool: call.toolId, action: 'ask', reason: `the same call was made ${repeated} times in a row` },
      ruleIndex: undefined,
      reason: `ask ${result.decision.check.label}: the loop guard (the same call ${repeated} times in a row).`,
    };
    const asked = await policy.requestApproval({ ...req, hashArgs: call.rawArgs }, decision);
    return asked.allowed ? undefined : asked.message || refusalMessage(decision, 'no-approver');
  }
}
