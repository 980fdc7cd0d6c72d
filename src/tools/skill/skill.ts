/**
 * skill: loads an Agent Skill by name (its instructions, folder and other files' paths, which read
 * and bash accept), or searches the installed skills. Its description lists the skills within the
 * catalog's budget. Not offered when no skill is found for the init context.
 * Must not find or parse skills itself (src/skills/).
 */
import { z } from 'zod';
import { Tool } from '../../authoring/tool.js';
import { descriptionBeside } from '../../authoring/description.js';
import { catalogOf } from '../../skills/catalog.js';
import { searchSkills, skillListing } from '../../skills/listing.js';
import { loadedSkillText } from '../../skills/prompts.js';
import { nearestName } from '../../text/similarity.js';
import type { SkillSourceKind } from '../../skills/types.js';

const parameters = z.object({
  name: z.string().optional().describe('The skill to load, exactly as listed.'),
  query: z.string().optional().describe('Words to search skill names and descriptions for, instead of loading one.'),
});

/** What skill reports. */
export interface SkillMetadata extends Tool.Metadata {
  /** The skill loaded (absent for a search). */
  skill?: string;
  source?: SkillSourceKind;
  /** Its folder, as read and bash take it. */
  dir?: string;
  /** Its other files listed, and how many more there are. */
  files?: number;
  moreFiles?: number;
  /** A search's matches. */
  matches?: string[];
  truncated: false;
}

const listings = new WeakMap<object, Map<number, string>>();

export const SkillTool = Tool.define<typeof parameters, SkillMetadata>(
  {
    id: 'skill',
    permissions: { required: ['read'] },
    descriptionPath: descriptionBeside(import.meta.url, 'skill'),
    danger: 'safe',
  },
  async (initCtx) => {
    const catalog = catalogOf(initCtx);
    const view = await catalog.view(initCtx);
    const budget = catalog.listingBudget(initCtx);
    // One listing per view and budget: a warm look (tools() for another agent) builds none.
    let listing = listings.get(view)?.get(budget);
    if (listing === undefined) {
      listing = skillListing(view.skills, budget);
      let byBudget = listings.get(view);
      if (!byBudget) listings.set(view, (byBudget = new Map<number, string>()));
      byBudget.set(budget, listing);
    }
    return {
      description: `Loads an Agent Skill (instructions, scripts, references) by name, or searches the installed skills.\n\nSkills:\n${listing}`,
      descriptionVariables: { skills: listing },
      parameters,
      ...(view.skills.length
        ? {}
        : {
            unavailable:
              'No Agent Skills were found: put a folder holding SKILL.md in .agents/skills/ (or ~/.agents/skills/), or pass createRegistry({ skills: { dirs } }).',
          }),
      async execute(args, ctx) {
        const name = args.name?.trim();
        const query = args.query?.trim();
        if (!name && !query)
          throw new Error('Give "name" to load a skill, or "query" to search the installed skills by words.');
        if (!name) {
          const found = searchSkills((await catalog.view(initCtx, ctx.abort)).skills, query!);
          return {
            title: `${found.length} skill${found.length === 1 ? '' : 's'} for "${query}"`,
            metadata: { matches: found.map((s) => s.name), truncated: false },
            output: found.length
              ? `${found.map((s) => `- ${s.name}: ${s.description.replace(/\s+/g, ' ')}`).join('\n')}\n\nLoad one with { "name": "<skill>" }.`
              : `No skill matches "${query}". Try other words, or go on without a skill.`,
          };
        }
        ctx.metadata({ title: `loading ${name}` });
        const loaded = await catalog.load(initCtx, name, ctx.abort);
        if (!loaded) {
          const names = (await catalog.view(initCtx, ctx.abort)).skills.map((s) => s.name);
          const near = nearestName(name, names);
          throw new Error(
            `No skill is named "${name}".${near ? ` Did you mean "${near}"?` : ''} Call skill with { "query": "<words>" } to search the ${names.length} installed skills.`,
          );
        }
        catalog.activate(ctx.sessionID, loaded.skill);
        return {
          title: `skill ${loaded.skill.name}`,
          metadata: {
            skill: loaded.skill.name,
            source: loaded.skill.source,
            dir: loaded.dir,
            files: loaded.files.length,
            moreFiles: loaded.moreFiles,
            truncated: false,
          },
          output: loadedSkillText(loaded),
        };
      },
    };
  },
);
