/**
 * The registry's policy over `toDeepAgentsBackend`'s operations: each is judged as the matching
 * tool's call would be (ls as list, read and readRaw as read, write, edit, delete, grep and glob as
 * themselves; uploadFiles as write and downloadFiles as read, file by file; execute runs bash through
 * the registry, whose pipeline judges it). A deny is refused with the policy's sentence; an ask goes to
 * the policy's approver (`onPermissionRequest`), and is refused with a sentence when there is none;
 * listings and searches leave out the paths the same read filter grep, glob and list apply leaves out.
 * Must not judge rules (Policy.authorize and Policy.readFilter do) nor touch files.
 */
import { randomBytes } from 'node:crypto';
import type { Registry } from '../registry/registry.js';
import type { Tool } from '../authoring/tool.js';
import type { CheckEnvironment, ToolFacts } from '../policy/checks.js';
import { builtinTools } from '../tools/index.js';

/** A backend operation the policy refused (its message is the policy's sentence). */
export class PolicyRefusal extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PolicyRefusal';
  }
}

/** What the built-in tools declare (permissions, danger): the policy's facts for a tool the registry lacks. */
let builtinFacts: Map<string, ToolFacts> | undefined;

function factsOf(id: string): ToolFacts | undefined {
  builtinFacts ??= new Map(
    builtinTools.map((t) => [t.info.id, { permissions: [...t.permissions.required], danger: t.info.danger }]),
  );
  return builtinFacts.get(id);
}

/** One backend's judge: the registry's policy, the init context its paths resolve under, the session. */
export class BackendJudge {
  private serial = 0;
  private readonly prefix = `deepagents-${randomBytes(3).toString('hex')}`;

  constructor(
    private readonly registry: Registry | undefined,
    private readonly initCtx: Tool.InitContext,
    private readonly sessionID: string,
  ) {}

  /** Whether a policy judges anything (without one every operation is allowed and nothing is filtered). */
  get active(): boolean {
    return this.registry?.policy !== undefined;
  }

  /**
   * Resolves when the policy allows `toolId` called with `args` (paths as host paths), or the
   * approver granted it; otherwise throws a `PolicyRefusal` with the policy's sentence.
   */
  async authorize(toolId: string, args: Record<string, unknown>): Promise<void> {
    const policy = this.registry?.policy;
    if (!policy) return;
    const result = await policy.authorize({
      toolId,
      args,
      callID: `${this.prefix}-${++this.serial}`,
      sessionID: this.sessionID,
      env: this.environment(),
    });
    if (!result.allowed) throw new PolicyRefusal(result.message);
  }

  /** The read filter a search `toolId` (list, glob, grep) called with `args` applies, or undefined. */
  async readFilter(toolId: string, args: Record<string, unknown>): Promise<Tool.ReadFilter | undefined> {
    const policy = this.registry?.policy;
    if (!policy) return undefined;
    return policy.readFilter(toolId, this.environment(), { args, sessionID: this.sessionID });
  }

  private environment(): CheckEnvironment {
    const env = this.registry!.policyEnvironment(this.initCtx);
    const registered = env.toolFacts;
    // A registry made for execute holds bash only: the file tools' facts come from the built-in list.
    return { ...env, toolFacts: (id) => registered?.(id) ?? factsOf(id) };
  }
}
