/**
 * Judges checks against rules in two layers, the policy's own and the defaults it extends.
 * Precedence is by layer and action, never by order: a matching deny (either layer) wins; then a
 * session approval ("always"); then the policy's ask, the policy's allow, the defaults' ask, the
 * defaults' allow; then the default action. Within a layer a narrow allow cannot widen a broad deny
 * or ask; a policy's allow pre-approves past a default ask, never past a deny; "always" never
 * overrides a deny. A check whose subject cannot be known matches no pattern and is at least asked.
 * Must not build checks (checks.ts) or ask the approver (policy.ts): it only judges what it is given.
 */
import { atLeast } from '../tools/bash/danger.js';
import { isAnchored, matchPath, matchText, matchUnder } from './glob.js';
import type { CheckDecision, PolicyAction, PolicyCheck, PolicyLayer, PolicyRule, PolicySubject } from './types.js';

const STRICTNESS: Record<PolicyAction, number> = { allow: 0, ask: 1, deny: 2 };

/** The stricter of two actions. */
export function stricter(a: PolicyAction, b: PolicyAction): PolicyAction {
  return STRICTNESS[a] >= STRICTNESS[b] ? a : b;
}

/** A policy's rules by layer: its own, and the defaults it extends (empty with `extends: false`). */
export interface LayeredRules {
  policy: readonly PolicyRule[];
  defaults: readonly PolicyRule[];
}

/**
 * Judges one check; `approved` finds the session's "always" approval for it, if any. Precedence
 * (docs/permissions.md has the table): a deny of either layer; a session approval; the policy's
 * ask; the policy's allow (a pre-approval, which beats a default ask); the defaults' ask; the
 * defaults' allow; the default action.
 */
export function judge(
  check: PolicyCheck,
  rules: LayeredRules | readonly PolicyRule[],
  fallback: PolicyAction,
  approved: (check: PolicyCheck) => PolicyRule | undefined = () => undefined,
): CheckDecision {
  const layers: LayeredRules = Array.isArray(rules)
    ? { policy: rules as readonly PolicyRule[], defaults: [] }
    : (rules as LayeredRules);
  const found = (
    layer: PolicyLayer,
    action: PolicyAction,
    test: (r: PolicyRule) => boolean = (r) => ruleMatches(r, check),
  ): CheckDecision | undefined => {
    const list = layers[layer];
    const i = list.findIndex((r) => r.action === action && test(r));
    return i === -1 ? undefined : { check, action, source: 'policy', rule: list[i], ruleIndex: i, layer };
  };
  const deny = found('policy', 'deny') ?? found('defaults', 'deny');
  if (deny) return deny;
  const aboutCommands = (r: PolicyRule) => aboutCommandsOf(r, check);
  if (check.unknown) {
    // A deny or ask pattern might have matched the subject, had it been known: ask.
    const mightMatch = (r: PolicyRule) => r.pattern !== undefined && !aboutCommands(r) && ruleMatches(r, check, true);
    const might =
      found('policy', 'deny', mightMatch) ??
      found('policy', 'ask', mightMatch) ??
      found('defaults', 'deny', mightMatch) ??
      found('defaults', 'ask', mightMatch);
    if (might) return { ...might, action: 'ask', source: 'unknown-subject' };
  }
  const always = check.unknown ? undefined : approved(check);
  if (always) return { check, action: 'allow', source: 'session', rule: always };
  const ask = found('policy', 'ask');
  if (ask) return ask;
  // A file a command names: only an allow about that file (not about the command) pre-approves it.
  const allow = found('policy', 'allow', (r) => !aboutCommands(r) && ruleMatches(r, check));
  if (allow) return allow;
  const defaultAsk = found('defaults', 'ask');
  if (defaultAsk) return defaultAsk;
  if (check.restrictsOnly) return { check, action: 'allow', source: 'default' };
  const defaultAllow = found('defaults', 'allow');
  if (defaultAllow) return defaultAllow;
  if (check.unknown && fallback === 'allow') return { check, action: 'ask', source: 'unknown-subject' };
  return { check, action: fallback, source: 'default' };
}

