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
import { matchPath } from '../policy/glob.js';
import type { CheckDecision, PolicyCheck, PolicyDecision } from '../policy/types.js';

/** What the policy needs to know about the sandbox a call would run in. */
export interface SandboxPolicyFacts {
  /** `sandbox.autoAllow` for the call's init context. */
  autoAllow: boolean;
  /** Whether the call's commands would run contained (probes the engine once per registry). */
  enabled(): Promise<boolean>;
  /**
   * Whether a path (workspace-relative or absolute, as a check's subject names it) is hidden from the
   * call's commands. Absent: no path counts as hidden, so no secret read is lifted.
   */
  hidden?(path: string): Promise<boolean>;
}

/** Whether a path looks like a secret file (the default policy's secret patterns, at any depth). */
function secretLooking(p: string): boolean {
  const rel = p.replace(/^\/+/, '');
  return SECRET_FILE_PATTERNS.some((g) => matchPath(g, rel) || matchPath(`**/${g}`, rel));
}

/** The tools whose asks the sandbox can answer: their processes run contained. */
const CONTAINED_TOOLS = ['bash'];

/** Why the sandbox contains this asking check, or undefined when it does not. */
export function containedReason(
  d: CheckDecision,
  namedByAskPattern: (check: PolicyCheck) => boolean = () => false,
  /** Whether the check's path is hidden from the call's commands (false when unknown). */
  hidden = false,
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
    // Only what the sandbox really hides for this call: a secret it did not find would be read in clear.
    if (d.rule.pattern !== undefined && SECRET_FILE_PATTERNS.includes(d.rule.pattern))
      return hidden ? 'it reads a secret file, which the sandbox hides' : undefined;
    if (!subject.outside) return undefined;
    return hidden || !secretLooking(subject.value)
      ? 'it reads outside the workspace, and the sandbox hides the secrets there'
      : undefined;
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
export async function liftContainedAsks(
  decision: PolicyDecision,
  /** Whether an ask rule with a pattern also matches the check (the first matching rule decided; others may name it too). */
  namedByAskPattern?: (check: PolicyCheck) => boolean,
  /** Whether a path is hidden from the call's commands (SandboxPolicyFacts.hidden). */
  hidden?: (path: string) => Promise<boolean>,
): Promise<PolicyDecision | undefined> {
  if (decision.action !== 'ask') return undefined;
  const asking = decision.checks.filter((c) => c.action === 'ask');
  if (decision.checks.some((c) => c.action === 'deny') || !asking.length) return undefined;
  const isHidden = async (c: CheckDecision) => {
    const s = c.check.subject;
    if (s?.kind !== 'path' || !hidden) return false;
    for (const p of [s.value, ...(s.also ?? [])]) if (await hidden(p)) return true;
    return false;
  };
  const reasons = await Promise.all(asking.map(async (c) => containedReason(c, namedByAskPattern, await isHidden(c))));
  if (reasons.some((r) => r === undefined)) return undefined;
  const why = [...new Set(reasons)].join('; ');
  return {
    ...decision,
    action: 'allow',
    sandbox: { autoAllowed: true, reason: why },
    reason: `allow ${decision.check.label} without asking: the OS sandbox contains it (sandbox.autoAllow): ${why}. Without the sandbox: ${decision.reason}`,
  };
}
