/**
 * Skills as MCP prompts (`toolbelt mcp`, `serveMcp`): `prompts/list` names each skill with its
 * description, `prompts/get` answers its instructions, folder and files as one user message, so a
 * desktop MCP host offers the same skills a LangChain agent loads with the `skill` tool.
 * Must not import the MCP SDK (src/mcp/server.ts wires these answers to its handlers).
 */
import type { Tool } from '../authoring/tool.js';
import type { SkillCatalog } from './catalog.js';
import type { LoadedSkill } from './types.js';

/** What `prompts/list` answers. */
export async function listSkillPrompts(
  catalog: SkillCatalog,
  initCtx: Tool.InitContext,
): Promise<{ prompts: Array<{ name: string; description: string }> }> {
  const view = await catalog.view(initCtx);
  return { prompts: view.skills.map((s) => ({ name: s.name, description: s.description })) };
}

/** What `prompts/get` answers for `name`; throws a sentence naming the skills when there is none. */
export async function getSkillPrompt(
  catalog: SkillCatalog,
  initCtx: Tool.InitContext,
  name: string,
): Promise<{ description: string; messages: Array<{ role: 'user'; content: { type: 'text'; text: string } }> }> {
  const loaded = await catalog.load(initCtx, name);
  if (!loaded) {
    const names = (await catalog.view(initCtx)).skills.map((s) => s.name);
    throw new Error(`No skill is named "${name}". Skills: ${names.join(', ') || '(none)'}.`);
  }
  return {
    description: loaded.skill.description,
    messages: [{ role: 'user', content: { type: 'text', text: loadedSkillText(loaded) } }],
  };
}

/** A loaded skill as the model reads it: the instructions, then where its folder and files are. */
export function loadedSkillText(loaded: LoadedSkill): string {
  const total = loaded.files.length + loaded.moreFiles;
  const files = loaded.files.length
    ? `Files (${total}):\n${loaded.files.map((f) => `  ${f}`).join('\n')}${loaded.moreFiles ? `\n  (${loaded.moreFiles} more; list the folder to see them)` : ''}`
    : 'No other files.';
  return [
    `<skill name="${loaded.skill.name}" folder="${loaded.dir}">`,
    loaded.body,
    '</skill>',
    '',
    `The skill's folder is ${loaded.dir}; relative paths in its instructions are relative to it. Read its files with read and run its scripts with bash, by these paths.`,
    files,
  ].join('\n');
}