/**
 * A directory is judged as the paths under it (deny and ask only). Read (`inside`): a pattern that
 * covers any new path directly under it. Acted on as a whole: that, or a pattern matching a path
 * found under it; when the walk stopped early, any pattern that can match under it.
 */
function treeMatches(pattern: string, subject: PolicySubject, dir: string): boolean {
  const child = (rel: string) => (dir === '.' ? rel : `${dir}/${rel}`);
  if (!subject.tree) return false;
  if (matchPath(pattern, child('\0'))) return true;
  if (subject.tree === 'inside') return false;
  if (subject.entriesCut) return isAnchored(pattern) ? matchUnder(pattern, dir) : true;
  return (subject.entries ?? []).some((rel) => matchPath(pattern, child(rel)));
}

/** Whether a deny or ask pattern could apply to this check's whole tree: what is under it must be read. */
export function needsEntries(check: PolicyCheck, rules: readonly PolicyRule[]): boolean {
  if (check.subject?.tree !== 'whole') return false;
  return rules.some(
    (r) => r.action !== 'allow' && r.pattern !== undefined && !aboutCommandsOf(r, check) && ruleMatches(r, check, true),
  );
}

/**
 * The rules of each layer that can decide checks like `check` whatever their subject (their tool,
 * permission and danger selectors match): judging many subjects of one tool against these is cheaper.
 */
export function rulesFor(check: PolicyCheck, rules: LayeredRules): LayeredRules {
  const keep = (list: readonly PolicyRule[]) => list.filter((r) => ruleMatches(r, check, true));
  return { policy: keep(rules.policy), defaults: keep(rules.defaults) };
}

/** A file a bash command names is a path: a rule about bash's command text (`tool: bash`, no permission) is not about it. */
function aboutCommandsOf(r: PolicyRule, check: PolicyCheck): boolean {
  return (
    check.restrictsOnly === true && r.permission === undefined && r.tool !== undefined && matchText(r.tool, 'bash')
  );
}

/** Whether every selector the rule names matches the check. */
function ruleMatches(rule: PolicyRule, check: PolicyCheck, ignoreSubject = false): boolean {
  if (rule.tool !== undefined && !matchText(rule.tool, check.tool) && !(check.as && matchText(rule.tool, check.as)))
    return false;
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
    // Command patterns are not judged against the trees a command's files hold.
    return subjectMatches(rule.pattern, check.subject, rule.action, !aboutCommandsOf(rule, check));
  }
  return true;
}

function hostPattern(pattern: string): string {
  return pattern
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.+$/, '');
}

/**
 * Deny and ask patterns match when any spelling of the subject matches (a link to `.env` is
 * `.env`); allow patterns only when every spelling does (a link inside `src/` to `/etc` is not
 * `src/**`).
 */
function subjectMatches(pattern: string, subject: PolicySubject, action: PolicyAction, trees = true): boolean {
  const spellings = [subject.value, ...(subject.also ?? [])];
  const one = (value: string, index: number): boolean => {
    switch (subject.kind) {
      case 'path':
        return matchPath(pattern, value) || (trees && action !== 'allow' && treeMatches(pattern, subject, value));
      case 'url':
        // A pattern with a scheme matches the URL, any other the host.
        // Hosts are compared as connected to: case and trailing dots of a pattern do not matter either.
        return pattern.includes('://')
          ? index === 0 && matchText(pattern, value)
          : index > 0 && matchText(hostPattern(pattern), value);
      default:
        return matchText(pattern, value);
    }
  };
  if (subject.kind === 'url') return spellings.some(one);
  return action === 'allow' ? spellings.every(one) : spellings.some(one);
}
