/**
 * Reading a policy: validation of rules given in code, and of `toolbelt.policy.json` with the line
 * of each problem. Errors name the rule, the field, the value and what is allowed.
 * Must not judge calls: a valid policy is applied by evaluate.ts; this file only reads and validates.
 */
import { ALL_PERMISSIONS } from '../authoring/permissions.js';
import { patternProblem } from './glob.js';
import { POLICY_ACTIONS, type PolicyConfig } from './types.js';
import { sandboxOptionsProblems } from '../sandbox/options.js';

const DANGER_LEVELS = ['safe', 'moderate', 'dangerous'];
const RULE_KEYS = ['tool', 'permission', 'danger', 'pattern', 'outsideWorkspace', 'action', 'reason'];
const TOP_KEYS = ['$schema', 'extends', 'rules', 'default', 'loopGuard', 'sandbox'];

/** One problem in a policy: where (a JSON path such as `rules[2].action`), and what is wrong. */
export interface PolicyProblem {
  path: string;
  message: string;
  /** 1-based line in the file, when read from one. */
  line?: number;
}

/** Thrown for an invalid policy; `problems` lists every problem found. */
export class PolicyError extends Error {
  constructor(
    readonly problems: PolicyProblem[],
    readonly file?: string,
  ) {
    super(
      `Invalid policy${file ? ` ${file}` : ''}:\n` +
        problems.map((p) => `- ${p.line !== undefined ? `line ${p.line}, ` : ''}${p.path}: ${p.message}`).join('\n'),
    );
    this.name = 'PolicyError';
  }
}

/** Every problem of a policy value (empty when it is valid). */
export function policyProblems(value: unknown): PolicyProblem[] {
  const problems: PolicyProblem[] = [];
  const add = (path: string, message: string) => problems.push({ path, message });
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    add(
      '(policy)',
      'a policy is an object { "rules"?: [...], "default"?: "allow" | "ask" | "deny", "sandbox"?: {...} }',
    );
    return problems;
  }
  const v = value as Record<string, unknown>;
  for (const key of Object.keys(v))
    if (!TOP_KEYS.includes(key)) add(key, `unknown field; known fields: ${TOP_KEYS.join(', ')}`);
  if (v.default !== undefined && !POLICY_ACTIONS.includes(v.default as never))
    add('default', `${JSON.stringify(v.default)} is not an action; use one of ${POLICY_ACTIONS.join(', ')}`);
  if (v.extends !== undefined && typeof v.extends !== 'boolean')
    add(
      'extends',
      `${JSON.stringify(v.extends)} must be true (layer over the default policy, the default) or false (replace it)`,
    );
  checkLoopGuard(v.loopGuard, add);
  if (v.sandbox !== undefined) for (const p of sandboxOptionsProblems(v.sandbox)) add(p.path, p.message);
  // Optional: a file may hold only "sandbox" (or only "default"); no rules is the same as [].
  if (v.rules !== undefined && !Array.isArray(v.rules))
    add('rules', 'must be an array of rules (it may be empty or left out)');
  else if (Array.isArray(v.rules)) v.rules.forEach((rule, i) => ruleProblems(rule, `rules[${i}]`, add));
  return problems;
}

function checkLoopGuard(g: unknown, add: (path: string, message: string) => void): void {
  if (g === undefined || g === false) return;
  if (!g || typeof g !== 'object')
    return add(
      'loopGuard',
      'must be false or { "threshold"?: number >= 2, "action"?: "deny" | "ask", "exempt"?: tool ids }',
    );
  const { threshold, action, exempt, ...rest } = g as Record<string, unknown>;
  for (const k of Object.keys(rest)) add(`loopGuard.${k}`, 'unknown field; known fields: threshold, action, exempt');
  if (exempt !== undefined && !(Array.isArray(exempt) && exempt.every((t) => typeof t === 'string')))
    add('loopGuard.exempt', 'must be an array of tool ids whose identical calls are never counted');
  if (threshold !== undefined && !(Number.isInteger(threshold) && (threshold as number) >= 2))
    add('loopGuard.threshold', `${JSON.stringify(threshold)} must be a whole number of at least 2`);
  if (action !== undefined && action !== 'deny' && action !== 'ask')
    add('loopGuard.action', `${JSON.stringify(action)} must be "deny" or "ask"`);
}

