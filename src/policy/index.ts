/**
 * The policy layer: allow / ask / deny rules, approvals, the default policy.
 * Must not define anything: it only re-exports the policy modules' public names.
 */
export * from './types.js';
export {
  Policy,
  createPolicy,
  loadPolicyFile,
  findPolicyFile,
  POLICY_FILE_NAME,
  MAX_APPROVAL_SESSIONS,
  PRECEDENCE,
  type MergedPolicy,
  type PolicyOptions,
  type AuthorizeRequest,
  type Authorization,
} from './policy.js';
export { DEFAULT_POLICY, SECRET_FILE_PATTERNS } from './defaults.js';
export { PolicyError, policyProblems, validatePolicy, parsePolicyText, type PolicyProblem } from './rules.js';
export { checksOf, type CheckEnvironment, type ToolFacts } from './checks.js';
export { argsHash, canonicalJson } from './approvals.js';
