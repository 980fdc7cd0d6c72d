/**
 * The sentences a policy decision becomes: for `toolbelt policy explain`, the approver, and the model.
 * Must not make decisions: it only words the ones evaluate.ts and policy.ts made.
 */
import type { CheckDecision, PolicyDecision, PolicyRule } from './types.js';

/** A rule as one line of JSON (how users wrote it). */
function ruleText(rule: PolicyRule): string {
  return JSON.stringify(rule);
}

/** `rule #2` for the policy's own rules, `default rule #18` for the defaults it extends. */
function ruleName(d: CheckDecision): string {
  return `${d.layer === 'defaults' ? 'default rule' : 'rule'} #${d.ruleIndex! + 1}`;
}

/** Which rule made a check's decision, in words. */
export function sourceText(d: CheckDecision): string {
  switch (d.source) {
    case 'policy':
      return `${ruleName(d)} ${ruleText(d.rule!)}`;
    case 'session':
      return `an "always" approval earlier in this session`;
    case 'unknown-subject':
      return d.rule
        ? `${ruleName(d)} ${ruleText(d.rule)} might match, but ${d.check.unknown}`
        : `no rule can judge it: ${d.check.unknown}`;
    default:
      return d.check.restrictsOnly
        ? 'no deny or ask rule matches this file (files a command names only ever restrict it)'
        : `the policy's default ("${d.action}"), since no rule matches`;
  }
}

/** One sentence: the action, for which check, by which rule. */
export function explainDecision(d: PolicyDecision): string {
  const why = d.rule?.reason ? ` (${d.rule.reason})` : '';
  return `${d.action} ${d.check.label}: ${sourceText(d)}${why}.`;
}

type RefusalKind = 'denied' | 'no-approver' | 'rejected' | 'approver-failed';

/** What the model reads when a call is not run. */
export function refusalMessage(d: PolicyDecision, kind: RefusalKind = 'denied', detail?: string): string {
  const what = `The ${d.toolId} call was not run`;
  const why = `${d.check.label} ${d.action === 'deny' ? 'is denied' : 'needs approval'} by ${sourceText(d)}${d.rule?.reason ? ` (${d.rule.reason})` : ''}`;
  switch (kind) {
    case 'denied':
      return `${what}: ${why}. Do not retry it; do the task another way or tell the user it is not permitted.`;
    case 'no-approver':
      return `${what}: ${why}, and no approver is configured to grant it. Do not retry it; do the task another way or ask the user to allow it in the policy.`;
    case 'rejected':
      return `${what}: the user rejected it${detail ? ` with this message: ${detail}` : ''}. Do not retry the same call.`;
    default:
      return `${what}: ${why}, and asking for approval failed (${detail}). Do not retry it now.`;
  }
}

/** Why a redirect hop may not be followed, as a clause (src/net/redirects.ts makes the sentence). */
export function hopRefusal(d: PolicyDecision, unapproved?: string): string {
  const why = `${d.check.label} ${d.action === 'deny' ? 'is denied' : 'needs approval'} by ${sourceText(d)}${d.rule?.reason ? ` (${d.rule.reason})` : ''}`;
  return unapproved ? `${why}, and ${unapproved}` : why;
}
