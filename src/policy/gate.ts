/**
 * Step 2 of the pipeline for one registry: the loop guard, then the policy (with its approver); and
 * the policy's word on each redirect hop a running call is about to follow (`checkUrl`).
 * The registry owns one gate, so loop-guard memory and the environment are per registry.
 * Must not judge rules or ask the approver itself: both are the Policy's (policy.ts authorize, requestApproval).
 */
import type { AuthorizeCall } from '../pipeline/types.js';
import type { Tool } from '../authoring/tool.js';
import { workspaceRootFor } from '../workspace/workspace.js';
import { checksOf, urlChecks, type CheckEnvironment, type ToolFacts } from './checks.js';
import { LoopGuard, MAX_GUARDED_SESSIONS } from './loop-guard.js';
import { hopRefusal, refusalMessage } from './messages.js';
import type { Policy } from './policy.js';
import type { ApprovalRecords } from './approvals.js';
import type { LoopGuardOptions, PolicyDecision } from './types.js';
import type { SandboxPolicyFacts } from '../sandbox/auto-allow.js';
import type { SkillGrants } from '../skills/allowed-tools.js';

/** The gate's settings, from `createRegistry({ policy, loopGuard })`. */
export interface GateOptions {
  policy?: Policy;
  /** Default: the policy's `loopGuard`, else on with threshold 3; `false` turns it off. */
  loopGuard?: LoopGuardOptions | false;
  /** The OS sandbox of calls made under an init context (the registry's). */
  sandbox?: (initCtx: Tool.InitContext) => SandboxPolicyFacts;
  /** The skills' `allowed-tools` for calls made under an init context, when the registry honours them. */
  skills?: (initCtx: Tool.InitContext) => SkillGrants | undefined;
}

/** Loop guard + policy for one registry. */
export class PolicyGate {
  policy?: Policy;
  loopGuard?: LoopGuard;
  private sandbox?: (initCtx: Tool.InitContext) => SandboxPolicyFacts;
  private skills?: (initCtx: Tool.InitContext) => SkillGrants | undefined;
  /** Read-only repeats let through to see whether anything changed: call id -> its count in a row. */
  private readonly verifying = new Map<string, number>();

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
    if (options.sandbox) this.sandbox = options.sandbox;
    if (options.skills) this.skills = options.skills;
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
    if (this.sandbox) env.sandbox = this.sandbox(initCtx);
    const skills = this.skills?.(initCtx);
    if (skills) env.skills = skills;
    return env;
  }

  /** The pipeline's step 2; synchronous undefined when nothing needs judging. */
  authorize(call: AuthorizeCall): Promise<string | undefined> | string | undefined {
    const sessionID = call.ctx?.sessionID ?? 'default';
    // Calls without a session are a program's, not a model's: the guard watches sessions only.
    if (this.loopGuard && call.ctx?.sessionID !== undefined) {
      const count = this.loopGuard.note(sessionID, call.toolId, call.rawArgs, call.ctx.messageID);
      if (this.loopGuard.trips(count)) return this.repeat(this.loopGuard, call, sessionID, count);
    }
    if (!this.policy) return undefined;
    return this.judge(this.policy, call, sessionID);
  }

  /**
   * After a call ran: records its result for the loop guard. Returns the guard's refusal when the
   * call was a read-only repeat let through to see whether anything changed, and nothing did.
   */
  settled(call: AuthorizeCall, output: string): string | undefined {
    const verifying = this.verifying.get(call.callID);
    if (verifying !== undefined) this.verifying.delete(call.callID);
    if (!this.loopGuard || call.ctx?.sessionID === undefined) return undefined;
    const same = this.loopGuard.result(call.ctx.sessionID, call.toolId, call.rawArgs, output);
    return verifying !== undefined && same ? this.loopGuard.unchangedMessage(call.toolId, verifying) : undefined;
  }

  /** A call that repeats the last ones `threshold` times or more: refused only when it would make no progress. */
  private async repeat(
    guard: LoopGuard,
    call: AuthorizeCall,
    sessionID: string,
    count: number,
  ): Promise<string | undefined> {
    const facts = this.facts(call.toolId);
    // With `action: 'ask'` the approver decides before the call runs, read-only or not.
    const readOnly = guard.action === 'deny' && (await this.readOnly(call, facts));
    const verdict = guard.judge(sessionID, facts?.repeats === 'useless', readOnly);
    if (verdict === 'refuse') {
      if (guard.action === 'deny' || !this.policy) return guard.message(call.toolId, count);
      return this.judge(this.policy, call, sessionID, count);
    }
    const refusal = this.policy ? await this.judge(this.policy, call, sessionID) : undefined;
    if (refusal === undefined && verdict === 'verify') {
      this.verifying.set(call.callID, count);
      if (this.verifying.size > MAX_GUARDED_SESSIONS) this.verifying.delete(this.verifying.keys().next().value!);
    }
    return refusal;
  }

  /** Whether a call only reads (safe, no unknown part): running it again to see whether anything changed harms nothing. */
  private async readOnly(call: AuthorizeCall, facts: ToolFacts | undefined): Promise<boolean> {
    if (call.toolId === 'bash') {
      const env = this.environment(call.ctx?.extra?.initCtx ?? {});
      const checks = await checksOf('bash', call.args, env);
      return checks.every((c) => c.danger === 'safe' && !c.unknown);
    }
    const permissions = facts?.permissions ?? [];
    const danger =
      facts?.danger ?? (permissions.length > 0 && permissions.every((p) => p === 'read') ? 'safe' : 'moderate');
    return danger === 'safe';
  }

  /**
   * Judges a URL a running call is about to reach besides its arguments' (a redirect hop): undefined
   * when the policy allows it (or the approver grants it), else a clause saying why not.
   */
  async checkUrl(call: AuthorizeCall, url: string): Promise<string | undefined> {
    const policy = this.policy;
    if (!policy) return undefined;
    const sessionID = call.ctx?.sessionID ?? 'default';
    const env = this.environment(call.ctx?.extra?.initCtx ?? {});
    const decision = await policy.decideChecks(
      call.toolId,
      urlChecks(call.toolId, url, env),
      sessionID,
      undefined,
      undefined,
      env.skills,
    );
    if (decision.action === 'allow') return undefined;
    if (decision.action === 'deny') return hopRefusal(decision);
    const req = { toolId: call.toolId, args: call.args, callID: call.callID, sessionID, env, hashArgs: call.rawArgs };
    if (!policy.onPermissionRequest) return hopRefusal(decision, 'no approver is configured to grant it');
    const asked = await policy.requestApproval(req, decision);
    return asked.allowed ? undefined : hopRefusal(decision, 'the approver did not grant it');
  }

  /** The filter a search call's walk applies (see `Policy.readFilter`); undefined without a policy or a rule that can refuse a path. */
  readFilter(call: AuthorizeCall): Promise<Tool.ReadFilter | undefined> {
    if (!this.policy) return Promise.resolve(undefined);
    const env = this.environment(call.ctx?.extra?.initCtx ?? {});
    return this.policy.readFilter(call.toolId, env, {
      args: call.args,
      sessionID: call.ctx?.sessionID ?? 'default',
      approvals: this.approvalsFor(call.ctx),
    });
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
