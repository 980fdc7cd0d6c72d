/**
 * `toolbelt skills`: `list [--json]` the skills the agent would be offered (name, description,
 * source, problems); `check [DIR]` every problem of the skills in DIR (default: the standard
 * places), exit 1 when one skips a skill; `import DIR...` puts skill folders into the --store.
 * Must not find, parse or store skills itself (src/skills/).
 */
import path from 'node:path';
import { UsageError, type Command, type Setup, type Values } from './command.js';
import { STORE_URL_ENV, storeNamespaceOf } from './store.js';
import { importSkills, SkillCatalog, skillCatalogOf, type SkillView } from '../skills/catalog.js';
import type { SkillProblem } from '../skills/types.js';

const USAGE = 'toolbelt skills list [--json] | check [DIR] | import DIR... --store URL   [--workspace DIR]';

function problemLine(p: SkillProblem): string {
  return `${p.severity === 'error' ? 'error' : 'warning'}: ${p.message}`;
}

async function list(setup: Setup, values: Values): Promise<number> {
  const view = await skillCatalogOf(setup.registry.tenant).view(setup.initCtx);
  if (values.json) {
    const skills = view.skills.map((s) => ({
      name: s.name,
      description: s.description,
      source: s.source,
      dir: s.dir,
      ...(s.allowedTools ? { allowedTools: s.allowedTools } : {}),
      problems: s.warnings.map((w) => w.message),
    }));
    process.stdout.write(`${JSON.stringify({ skills, problems: view.problems }, null, 2)}\n`);
    return 0;
  }
  const lines = view.skills.map((s) => `${s.name}  (${s.source}: ${s.dir})\n  ${s.description.replace(/\s+/g, ' ')}`);
  if (!view.skills.length)
    lines.push(
      'No skills found. Put a folder holding SKILL.md in .agents/skills/ or ~/.agents/skills/ (docs/skills.md).',
    );
  for (const p of view.problems) lines.push(problemLine(p));
  process.stdout.write(`${lines.join('\n')}\n`);
  return 0;
}

async function check(setup: Setup, dir: string | undefined): Promise<number> {
  const initCtx = dir
    ? { ...setup.initCtx, skills: { dirs: [path.resolve(dir)], defaults: false } }
    : { ...setup.initCtx, skills: { defaults: true } };
  // A catalog of its own: nothing cached, and its warnings are this command's output, not stderr noise.
  const view: SkillView = await new SkillCatalog(undefined, setup.registry.tenant, () => undefined).view(initCtx);
  const errors = view.problems.filter((p) => p.severity === 'error');
  for (const p of view.problems) process.stdout.write(`${problemLine(p)}\n`);
  const where = dir ? path.resolve(dir) : 'the standard places';
  process.stdout.write(
    `${view.skills.length} skill${view.skills.length === 1 ? '' : 's'} valid in ${where}; ${errors.length} problem${errors.length === 1 ? '' : 's'} skip${errors.length === 1 ? 's' : ''} a skill.\n`,
  );
  return errors.length ? 1 : 0;
}

async function importCommand(setup: Setup, values: Values, dirs: string[]): Promise<number> {
  if (!dirs.length)
    throw new UsageError(`"toolbelt skills import" needs the skill folders to import.\nUsage: ${USAGE}`);
  if (!setup.store)
    throw new UsageError(
      `"toolbelt skills import" puts skills into a store: pass --store URL or set $${STORE_URL_ENV}.`,
    );
  const result = await importSkills(
    setup.registry,
    dirs.map((d) => path.resolve(d)),
  );
  const ns = storeNamespaceOf(values);
  for (const s of result.imported) process.stdout.write(`imported ${s.name} (${s.files} files) from ${s.from}\n`);
  for (const p of result.problems) process.stderr.write(`toolbelt: ${problemLine(p)}\n`);
  process.stdout.write(
    `Imported ${result.imported.length} skill${result.imported.length === 1 ? '' : 's'} into the ${setup.store.label} (namespace ${Array.isArray(ns) ? ns.join('/') : ns}).\n`,
  );
  return result.problems.some((p) => p.severity === 'error') ? 1 : 0;
}

async function skills(setup: Setup, values: Values, positionals: string[]): Promise<number> {
  const [sub, ...rest] = positionals;
  switch (sub) {
    case 'list':
      if (rest.length) throw new UsageError(`"toolbelt skills list" takes no argument.\nUsage: ${USAGE}`);
      return list(setup, values);
    case 'check':
      if (rest.length > 1) throw new UsageError(`"toolbelt skills check" takes at most one folder.\nUsage: ${USAGE}`);
      return check(setup, rest[0]);
    case 'import':
      return importCommand(setup, values, rest);
    default:
      throw new UsageError(
        `Unknown skills subcommand ${JSON.stringify(sub)}. Use list, check or import.\nUsage: ${USAGE}`,
      );
  }
}

/** The `skills` command. */
export const skillsCommand: Command = {
  options: { json: { type: 'boolean' } },
  positionals: [1, 100],
  usage: USAGE,
  run: skills,
};
