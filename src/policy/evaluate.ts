/**
 * Judges checks against rules. Precedence is by action, never by order: a matching deny wins;
 * then a session approval ("always"); then a matching ask; then a matching allow; then the
 * policy's default. A narrow allow therefore cannot widen a broad deny or ask, and "always" never
 * overrides a deny. A check whose subject cannot be known matches no pattern and is at least asked.
 * Must not build checks (checks.ts) or ask the approver (policy.ts): it only judges what it is given.
 */
import { atLeast } from '../tools/bash/danger.js';
import { matchPath, matchText } from './glob.js';
import type { CheckDecision, PolicyAction, PolicyCheck, PolicyRule, PolicySubject } from './types.js';

const STRICTNESS: Record<PolicyAction, number> = { allow: 0, ask: 1, deny: 2 };

/** The stricter of two actions. */
export function stricter(a: PolicyAction, b: PolicyAction): PolicyAction {
  return STRICTNESS[a] >= STRICTNESS[b] ? a : b;
}

/** Judges one check; `approved` finds the session's "always" approval for it, if any. */
export function judge(
  check: PolicyCheck,
  rules: readonly PolicyRule[],
  fallback: PolicyAction,
  approved: (check: PolicyCheck) => PolicyRule | undefined = () => undefined,
): CheckDecision {
  const first = (action: PolicyAction, list: readonly PolicyRule[]) => {
    const i = list.findIndex((r) => r.action === action && ruleMatches(r, check));
    return i === -1 ? undefined : i;
  };
  const deny = first('deny', rules);
  if (deny !== undefined) return { check, action: 'deny', source: 'policy', rule: rules[deny], ruleIndex: deny };
  if (check.unknown) {
    // A deny or ask pattern might have matched the subject, had it been known: ask.
    // A file a bash command names is a path: rules about bash's command text do not apply to it.
    const aboutCommands = (r: PolicyRule) =>
      check.restrictsOnly === true && r.permission === undefined && r.tool !== undefined && matchText(r.tool, 'bash');
    const i = rules.findIndex(
      (r) => r.action !== 'allow' && r.pattern !== undefined && !aboutCommands(r) && ruleMatches(r, check, true),
    );
    if (i !== -1) return { check, action: 'ask', source: 'unknown-subject', rule: rules[i], ruleIndex: i };
  }
  const always = check.unknown ? undefined : approved(check);
  if (always) return { check, action: 'allow', source: 'session', rule: always };
  const ask = first('ask', rules);
  if (ask !== undefined) return { check, action: 'ask', source: 'policy', rule: rules[ask], ruleIndex: ask };
  if (check.restrictsOnly) return { check, action: 'allow', source: 'default' };
  const allow = first('allow', rules);
  if (allow !== undefined) return { check, action: 'allow', source: 'policy', rule: rules[allow], ruleIndex: allow };
  if (check.unknown && fallback === 'allow') return { check, action: 'ask', source: 'unknown-subject' };
  return { check, action: fallback, source: 'default' };
}

/** Whether every selector the rule names matches the check. */
function ruleMatches(rule: PolicyRule, check: PolicyCheck, ignoreSubject = false): boolean {
  if (rule.tool !== undefined && !matchText(rule.tool, check.tool)) return false;
  if (rule.permission !== undefined && !check.permissions.includes(rule.permission)) return false;
  if (rule.danger !== undefined) {
    // Deny/ask reach up (dangerous is at least moderate); allow reaches down (safe is at most moderate).
    const ok = rule.action === 'allow' ? atLeast(rule.danger, check.danger) : atLeast(check.danger, rule.danger);
    if (!ok) return false;
  }
  if (ignoreSubject) return true;
  if (rule.outsideWorkspace !== undefined) {
    if (check.unknown || check.subject?.kind !== 'path') return false;
    if (!!check.subject.outside !== rule.outsideWorkspace) return false;
  }
  if (rule.pattern !== undefined) {
    if (check.unknown || !check.subject) return false;
    return subjectMatches(rule.pattern, check.subject, rule.action);
  }
  return true;
}

/**
 * Deny and ask patterns match when any spelling of the subject matches (a link to `.env` is
 * `.env`); allow patterns only when every spelling does (a link inside `src/` to `/etc` is not
 * `src/**`).
 */
function subjectMatches(pattern: string, subject: PolicySubject, action: PolicyAction): boolean {
  const spellings = [subject.value, ...(subject.also ?? [])];
  const one = (value: string, index: number): boolean => {
    switch (subject.kind) {
      case 'path':
        return matchPath(pattern, value);
      case 'url':
        // A pattern with a scheme matches the URL, any other the host.
        return pattern.includes('://')
          ? index === 0 && matchText(pattern, value)
          : index > 0 && matchText(pattern, value);
      default:
        return matchText(pattern, value);
    }
  };
  if (subject.kind === 'url') return spellings.some(one);
  return action === 'allow' ? spellings.every(one) : spellings.some(one);
}
