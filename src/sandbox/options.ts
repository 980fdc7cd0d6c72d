/**
 * Checking sandbox options, wherever they come from (`createRegistry({ sandbox })`, `initCtx.sandbox`,
 * the `"sandbox"` key of `toolbelt.policy.json`, the CLI's `--sandbox`): one schema, tied to
 * `SandboxOptions`, and every problem with its path, the value and what is allowed.
 * Must not apply options (runtime.ts) nor read files (the policy file reader calls this).
 */
import { z } from 'zod';
import { OptionsSchema, oneOf, shapeOf, strictObject } from '../schema/options.js';
import type { SandboxMode, SandboxOptions } from './types.js';

/** Every mode, the default of the `toolbelt` command first. */
export const SANDBOX_MODES: readonly SandboxMode[] = ['auto', 'required', 'off'];

/** Whether `value` is a sandbox mode. */
export function isSandboxMode(value: unknown): value is SandboxMode {
  return SANDBOX_MODES.includes(value as SandboxMode);
}

const paths = () =>
  z.array(z.string().min(1, { error: 'must not be empty' }), { error: 'must be an array of non-empty strings' });

/** The schema of `SandboxOptions`. */
export const sandboxOptionsSchema = new OptionsSchema('sandbox options', () =>
  shapeOf<SandboxOptions>()({
    mode: oneOf(SANDBOX_MODES, 'a mode').optional(),
    filesystem: strictObject(
      shapeOf<NonNullable<SandboxOptions['filesystem']>>()({
        allowWrite: paths().optional(),
        denyRead: paths().optional(),
        home: z.string().min(1, { error: 'must be a non-empty string' }).optional(),
      }),
    ).optional(),
    network: strictObject(
      shapeOf<NonNullable<SandboxOptions['network']>>()({
        allowedDomains: paths().optional(),
        allowAddresses: paths().optional(),
      }),
    ).optional(),
    autoAllow: z.boolean({ error: 'must be true or false' }).optional(),
  }),
);

/** Every problem of a `sandbox` options value (empty when it is valid). */
export function sandboxOptionsProblems(value: unknown, at = 'sandbox'): { path: string; message: string }[] {
  return sandboxOptionsSchema.problems(value, at);
}
