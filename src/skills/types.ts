/**
 * Agent Skills (agentskills.io): the shapes a skill takes here and the limits that bound reading
 * them. A skill is a folder holding `SKILL.md` (YAML frontmatter, then Markdown instructions) and
 * any other files (`scripts/`, `references/`, `assets/`).
 * Must not hold behaviour (constants and types only): parsing is parse.ts', finding folders discover.ts', the catalog catalog.ts'.
 */

/** The file that makes a folder a skill. */
export const SKILL_FILE = 'SKILL.md';
/** Longest skill name, in characters (the spec's limit). */
export const MAX_SKILL_NAME_CHARS = 64;
/** Longest skill description, in characters (the spec's limit). */
export const MAX_SKILL_DESCRIPTION_CHARS = 1024;
/** Longest `compatibility` field, in characters (the spec's limit). */
export const MAX_SKILL_COMPATIBILITY_CHARS = 500;
/** Largest SKILL.md read, in bytes (deepagents' limit too); a larger one is skipped with a sentence. */
export const MAX_SKILL_FILE_BYTES = 10 * 1024 * 1024;
/** Most bytes read to find a SKILL.md's frontmatter while listing (the body is read when the skill is loaded). */
export const MAX_SKILL_FRONTMATTER_BYTES = 64 * 1024;
/**
 * How deep below a skills directory a skill folder may sit: `skills/a/SKILL.md` is depth 1,
 * `skills/team/web/a/SKILL.md` depth 3. Deeper folders are not searched.
 */
export const MAX_SKILL_DEPTH = 4;
/** Most skills one catalog holds; past it the rest are named in one warning and not read. */
export const MAX_SKILLS = 1000;
/** Most directories one discovery pass opens across every place, so a huge tree cannot stall it. */
export const MAX_SKILL_DIRS_VISITED = 10_000;
/** Default budget of the `skill` tool's listing of skills (name and description each), in characters. */
export const DEFAULT_MAX_SKILL_LISTING_CHARS = 4000;
/** Most of a skill folder's other files the `skill` tool lists when it loads the skill. */
export const MAX_SKILL_FILES_LISTED = 50;

/** Most files (SKILL.md included) one skill may bring into the store. */
export const MAX_STORED_SKILL_FILES = 200;
/** Most bytes one skill's files may add up to in the store. */
export const MAX_STORED_SKILL_BYTES = 10 * 1024 * 1024;

/** Where a skill was found, strongest first when two share a name. */
export type SkillSourceKind = 'dir' | 'workspace' | 'user' | 'store';

/** Every source kind, in precedence order (the first wins a name). */
export const SKILL_SOURCE_ORDER: readonly SkillSourceKind[] = ['dir', 'workspace', 'user', 'store'];

/** Where skills are looked for (`createRegistry({ skills })`, `initCtx.skills`). */
export interface SkillsOptions {
  /** Skills directories searched first (each holds skill folders, nested up to MAX_SKILL_DEPTH). */
  dirs?: string[];
  /**
   * Also search the standard places: the workspace's `.agents/skills/` and `.claude/skills/` (on
   * `initCtx.backend` when there is one), then the user's `~/.agents/skills/` and `~/.claude/skills/`.
   * Default false in code, on in the CLI.
   */
  defaults?: boolean;
  /** The user's home, whose `.agents/skills` and `.claude/skills` `defaults` searches (default: `os.homedir()`, i.e. `$HOME`). */
  home?: string;
  /** Budget of the `skill` tool's listing, in characters (default DEFAULT_MAX_SKILL_LISTING_CHARS). */
  maxSkillListingChars?: number;
  /**
   * Let a loaded skill's `allowed-tools` lift the policy's asks (never its denies) for those tools in
   * the session that loaded it. Default false: a skill from anywhere must not grant itself rights.
   */
  honorAllowedTools?: boolean;
}

/** One thing wrong with a skill, said as a sentence with the file, the field and the fix. */
export interface SkillProblem {
  /** The SKILL.md (or folder) it is about. */
  file: string;
  /** The frontmatter field, when one is at fault. */
  field?: string;
  /** `error`: the skill is skipped; `warning`: it loads, and the sentence says what was tolerated. */
  severity: 'error' | 'warning';
  message: string;
}

/** A skill's frontmatter, checked. */
export interface SkillMeta {
  name: string;
  description: string;
  license?: string;
  compatibility?: string;
  /** The spec's string-to-string map. */
  metadata?: Record<string, string>;
  /** `allowed-tools`, split into entries (`Bash(git:*)`, `Read`). */
  allowedTools?: string[];
  /** Fields the spec does not define, kept as written. */
  extra?: Record<string, unknown>;
}

/** A skill found in one place. */
export interface Skill extends SkillMeta {
  source: SkillSourceKind;
  /** The skill folder: a host path, a backend path (`/`-rooted) or `store:<name>`. */
  dir: string;
  /** Its SKILL.md. */
  file: string;
  /** Warnings about it (it loaded anyway). */
  warnings: SkillProblem[];
}

/** A skill loaded whole: what the `skill` tool and MCP `prompts/get` answer. */
export interface LoadedSkill {
  skill: Skill;
  /** SKILL.md without its frontmatter. */
  body: string;
  /** The folder as read and bash take it (a host path, or a backend path). */
  dir: string;
  /** Its other files (the first MAX_SKILL_FILES_LISTED), as read and bash take them. */
  files: string[];
  /** How many more files the folder holds past the list. */
  moreFiles: number;
}
