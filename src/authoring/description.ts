/**
 * External `.txt` tool descriptions and their `${...}` templating.
 * Must not read tools or registries: text in, text out (plus the file read).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Tool } from './tool.js';

/**
 * The `.txt` description beside a module: `descriptionBeside(import.meta.url, 'grep')` is
 * `<dir of the module>/grep.txt`, in src/ and in the published dist/ alike.
 */
export function descriptionBeside(moduleUrl: string, name: string): string {
  return fileURLToPath(new URL(`./${name}.txt`, moduleUrl));
}

/** The values `${workspace}`, `${directory}` and `${cwd}` expand to for an init context. */
function templateVariables(initCtx: Tool.InitContext = {}): Record<string, string> {
  const directory = path.resolve(
    typeof initCtx.workingDir === 'string' && initCtx.workingDir ? initCtx.workingDir : process.cwd(),
  );
  const workspace = path.resolve(
    (typeof initCtx.workspaceRoot === 'string' && initCtx.workspaceRoot) ||
      process.env.AGENT_WORKSPACE_ROOT ||
      directory,
  );
  return { workspace, directory, cwd: directory };
}

/** Replaces known `${name}` placeholders; unknown ones stay exactly as written. */
function renderTemplate(text: string, vars: Record<string, string>): string {
  return text.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (whole, name: string) =>
    Object.prototype.hasOwnProperty.call(vars, name) ? vars[name] : whole,
  );
}

/** The outcome of loading a description: the text and, when the file failed, why. */
export interface LoadedDescription {
  text: string;
  /** Set when the file could not be used and the inline description stands in. */
  warning?: string;
}

/**
 * Loads the `.txt` at `descriptionPath` and renders it. A missing/unreadable/empty file falls back
 * to `inline` with a warning; with no inline description to fall back to, it throws.
 */
export async function loadDescription(
  toolId: string,
  descriptionPath: string | undefined,
  inline: string | undefined,
  initCtx: Tool.InitContext = {},
  extraVariables: Record<string, string> = {},
): Promise<LoadedDescription> {
  const vars = { ...extraVariables, ...templateVariables(initCtx) };
  if (!descriptionPath) return { text: renderTemplate(inline ?? '', vars) };
  let problem: string;
  try {
    const raw = await readFile(descriptionPath, 'utf8');
    if (raw.trim()) return { text: renderTemplate(raw.trim(), vars) };
    problem = `description file ${descriptionPath} is empty`;
  } catch (err) {
    problem = `description file ${descriptionPath} could not be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`;
  }
  if (!inline || !inline.trim()) {
    throw new Error(
      `Tool "${toolId}": ${problem}, and the tool has no inline description to fall back to. Fix the path or add a description.`,
    );
  }
  return {
    text: renderTemplate(inline, vars),
    warning: `Tool "${toolId}": ${problem}; using the inline description instead.`,
  };
}