function ruleProblems(rule: unknown, at: string, add: (path: string, message: string) => void): void {
  if (!rule || typeof rule !== 'object' || Array.isArray(rule)) return add(at, 'a rule is an object with an "action"');
  const r = rule as Record<string, unknown>;
  for (const key of Object.keys(r))
    if (!RULE_KEYS.includes(key)) add(`${at}.${key}`, `unknown field; known fields: ${RULE_KEYS.join(', ')}`);
  if (!POLICY_ACTIONS.includes(r.action as never))
    add(
      `${at}.action`,
      `${r.action === undefined ? 'is missing' : `${JSON.stringify(r.action)} is not an action`}; use one of ${POLICY_ACTIONS.join(', ')}`,
    );
  if (r.tool !== undefined && (typeof r.tool !== 'string' || !r.tool))
    add(`${at}.tool`, 'must be a tool id or a glob such as "github__*"');
  if (r.permission !== undefined && !ALL_PERMISSIONS.includes(r.permission as never))
    add(
      `${at}.permission`,
      `${JSON.stringify(r.permission)} is not a permission; use one of ${ALL_PERMISSIONS.join(', ')}`,
    );
  if (r.danger !== undefined && !DANGER_LEVELS.includes(r.danger as string))
    add(`${at}.danger`, `${JSON.stringify(r.danger)} is not a danger level; use one of ${DANGER_LEVELS.join(', ')}`);
  if (r.pattern !== undefined) {
    const problem = typeof r.pattern === 'string' ? patternProblem(r.pattern) : 'must be a string';
    if (problem) add(`${at}.pattern`, problem);
  }
  if (r.outsideWorkspace !== undefined && typeof r.outsideWorkspace !== 'boolean')
    add(`${at}.outsideWorkspace`, 'must be true or false');
  if (r.reason !== undefined && typeof r.reason !== 'string') add(`${at}.reason`, 'must be a string');
  if (
    r.tool === undefined &&
    r.permission === undefined &&
    r.danger === undefined &&
    r.pattern === undefined &&
    r.outsideWorkspace === undefined
  )
    add(
      at,
      'names no selector; give at least one of tool, permission, danger, pattern, outsideWorkspace (use "default" for everything else)',
    );
}

/** Validates a policy given in code; throws a PolicyError listing every problem. */
export function validatePolicy(value: unknown): PolicyConfig {
  const problems = policyProblems(value);
  if (problems.length) throw new PolicyError(problems);
  return value as PolicyConfig;
}

/** Parses and validates the text of a policy file; problems carry their line. */
export function parsePolicyText(text: string, file = 'toolbelt.policy.json'): PolicyConfig {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    const message = (err as Error).message;
    const pos = /position (\d+)/.exec(message);
    const line = pos ? lineAt(text, Number(pos[1])) : /line (\d+)/.exec(message)?.[1];
    throw new PolicyError(
      [{ path: '(file)', message: `not valid JSON: ${message}`, line: line === undefined ? undefined : Number(line) }],
      file,
    );
  }
  const problems = policyProblems(value).map((p) => ({ ...p, line: lineOfPath(text, p.path) }));
  if (problems.length) throw new PolicyError(problems, file);
  const config = value as PolicyConfig;
  return config.rules === undefined ? { ...config, rules: [] } : config;
}

function lineAt(text: string, offset: number): number {
  let line = 1;
  for (let i = 0; i < offset && i < text.length; i++) if (text[i] === '\n') line++;
  return line;
}

/**
 * The line where a JSON path (`rules[2].action`) is written: a small scan that tracks the path of
 * every key and array element as it goes (JSON.parse keeps no positions).
 */
function lineOfPath(text: string, target: string): number | undefined {
  const stack: Array<{ kind: 'object' | 'array'; path: string; index: number; key?: string }> = [];
  let line = 1;
  let pendingKey: string | undefined;
  const pathOf = (frame: (typeof stack)[number], child: string | number) =>
    typeof child === 'number' ? `${frame.path}[${child}]` : frame.path ? `${frame.path}.${child}` : child;
  const valueStart = (): string | undefined => {
    const top = stack[stack.length - 1];
    if (!top) return '(policy)';
    if (top.kind === 'array') return pathOf(top, top.index);
    return pendingKey !== undefined ? pathOf(top, pendingKey) : undefined;
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '\n') line++;
    else if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      const str = JSON.parse(text.slice(i, j + 1)) as string;
      const top = stack[stack.length - 1];
      const isKey = top?.kind === 'object' && pendingKey === undefined;
      if (isKey) {
        pendingKey = str;
        if (pathOf(top, str) === target) return line;
      } else if (valueStart() === target) return line;
      i = j;
    } else if (c === '{' || c === '[') {
      const p = valueStart() ?? '';
      if (p === target) return line;
      stack.push({ kind: c === '{' ? 'object' : 'array', path: p === '(policy)' ? '' : p, index: 0 });
      pendingKey = undefined;
    } else if (c === '}' || c === ']') {
      stack.pop();
      pendingKey = undefined;
    } else if (c === ',') {
      const top = stack[stack.length - 1];
      if (top?.kind === 'array') top.index++;
      pendingKey = undefined;
    } else if (/[-0-9tfn]/.test(c) && valueStart() === target) return line;
  }
  return target.includes('.') || target.includes('[')
    ? lineOfPath(text, target.replace(/(\.[^.[\]]+|\[\d+\])$/, ''))
    : undefined;
}
