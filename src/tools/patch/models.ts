/**
 * Which edit tools a model is offered: `apply_patch` for the models trained on it (OpenAI's
 * GPT-4.1 and later, GPT-5, the o-series, Codex), `edit` + `write` (a str_replace design, what
 * Anthropic's models are trained on) for the rest, or a fixed choice.
 * Must not register tools (tools/index.ts does) nor load models.
 */

/** How `registerBuiltinTools` offers edit tools: by model (`auto`), always a patch, always replace, or both. */
export type EditsMode = 'auto' | 'patch' | 'replace' | 'both';

/** Every edits mode, the default first. */
export const EDITS_MODES: readonly EditsMode[] = ['replace', 'auto', 'patch', 'both'];

/** The tools an edits mode chooses between. */
export const EDIT_TOOL_IDS: readonly string[] = ['apply_patch', 'edit', 'write'];

/**
 * Whether `model` (a name as `createAgent` or the CLI takes it: `gpt-5`, `openai:gpt-4.1-mini`,
 * `openrouter/openai/o4-mini`, `gpt-5-codex`) is one trained to edit with apply_patch.
 */
export function prefersApplyPatch(model: string): boolean {
  const name = model.toLowerCase().split(/[:/]/).pop() ?? '';
  if (name.includes('codex')) return true;
  const gpt = /^gpt-(\d+)(?:\.(\d+))?/.exec(name);
  if (gpt) {
    const major = Number(gpt[1]);
    return major >= 5 || (major === 4 && Number(gpt[2] ?? 0) >= 1);
  }
  return /^o\d+(?:-|$)/.test(name);
}

/** Whether the edit tool `id` is offered under `mode` to `model` (undefined: not known, as for `replace`). */
export function offersEditTool(mode: EditsMode, id: string, model: string | undefined): boolean {
  if (!EDIT_TOOL_IDS.includes(id)) return true;
  const patch =
    mode === 'both' || mode === 'patch' || (mode === 'auto' && model !== undefined && prefersApplyPatch(model));
  const replace = mode === 'both' || mode === 'replace' || (mode === 'auto' && !patch);
  return id === 'apply_patch' ? patch : replace;
}

/** The mode named by `value` (a CLI flag or an option), or an error saying which modes exist. */
export function parseEditsMode(value: unknown): EditsMode {
  if (typeof value === 'string' && (EDITS_MODES as readonly string[]).includes(value)) return value as EditsMode;
  throw new Error(
    `edits must be one of ${EDITS_MODES.join(', ')} (auto: apply_patch for OpenAI GPT-4.1+/GPT-5/o-series/Codex models, edit and write for the rest), got ${JSON.stringify(value)}.`,
  );
}
