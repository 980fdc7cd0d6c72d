/**
 * `sandbox.autoAllow`: a bash call the policy would only ask about because of what the OS sandbox
 * contains runs without asking while the sandbox is on. A check is contained when its ask comes
 * from the command's danger or from no rule at all (the sandbox bounds what any command does), from
 * text the parser cannot see (what the sandbox is for), from a read of a secret the sandbox hides,
 * or from a write outside the workspace (read-only in the sandbox). An ask rule naming a command
 * pattern, or a write inside the workspace, is the user's to answer; a deny always wins.
 * Must not judge rules (policy/) nor start the engine: it re-reads a decision the policy made.
 */
import { SECRET_FILE_PATTERNS } from '../policy/defaults.js';
import type { CheckDecision, PolicyCheck, PolicyDecision } from '../policy/types.js';

/** What the policy needs to know about the sandbox a call would run in. */
export interface SandboxPolicyFacts {
  /** `sandbox.autoAllow` for the call's init context. */
  autoAllow: boolean;
  /** Whether the call's commands would run contained (probes the engine once per registry). */
  enabled(): Promise<boolean>;
}

/** The tools whose asks the sandbox can answer: their processes run contained. */
const CONTAINED_TOOLS = ['bash'];

/** Why the sandbox contains this asking check, or undefined when it does not. */
export function containedReason(
  d: CheckDecision,
  namedByAskPattern: (check: PolicyCheck) => boolean = () => false,
): string | undefined {
  if (d.action !== 'ask' || !CONTAINED_TOOLS.includes(d.check.tool)) return undefined;
  const subject = d.check.subject;
  if (d.source === 'unknown-subject')
    return 'the parser cannot see what it runs, and the sandbox contains whatever it is';
  if (d.source === 'default') return 'no rule names it, and the sandbox bounds what it can do';
  if (d.source !== 'policy' || !d.rule) return undefined;
  if (subject?.kind === 'path') {
    if (d.check.permissions.includes('write'))
      return subject.outside ? 'it writes outside the workspace, which the sandbox keeps read-only' : undefined;
    if (d.rule.pattern !== undefined && SECRET_FILE_PATTERNS.includes(d.rule.pattern))
      return 'it reads a secret file, which the sandbox hides';
    return subject.outside ? 'it reads outside the workspace, and the sandbox hides the secrets there' : undefined;
  }
  // A rule about bash in general or its danger: the sandbox bounds the damage; a command pattern is the user's.
  if (d.rule.pattern === undefined && !namedByAskPattern(d.check))
    return `it is ${d.check.danger}, and the sandbox contains what it can do`;
  return undefined;
}

/**
 * The decision with its asks lifted when every asking check is one the sandbox contains (and none
 * is denied); undefined when the sandbox cannot answer for it.
 */
export function liftContainedAsks(
  decision: PolicyDecision,
  /** Whether an ask rule with a pattern also matches the check (the first matching rule decided; others may name it too). */
  namedByAskPattern?: (check: PolicyCheck) => boolean,
): PolicyDecision | undefined {
  if (decision.action !== 'ask') return undefined;
  const asking = decision.checks.filter((c) => c.action === 'ask');
  if (decision.checks.some((c) => c.action === 'deny') || !asking.length) return undefined;
  const reasons = asking.map((c) => containedReason(c, namedByAskPattern));
  if (reasons.some((r) => r === undefined)) return undefined;
  const why = [...new Set(reasons)].join('; ');
  return {
    ...decision,
    action: 'allow',
    sandbox: { autoAllowed: true, reason: why },
    reason: `allow ${decision.check.label} without asking: the OS sandbox contains it (sandbox.autoAllow): ${why}. Without the sandbox: ${decision.reason}`,
  };
}
