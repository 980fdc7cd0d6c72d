/**
 * `toolbelt policy`: `explain <tool> '<json args>'` prints the decision for a call and the rule that
 * made it (`--skill NAME`: in a session that loaded that skill, its allowed-tools honoured); `check [FILE]` validates a policy file, naming the line and field of each problem;
 * `show` prints the merged policy in use (the file's rules layered over the defaults, and the
 * precedence). Nothing is run.
 * Must not judge a call itself: decisions are Policy.decide's (policy/), file checks policy/rules.ts'.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { UsageError, type Command, type Setup, type Values } from './command.js';
import { createPolicy, loadPolicyFile, POLICY_FILE_NAME, type Policy } from '../policy/policy.js';
import { parsePolicyText } from '../policy/rules.js';
import { sourceText } from '../policy/messages.js';
import { skillCatalogOf } from '../skills/catalog.js';
import type { SkillGrant } from '../skills/allowed-tools.js';

const USAGE = `toolbelt policy explain <tool> '<json args>' [--skill NAME] | check [FILE] | show   [--policy FILE] [--json]`;

async function activePolicy(setup: Setup): Promise<Policy> {
  if (!setup.policyFile) return createPolicy();
  try {
    return await loadPolicyFile(setup.policyFile);
  } catch (err) {
    throw new UsageError(`${(err as Error).message}\nFix the file (check it with "toolbelt policy check").`);
  }
}

async function explain(
  setup: Setup,
  values: Values,
  tool: string | undefined,
  json: string | undefined,
): Promise<number> {
  if (!tool) throw new UsageError(`"toolbelt policy explain" needs a tool id.\nUsage: ${USAGE}`);
  if (!setup.registry.has(tool) && !tool.includes('__')) throw new UsageError(setup.registry.unknownToolMessage(tool));
  let args: unknown = {};
  if (json !== undefined) {
    try {
      args = JSON.parse(json);
    } catch (err) {
      throw new UsageError(`The arguments are not valid JSON (${(err as Error).message}): ${json}`);
    }
  }
  const policy = await activePolicy(setup);
  setup.registry.setPolicy(policy);
  const env = setup.registry.policyEnvironment(setup.initCtx);
  const skill = values.skill === undefined ? undefined : await loadedSkill(setup, String(values.skill));
  // --skill: judged as in a session that loaded the skill, with its allowed-tools honoured.
  if (skill) env.skills = () => [skill];
  const decision = await policy.decide(tool, args, env, skill ? 'explain' : undefined);
  if (values.json) {
    process.stdout.write(`${JSON.stringify(decision, null, 2)}\n`);
    return 0;
  }
  const from = !setup.policyFile
    ? 'the default policy'
    : policy.extendsDefaults
      ? `policy ${setup.policyFile}, layered over the default policy`
      : `policy ${setup.policyFile}, which replaces the default policy ("extends": false)`;
  const lines = [`${decision.action.toUpperCase()}  ${decision.reason}`, `  (${from})`];
  if (skill)
    lines.push(
      `  (as in a session that loaded skill "${skill.skill}", allowed-tools ${skill.entries.join(' ') || '(none)'}, with skills.honorAllowedTools on)`,
    );
  if (decision.checks.length > 1) {
    lines.push('Checks:');
    for (const c of decision.checks) lines.push(`  ${c.action.padEnd(5)} ${c.check.label}: ${sourceText(c)}`);
  }
  process.stdout.write(`${lines.join('\n')}\n`);
  return 0;
}

/** The skill `--skill NAME` names, as the policy sees a loaded one. */
async function loadedSkill(setup: Setup, name: string): Promise<SkillGrant> {
  const view = await skillCatalogOf(setup.registry.tenant).view(setup.initCtx);
  const found = view.byName.get(name);
  if (!found)
    throw new UsageError(
      `No skill is named "${name}" here. Skills: ${view.skills.map((s) => s.name).join(', ') || '(none)'} (toolbelt skills list).`,
    );
  return { skill: found.name, entries: found.allowedTools ?? [] };
}

async function check(setup: Setup, fileArg: string | undefined): Promise<number> {
  const file = fileArg ? path.resolve(fileArg) : (setup.policyFile ?? path.resolve(POLICY_FILE_NAME));
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    process.stderr.write(
      `toolbelt: cannot read ${file} (${(err as NodeJS.ErrnoException).code}). Pass the policy file to check.\n`,
    );
    return 1;
  }
  try {
    const config = parsePolicyText(text, file);
    const layered = config.extends === false ? 'replaces the default policy' : 'layered over the default policy';
    process.stdout.write(
      `${file}: OK (${config.rules.length} rules, default "${config.default ?? 'allow'}", ${layered}).\n`,
    );
    return 0;
  } catch (err) {
    process.stderr.write(`toolbelt: ${(err as Error).message}\n`);
    return 1;
  }
}

/** The merged policy: JSON with `--json`, else each layer's rules in precedence order. */
async function show(setup: Setup, values: Values): Promise<number> {
  const merged = (await activePolicy(setup)).merged();
  if (values.json) {
    process.stdout.write(`${JSON.stringify(merged, null, 2)}\n`);
    return 0;
  }
  const source = setup.policyFile ?? 'no policy file';
  const lines = [
    `Policy: ${source}${merged.extends ? ', layered over the default policy' : ' ("extends": false: the default policy is not applied)'}.`,
    `Default action: ${merged.default}. Loop guard: ${merged.loopGuard === false ? 'off' : JSON.stringify(merged.loopGuard)}.`,
    `Precedence: ${merged.precedence.join(' > ')}.`,
  ];
  for (const { layer, rules } of merged.layers) {
    const name = layer === 'policy' ? `Rules of ${source}` : 'Default rules';
    lines.push(`${name} (${rules.length}):`);
    rules.forEach((r, i) =>
      lines.push(`  ${layer === 'defaults' ? 'default rule' : 'rule'} #${i + 1} ${JSON.stringify(r)}`),
    );
  }
  process.stdout.write(`${lines.join('\n')}\n`);
  return 0;
}

async function policy(setup: Setup, values: Values, positionals: string[]): Promise<number> {
  const [sub, a, b] = positionals;
  switch (sub) {
    case 'explain':
      return explain(setup, values, a, b);
    case 'check':
      if (b !== undefined) throw new UsageError(`"toolbelt policy check" takes at most one file.\nUsage: ${USAGE}`);
      return check(setup, a);
    case 'show':
      return show(setup, values);
    default:
      throw new UsageError(
        `Unknown policy subcommand ${JSON.stringify(sub)}. Use explain, check or show.\nUsage: ${USAGE}`,
      );
  }
}

/** The `policy` command. */
export const policyCommand: Command = {
  options: { json: { type: 'boolean' }, skill: { type: 'string' } },
  positionals: [1, 3],
  usage: USAGE,
  run: policy,
  ownsPolicy: true,
};
