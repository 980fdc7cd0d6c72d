/**
 * A skill's `allowed-tools` (the spec's experimental field) as the policy reads it: while a session
 * has loaded the skill, and only when the registry says `skills: { honorAllowedTools: true }`, a call
 * the policy would ask about runs without asking when every asking check is one of those tools (and
 * their pattern). A deny always wins; a check whose subject cannot be known is never lifted.
 * Entries are written as Claude Code writes them: `Bash(git:*)`, `Bash(npm test)`, `Read`,
 * `Edit(src/**)`, `WebFetch(domain:example.com)`, `mcp__server__tool`; our own ids work too.
 * Must not judge rules (policy/): it re-reads a decision the policy made, as sandbox/auto-allow.ts does.
 */
import { matchPath, matchText } from '../policy/glob.js';
import type { CheckDecision, PolicyDecision } from '../policy/types.js';

/** A skill a session loaded, and the entries of its `allowed-tools`. */
export interface SkillGrant {
  skill: string;
  entries: readonly string[];
}

/** What the policy asks about the skills of a call's session (`CheckEnvironment.skills`). */
export type SkillGrants = (sessionID: string | undefined) => SkillGrant[];

/** Tool names other agents use, as our tool ids. */
const ALIASES: Record<string, string> = {
  bash: 'bash',
  read: 'read',
  write: 'write',
  edit: 'edit',
  multiedit: 'edit',
  glob: 'glob',
  grep: 'grep',
  ls: 'list',
  webfetch: 'webfetch',
  websearch: 'web_search',
  todowrite: 'todowrite',
  task: 'task',
};

/** One entry parsed: the tool id it names and its pattern (undefined: any call of that tool). */
export function parseEntry(entry: string): { tool: string; pattern?: string } {
  const m = /^([^()\s]+)(?:\((.*)\))?$/s.exec(entry.trim());
  if (!m) return { tool: entry.trim() };
  let tool = m[1];
  if (tool.startsWith('mcp__')) tool = tool.slice('mcp__'.length);
  else tool = ALIASES[tool.toLowerCase()] ?? tool;
  const pattern = m[2]?.trim();
  return pattern && pattern !== '*' ? { tool, pattern } : { tool };
}

/** Whether `entry` covers the asking check `d`. */
function covers(entry: string, d: CheckDecision): boolean {
  const { tool, pattern } = parseEntry(entry);
  if (tool !== d.check.tool || d.check.unknown) return false;
  if (pattern === undefined) return true;
  const subject = d.check.subject;
  if (!subject) return false;
  switch (subject.kind) {
    case 'command': {
      // `git:*` is Claude Code's prefix form: the command `git` with any arguments.
      const text = pattern.endsWith(':*') ? `${pattern.slice(0, -2)} *` : pattern;
      return matchText(text, subject.value);
    }
    case 'path':
      return matchPath(pattern.replace(/^\.\//, ''), subject.value);
    case 'url': {
      const host = pattern.startsWith('domain:') ? pattern.slice('domain:'.length) : undefined;
      return host !== undefined
        ? (subject.also ?? []).some((h) => matchText(host, h))
        : matchText(pattern, subject.value);
    }
    case 'server':
      return matchText(pattern, subject.value);
  }
}

/**
 * The decision with its asks lifted when every asking check is covered by an `allowed-tools` entry
 * of a skill the session loaded (and nothing is denied); undefined when the skills cannot answer for it.
 */
export function liftSkillAsks(decision: PolicyDecision, grants: readonly SkillGrant[]): PolicyDecision | undefined {
  if (decision.action !== 'ask' || !grants.length) return undefined;
  if (decision.checks.some((c) => c.action === 'deny')) return undefined;
  const asking = decision.checks.filter((c) => c.action === 'ask');
  const by: Array<{ skill: string; entry: string }> = [];
  for (const d of asking) {
    let found: { skill: string; entry: string } | undefined;
    for (const g of grants) {
      const entry = g.entries.find((e) => covers(e, d));
      if (entry) {
        found = { skill: g.skill, entry };
        break;
      }
    }
    if (!found) return undefined;
    by.push(found);
  }
  const skills = [...new Set(by.map((b) => b.skill))];
  const entries = [...new Set(by.map((b) => b.entry))];
  const named = skills.map((s) => `"${s}"`).join(', ');
  return {
    ...decision,
    action: 'allow',
    skill: { names: skills, entries },
    reason: `allow ${decision.check.label} without asking: skill ${named}, loaded in this session, pre-approves it (allowed-tools ${entries.join(' ')}; skills.honorAllowedTools is on). Without the skill: ${decision.reason}`,
  };
}
