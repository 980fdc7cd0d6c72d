/**
 * The schema of `registerBuiltinTools`' options, tied to `BuiltinToolsOptions` where index.ts checks them.
 * Must not import index.ts (it checks with this).
 */
import { z } from 'zod';
import { OptionsSchema, oneOf } from '../schema/options.js';
import { EDITS_MODES } from './patch/models.js';

/** The schema of `BuiltinToolsOptions`. */
export const builtinToolsOptionsSchema = new OptionsSchema('registerBuiltinTools options', () => ({
  only: z.array(z.string()).optional(),
  defer: z.union([oneOf(['auto'], 'a defer mode'), z.array(z.string()).readonly()]).optional(),
  deferBudgetChars: z.number().optional(),
  edits: oneOf(EDITS_MODES, 'an edits mode').optional(),
}));
