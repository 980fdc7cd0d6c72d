/**
 * A policy: rules plus the approvals given while it runs ("always" answers per session, one-call
 * grants from the LangChain middleware). `decide` says what the rules say about a call;
 * `authorize` is the pipeline's step 2 — it asks the approver when the rules say `ask`.
 * Must not match patterns or build checks itself: evaluate.ts, glob.ts and checks.ts do.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { argsHash, CallGrants, type ApprovalRecords } from './approvals.js';
import { checksOf, defaultDanger, readTreeEntries, type CheckEnvironment } from './checks.js';
import { ReadPathFilter } from './read-filter.js';
import { DEFAULT_POLICY } from './defaults.js';
import { judge, needsEntries, rulesFor, stricter } from './evaluate.js';
import { explainDecision, refusalMessage } from './messages.js';
import { parsePolicyText, validatePolicy } from './rules.js';
import { liftContainedAsks } from '../sandbox/auto-allow.js';
import { liftSkillAsks } from '../skills/allowed-tools.js';
import type {
  CheckDecision,
  LoopGuardOptions,
  OnPermissionRequest,
  PermissionAnswer,
  PolicyAction,
  PolicyCheck,
  PolicyConfig,
  PolicyDecision,
  PolicyLayer,
  PolicyRule,
} from './types.js';

/** The file the CLI looks for in the working directory. */
export const POLICY_FILE_NAME = 'toolbelt.policy.json';
/** Sessions whose "always" approvals a policy keeps; the least recently used is dropped past it. */
export const MAX_APPROVAL_SESSIONS = 1000;

/** Options of `createPolicy`. */
export interface PolicyOptions {
  /** Asked when a rule says `ask`; without it, `ask` is a denial the model can read. */
  onPermissionRequest?: OnPermissionRequest;
}

/** The order in which rules decide, strongest first (docs/permissions.md, "Precedence"). */
export const PRECEDENCE: readonly string[] = [
  'deny (policy or defaults)',
  'an "always" approval of this session',
  'ask (policy)',
  'allow (policy)',
  'ask (defaults)',
  'allow (defaults)',
  'the default action',
];

/** The merged policy: both layers and how they combine. */
export interface MergedPolicy {
  extends: boolean;
  default: PolicyAction;
  loopGuard: LoopGuardOptions | false;
  precedence: readonly string[];
  layers: Array<{ layer: PolicyLayer; rules: PolicyRule[] }>;
  /** The file's OS sandbox settings, when it has them (docs/sandbox.md). */
  sandbox?: PolicyConfig['sandbox'];
}

/** One call as the pipeline hands it to the policy. */
export interface AuthorizeRequest {
  toolId: string;
  args: unknown;
  callID: string;
  sessionID: string;
  env: CheckEnvironment;
  /** The arguments approvals are bound to, when they differ from `args` (the call as sent, before repair). */
  hashArgs?: unknown;
  /** Where "always" approvals live when the registry has a store (default: this policy's memory). */
  approvals?: ApprovalRecords;
}

/** The search call a read filter is for (`Policy.readFilter`): its arguments, session and stored approvals. */
export interface SearchCall {
  /** The call's arguments; without them no ask is taken as answered by the call itself. */
  args?: unknown;
  sessionID?: string;
  approvals?: ApprovalRecords;
}

/** `undefined` when the call may run, else the message the model reads. */
export type Authorization =
  { allowed: true; decision: PolicyDecision } | { allowed: false; message: string; decision?: PolicyDecision };

/** Rules and the approvals given under them. */
export class Policy {
  /** The policy's own rules (the `policy` layer). */
  readonly rules: readonly PolicyRule[];
  /** The rules it extends (the `defaults` layer): DEFAULT_POLICY's, or none with `extends: false`. */
  readonly defaults: readonly PolicyRule[];
  /** Whether the policy is layered over DEFAULT_POLICY. */
  readonly extendsDefaults: boolean;
  /** What a check no rule matches gets. */
  readonly fallback: PolicyAction;
  readonly loopGuard: LoopGuardOptions | false;
  /** The file's `"sandbox"` options, if it had any (the CLI hands them to its registry). */
  readonly sandbox?: PolicyConfig['sandbox'];
  onPermissionRequest?: OnPermissionRequest;
  /** One-call grants (call id + arguments hash). */
  readonly grants = new CallGrants();
  private readonly sessions = new Map<string, Map<string, PolicyRule>>();

