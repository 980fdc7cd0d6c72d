/**
 * Checking sandbox options given as data (the `"sandbox"` key of `toolbelt.policy.json`, the CLI's
 * `--sandbox`): every problem with its path, the value and what is allowed.
 * Must not apply options (runtime.ts) nor read files (the policy file reader calls this).
 */
import type { SandboxMode } from './types.js';

/** Every mode, the default of the `toolbelt` command first. */
export const SANDBOX_MODES: readonly SandboxMode[] = ['auto', 'required', 'off'];

const KEYS = ['mode', 'filesystem', 'network', 'autoAllow'];
const FS_KEYS = ['allowWrite', 'denyRead', 'home'];
const NET_KEYS = ['allowedDomains', 'allowAddresses'];

/** Whether `value` is a sandbox mode. */
export function isSandboxMode(value: unknown): value is SandboxMode {
  return SANDBOX_MODES.includes(value as SandboxMode);
}

/** Every problem of a `sandbox` options value (empty when it is valid). */
export function sandboxOptionsProblems(value: unknown, at = 'sandbox'): { path: string; message: string }[] {
  const problems: { path: string; message: string }[] = [];
  const add = (p: string, message: string) => problems.push({ path: p, message });
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    add(at, 'must be an object { "mode"?, "filesystem"?, "network"?, "autoAllow"? }');
    return problems;
  }
  const v = value as Record<string, unknown>;
  for (const k of Object.keys(v))
    if (!KEYS.includes(k)) add(`${at}.${k}`, `unknown field; known fields: ${KEYS.join(', ')}`);
  if (v.mode !== undefined && !isSandboxMode(v.mode))
    add(`${at}.mode`, `${JSON.stringify(v.mode)} is not a mode; use one of ${SANDBOX_MODES.join(', ')}`);
  if (v.autoAllow !== undefined && typeof v.autoAllow !== 'boolean') add(`${at}.autoAllow`, 'must be true or false');
  const group = (name: string, keys: string[], lists: string[]) => {
    const g = v[name];
    if (g === undefined) return;
    if (!g || typeof g !== 'object' || Array.isArray(g))
      return add(`${at}.${name}`, `must be an object with ${keys.join(', ')}`);
    for (const [k, val] of Object.entries(g as Record<string, unknown>)) {
      if (!keys.includes(k)) add(`${at}.${name}.${k}`, `unknown field; known fields: ${keys.join(', ')}`);
      else if (lists.includes(k) && !(Array.isArray(val) && val.every((x) => typeof x === 'string' && x.length > 0)))
        add(`${at}.${name}.${k}`, 'must be an array of non-empty strings');
      else if (!lists.includes(k) && (typeof val !== 'string' || !val))
        add(`${at}.${name}.${k}`, 'must be a non-empty string');
    }
  };
  group('filesystem', FS_KEYS, ['allowWrite', 'denyRead']);
  group('network', NET_KEYS, ['allowedDomains', 'allowAddresses']);
  return problems;
}
