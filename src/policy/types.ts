/**
 * The shapes of the policy language: rules, decisions, permission requests and answers.
 * Must not hold behaviour: types and the POLICY_ACTIONS list only (judging is evaluate.ts').
 */
import type { ToolPermission } from '../authoring/permissions.js';
import type { DangerLevel } from '../tools/bash/danger.js';
import type { SandboxOptions } from '../sandbox/types.js';

export type { DangerLevel };

/** What a rule does to the calls it matches. Precedence, whatever the order: deny > ask > allow. */
export type PolicyAction = 'allow' | 'ask' | 'deny';

/** Every action, strictest last. */
export const POLICY_ACTIONS: readonly PolicyAction[] = ['allow', 'ask', 'deny'];

/**
 * One rule. It matches a call when every selector it names matches: `tool` (an id or a glob such as
 * `github__*`), `permission` (one the tool requires), `danger` (deny/ask rules: this level or
 * above; allow rules: this level or below), `pattern` (the call's path, command, URL/host or MCP
 * server), `outsideWorkspace` (the path resolves outside every workspace root).
 */
export interface PolicyRule {
  tool?: string;
  permission?: ToolPermission;
  danger?: DangerLevel;
  pattern?: string;
  outsideWorkspace?: boolean;
  action: PolicyAction;
  /** Said to the model (and the approver) when this rule denies or asks. */
  reason?: string;
}

/** Loop guard settings: the `threshold`-th identical call in a row in a session is stopped (or asked about). */
export interface LoopGuardOptions {
  /** Identical calls in a row that trip the guard (default 3). */
  threshold?: number;
  /** `deny` (default): the call fails with a message; `ask`: it goes to the approver. */
  action?: 'deny' | 'ask';
  /** Tools whose identical calls are expected (polling), never counted; default `DEFAULT_LOOP_EXEMPT`. */
  exempt?: string[];
}

/** A policy as written in code or in `toolbelt.policy.json`. */
export interface PolicyConfig {
  /** JSON files may name their schema; ignored. */
  $schema?: string;
  /** The rules, in any order (precedence decides). A policy file may leave them out (read as `[]`). */
  rules: PolicyRule[];
  /** What a check no rule matches gets (default `allow`). */
  default?: PolicyAction;
  /** The loop guard for registries using this policy; `false` turns it off. */
  loopGuard?: LoopGuardOptions | false;
  /** The OS sandbox the CLI runs commands in (docs/sandbox.md); code passes it to `createRegistry` instead. */
  sandbox?: SandboxOptions;
  /**
   * Layer these rules over `DEFAULT_POLICY` (default `true`): the defaults' denies and asks keep
   * applying to whatever these rules do not pre-approve. `false` drops the defaults entirely.
   */
  extends?: boolean;
}

/** Which layer a rule comes from: the policy's own rules, or the defaults it extends. */
export type PolicyLayer = 'policy' | 'defaults';

/** What a check is about: the value rules' patterns are matched against. */
export interface PolicySubject {
  kind: 'path' | 'command' | 'url' | 'server';
  /** Workspace-relative path (absolute when outside), simple command text, URL, or MCP server name. */
  value: string;
  /** Other spellings that must be judged too (a path's real path, a URL's host). */
  also?: string[];
  /** For paths: resolved outside every workspace root. */
  outside?: boolean;
  /**
   * For a path that is a directory: `whole` when the call acts on everything under it (delete,
   * move, rm -r, cp -r), so a deny or ask for any path under it applies; `inside` when it only
   * reads it (list, grep), so a deny or ask covering every path under it applies.
   */
  tree?: 'whole' | 'inside';
  /** For a `whole` tree: the paths found under it (relative to it), and whether the walk stopped early. */
  entries?: string[];
  entriesCut?: boolean;
  /** The absolute (real) directory, where `entries` are read from. */
  absolute?: string;
}

/** One thing a call does that the policy judges: a tool call has one; a bash line one per command and file redirection. */
export interface PolicyCheck {
  tool: string;
  /**
   * The tool this check is also judged as, so rules naming it apply: apply_patch's file checks are
   * `write`, `delete` or `move`.
   */
  as?: string;
  permissions: ToolPermission[];
  danger: DangerLevel;
  subject?: PolicySubject;
  /** Set when the subject cannot be known before running (text that does not parse, a computed name or path). */
  unknown?: string;
  /** A short description for messages: `bash command "rm -rf build"`, `read of .env`. */
  label: string;
  /**
   * Only deny and ask rules apply (a file a bash command names as an argument): with no such rule
   * it is allowed, so a command an allow rule lets run needs no separate allow for its files.
   */
  restrictsOnly?: boolean;
}

/** Where the rule that decided came from. */
export type RuleSource = 'policy' | 'session' | 'default' | 'unknown-subject';

/** The outcome for one check. */
export interface CheckDecision {
  check: PolicyCheck;
  action: PolicyAction;
  source: RuleSource;
  /** The rule that decided (absent for the default). */
  rule?: PolicyRule;
  /** Its index in its layer's rules (session rules have their own numbering). */
  ruleIndex?: number;
  /** The layer of the rule that decided (absent for session approvals and the default action). */
  layer?: PolicyLayer;
}

/** The outcome for a whole call: the strictest of its checks. */
export interface PolicyDecision extends CheckDecision {
  /** Set when the call is allowed without asking because the OS sandbox contains it (`sandbox.autoAllow`). */
  sandbox?: { autoAllowed: true; reason: string };
  /** Set when the call is allowed without asking because a skill the session loaded lists it in `allowed-tools`. */
  skill?: { names: string[]; entries: string[] };
  toolId: string;
  /** One sentence: what was decided, for which check, by which rule. */
  reason: string;
  checks: CheckDecision[];
}

/** What `onPermissionRequest` receives when a call needs approval. */
export interface PermissionRequest {
  toolId: string;
  callID: string;
  sessionID: string;
  args: unknown;
  /** Hash of the canonical arguments: the approval is bound to exactly these. */
  argsHash: string;
  decision: PolicyDecision;
}

/** `once`: run this call; `always`: run it and allow the same checks for the rest of the session; `reject`: refuse. */
export type PermissionReply = 'once' | 'always' | 'reject';

/** A reply, optionally with a message the model reads. */
export type PermissionAnswer = PermissionReply | { reply: PermissionReply; message?: string };

/** The approver: a person in a UI, a rule engine, a test. */
export type OnPermissionRequest = (request: PermissionRequest) => PermissionAnswer | Promise<PermissionAnswer>;