  constructor(config: PolicyConfig = DEFAULT_POLICY, options: PolicyOptions = {}) {
    validatePolicy(config);
    const freeze = (rules: readonly PolicyRule[]) => Object.freeze(rules.map((r) => Object.freeze({ ...r })));
    this.extendsDefaults = config.extends !== false;
    // The defaults themselves are one layer, not two copies of it.
    const own = config === DEFAULT_POLICY ? [] : config.rules;
    this.rules = freeze(own);
    this.defaults = freeze(this.extendsDefaults ? DEFAULT_POLICY.rules : []);
    this.fallback = config.default ?? (this.extendsDefaults ? DEFAULT_POLICY.default : undefined) ?? 'allow';
    const guard = config.loopGuard ?? (this.extendsDefaults ? DEFAULT_POLICY.loopGuard : undefined);
    this.loopGuard = guard === false ? false : { threshold: 3, action: 'deny', ...guard };
    this.onPermissionRequest = options.onPermissionRequest;
    if (config.sandbox) this.sandbox = config.sandbox;
  }

  /** The policy's own rules as a policy file would hold them (the defaults it extends are not repeated). */
  toJSON(): PolicyConfig {
    const out: PolicyConfig = {
      default: this.fallback,
      rules: this.rules.map((r) => ({ ...r })),
      loopGuard: this.loopGuard,
      ...(this.sandbox ? { sandbox: this.sandbox } : {}),
    };
    if (!this.extendsDefaults) out.extends = false;
    return out;
  }

  /** The merged policy, layer by layer in precedence order (what `toolbelt policy show` prints). */
  merged(): MergedPolicy {
    return {
      extends: this.extendsDefaults,
      default: this.fallback,
      loopGuard: this.loopGuard,
      precedence: PRECEDENCE,
      layers: [
        { layer: 'policy', rules: this.rules.map((r) => ({ ...r })) },
        { layer: 'defaults', rules: this.defaults.map((r) => ({ ...r })) },
      ],
      ...(this.sandbox ? { sandbox: this.sandbox } : {}),
    };
  }

  /** What the rules (and this session's "always" approvals) say about a call. */
  async decide(
    toolId: string,
    args: unknown,
    env: CheckEnvironment,
    sessionID?: string,
    stored?: ApprovalRecords,
  ): Promise<PolicyDecision> {
    return this.decideChecks(toolId, await checksOf(toolId, args, env), sessionID, env.sandbox, stored, env.skills);
  }

  /** What the rules say about checks already built (a call's, or a redirect hop's from `urlChecks`). */
  async decideChecks(
    toolId: string,
    checks: PolicyCheck[],
    sessionID?: string,
    sandbox?: CheckEnvironment['sandbox'],
    stored?: ApprovalRecords,
    skills?: CheckEnvironment['skills'],
  ): Promise<PolicyDecision> {
    const all = [...this.rules, ...this.defaults];
    for (const c of checks) if (needsEntries(c, all)) await readTreeEntries(c.subject!);
    const approvals = await this.approvalsOf(sessionID, stored);
    const layers = { policy: this.rules, defaults: this.defaults };
    const decisions = checks.map((c) => judge(c, layers, this.fallback, (k) => approvals?.get(approvalKey(k))));
    let worst: CheckDecision = decisions[0];
    for (const d of decisions) if (stricter(d.action, worst.action) !== worst.action) worst = d;
    const decision: PolicyDecision = { ...worst, toolId, checks: decisions, reason: '' };
    decision.reason = explainDecision(decision);
    // sandbox.autoAllow: asks about what the OS sandbox contains need no answer while it is on.
    if (decision.action === 'ask' && sandbox?.autoAllow && (await sandbox.enabled())) {
      const lifted = liftContainedAsks(decision, (c) => this.askedByPattern(c));
      if (lifted) return lifted;
    }
    // skills.honorAllowedTools: asks about tools a skill this session loaded pre-approves.
    if (decision.action === 'ask' && skills) return liftSkillAsks(decision, skills(sessionID)) ?? decision;
    return decision;
  }

