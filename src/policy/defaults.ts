/**
 * The policy used when none is given: visible (`toolbelt policy show`), replaceable, and documented in
 * docs/permissions.md.
 * Must not hold matching or validation: the rules here are judged by evaluate.ts like any other policy.
 */
import type { PolicyConfig } from './types.js';

/** Files that hold secrets: reading one asks first. */
export const SECRET_FILE_PATTERNS: readonly string[] = [
  '.env*',
  '*.pem',
  '*.key',
  '*.p12',
  '*.pfx',
  'id_rsa*',
  'id_dsa*',
  'id_ecdsa*',
  'id_ed25519*',
  '.netrc',
  '.pgpass',
  '.npmrc',
  '.pypirc',
  '**/.ssh/**',
  '**/.aws/credentials',
  '**/.docker/config.json',
];

/** The default policy: secret reads ask, writes outside the workspace are denied, dangerous bash asks; the rest is allowed. */
export const DEFAULT_POLICY: PolicyConfig = Object.freeze({
  default: 'allow',
  rules: [
    ...SECRET_FILE_PATTERNS.map((pattern) => ({
      permission: 'read' as const,
      pattern,
      action: 'ask' as const,
      reason: 'it reads a file that usually holds secrets',
    })),
    {
      permission: 'write' as const,
      outsideWorkspace: true,
      action: 'deny' as const,
      reason: 'it writes outside the workspace',
    },
    { tool: 'bash', danger: 'dangerous' as const, action: 'ask' as const, reason: 'the command is dangerous' },
  ],
  loopGuard: { threshold: 3, action: 'deny' as const },
});