  /**
   * What a search call of `toolId` (grep, glob, list over a directory) must leave out of its walk:
   * the paths under it this tool may not read (a deny rule with a pattern, or `outsideWorkspace`, or
   * a `default: deny`), and those whose read would ask (an ask rule with a pattern or
   * `outsideWorkspace`: the defaults' secret files) unless this session approved that read "always"
   * or the call itself was asked by that rule (it runs, so the ask was answered for what it covers).
   * Undefined when no rule can refuse or ask about one, so such walks pay nothing.
   */
  async readFilter(toolId: string, env: CheckEnvironment, call: SearchCall = {}): Promise<ReadPathFilter | undefined> {
    const facts = env.toolFacts?.(toolId);
    const permissions = facts?.permissions ?? [];
    const base = { tool: toolId, permissions, danger: facts?.danger ?? defaultDanger(permissions) };
    const rules = rulesFor({ ...base, label: '' }, { policy: this.rules, defaults: this.defaults });
    const bySubject = (r: PolicyRule) => r.pattern !== undefined || r.outsideWorkspace !== undefined;
    // An ask about every path asked about the search call itself; one the call's own check matches was
    // answered when it ran (an approver's "once" is bound to the call's arguments: it cannot cover
    // another path, but the walk is that call).
    const answered = new Set<PolicyRule>();
    if ('args' in call) {
      const asks = [...rules.policy, ...rules.defaults].filter((r) => r.action === 'ask' && bySubject(r));
      if (asks.length)
        for (const c of await checksOf(toolId, call.args, env))
          for (const r of asks) if (judge(c, [r], 'allow').source === 'policy') answered.add(r);
    }
    const keep = (r: PolicyRule) => r.action !== 'ask' || (bySubject(r) && !answered.has(r));
    const judged = { policy: rules.policy.filter(keep), defaults: rules.defaults.filter(keep) };
    const refuses =
      this.fallback === 'deny' ||
      [...judged.policy, ...judged.defaults].some((r) => r.action !== 'allow' && bySubject(r));
    if (!refuses) return undefined;
    // "Always" approvals are per tool and path (approvalKey), so each path the walk finds can be looked up.
    const approvals = await this.approvalsOf(call.sessionID, call.approvals);
    const approved = approvals?.size ? (c: PolicyCheck) => approvals.get(approvalKey(c)) : undefined;
    // A backend's paths are `/`-rooted and not on this disk: judged as they are (checks.ts judges them so).
    if (env.backendPaths) return new ReadPathFilter(base, judged, this.fallback, ['/'], ['/'], approved).onBackend();
    const roots = [env.workspaceRoot, ...(env.additionalRoots ?? [])].map((r) => path.resolve(r));
    const realRoots = await Promise.all(roots.map((r) => fs.realpath(r).catch(() => r)));
    return new ReadPathFilter(base, judged, this.fallback, roots, realRoots, approved);
  }

  private async approvalsOf(
    sessionID?: string,
    stored?: ApprovalRecords,
  ): Promise<Map<string, PolicyRule> | undefined> {
    if (sessionID === undefined) return undefined;
    return stored ? stored.get(sessionID) : this.sessions.get(sessionID);
  }

  /** Whether an ask rule naming a pattern matches the check (the user asked to be asked about it). */
  private askedByPattern(check: PolicyCheck): boolean {
    const named = judge(
      check,
      this.rules.filter((r) => r.action === 'ask' && r.pattern !== undefined),
      'allow',
    );
    return named.action === 'ask' && named.source === 'policy';
  }

  /** Lets call `callID` run once with exactly these arguments (an approval from a reviewer). */
  grantCall(callID: string, toolId: string, args: unknown): void {
    this.grants.grant(callID, argsHash(toolId, args));
  }

  /** Allows, for the rest of the session, every check of `decision` that asked (in `stored` when given). */
  allowForSession(sessionID: string, decision: PolicyDecision, stored?: ApprovalRecords): void | Promise<void> {
    const entries: Array<[string, PolicyRule]> = [];
    for (const d of decision.checks) {
      if (d.action !== 'ask' || d.check.unknown) continue;
      const rule: PolicyRule = {
        tool: d.check.tool,
        action: 'allow',
        reason: `approved "always" in session ${sessionID}`,
      };
      if (d.check.subject) rule.pattern = d.check.subject.value;
      entries.push([approvalKey(d.check), rule]);
    }
    if (stored) return stored.add(sessionID, entries);
    let approvals = this.sessions.get(sessionID);
    if (approvals) this.sessions.delete(sessionID);
    else approvals = new Map();
    this.sessions.set(sessionID, approvals);
    if (this.sessions.size > MAX_APPROVAL_SESSIONS) this.sessions.delete(this.sessions.keys().next().value!);
    for (const [key, rule] of entries) approvals.set(key, rule);
  }

  /** Forgets a session's "always" approvals (call when a session ends). */
  forgetSession(sessionID: string): void {
    this.sessions.delete(sessionID);
  }

  /** Step 2 of the pipeline: decide, and ask the approver when the rules say so. */
  async authorize(req: AuthorizeRequest): Promise<Authorization> {
    const decision = await this.decide(req.toolId, req.args, req.env, req.sessionID, req.approvals);
    if (decision.action === 'allow') return { allowed: true, decision };
    if (decision.action === 'deny') return { allowed: false, message: refusalMessage(decision), decision };
    const hash = argsHash(req.toolId, 'hashArgs' in req ? req.hashArgs : req.args);
    const granted = this.grants.take(req.callID, hash);
    if (granted === 'ok') return { allowed: true, decision };
    if (granted === 'stale') {
      return {
        allowed: false,
        decision,
        message: `The approval for call ${req.callID} of "${req.toolId}" was given for different arguments, so it does not cover this call. The call was not run; make the call again to ask for a new approval.`,
      };
    }
    return this.requestApproval(req, decision, hash);
  }

  /** Asks the approver about a call (`authorize` does this when the rules say `ask`). */
  async requestApproval(
    req: AuthorizeRequest,
    decision: PolicyDecision,
    hash = argsHash(req.toolId, 'hashArgs' in req ? req.hashArgs : req.args),
  ): Promise<Authorization> {
    const handler = this.onPermissionRequest;
    if (!handler) return { allowed: false, decision, message: refusalMessage(decision, 'no-approver') };
    let answer: PermissionAnswer;
    try {
      answer = await handler({
        toolId: req.toolId,
        callID: req.callID,
        sessionID: req.sessionID,
        args: req.args,
        argsHash: hash,
        decision,
      });
    } catch (err) {
      return { allowed: false, decision, message: refusalMessage(decision, 'approver-failed', (err as Error).message) };
    }
    const { reply, message } =
      typeof answer === 'string' ? { reply: answer, message: undefined } : (answer ?? { reply: undefined });
    if (reply === 'always') await this.allowForSession(req.sessionID, decision, req.approvals);
    if (reply === 'once' || reply === 'always') return { allowed: true, decision };
    if (reply === 'reject') return { allowed: false, decision, message: refusalMessage(decision, 'rejected', message) };
    return {
      allowed: false,
      decision,
      message: refusalMessage(decision, 'approver-failed', `unexpected reply ${JSON.stringify(answer)}`),
    };
  }
}

function approvalKey(check: PolicyCheck): string {
  return `${check.tool}\0${check.permissions.join(',')}\0${check.subject?.kind ?? ''}\0${check.subject?.value ?? ''}`;
}

/** Makes a policy from rules in code (default: DEFAULT_POLICY); throws a PolicyError listing every problem. */
export function createPolicy(config: PolicyConfig = DEFAULT_POLICY, options: PolicyOptions = {}): Policy {
  return new Policy(config, options);
}

/** Reads and validates a policy file; errors name the line and field. */
export async function loadPolicyFile(file: string, options: PolicyOptions = {}): Promise<Policy> {
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (err) {
    throw new Error(
      `Cannot read the policy file ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}. Check the path given to --policy.`,
      { cause: err },
    );
  }
  return new Policy(parsePolicyText(text, file), options);
}

/** `toolbelt.policy.json` in `dir`, if there is one. */
export async function findPolicyFile(dir: string): Promise<string | undefined> {
  const file = path.join(dir, POLICY_FILE_NAME);
  return fs.stat(file).then(
    (s) => (s.isFile() ? file : undefined),
    () => undefined,
  );
}
