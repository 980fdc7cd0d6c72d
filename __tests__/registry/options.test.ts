/**
 * Options checked at run time, as plain JavaScript passes them (the casts below stand for a caller
 * without types): an unknown key or a value outside an enum is refused with the nearest known name
 * and the allowed ones, so a typo never grants more than the correct spelling would.
 */
import { describe, it, expect } from '@jest/globals';
import { createPolicy, createRegistry, OptionsError, registerBuiltinTools } from '../../src/index.js';
import type { RegistryOptions, ToolsOptions, Tool } from '../../src/index.js';
import { toAISDKTools, type AISDKToolsOptions } from '../../src/registry/ai-sdk.js';
import { policyProblems } from '../../src/policy/index.js';
import type { BuiltinToolsOptions } from '../../src/tools/index.js';
import { tempDir } from '../support/helpers.js';

/** What a JavaScript caller may pass: anything. */
const js = <T>(value: unknown) => value as T;

function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(OptionsError);
    return (err as Error).message;
  }
  throw new Error('expected the options to be refused');
}

describe('createRegistry options', () => {
  it('a misspelled sandbox key is refused, not ignored (bash would run uncontained)', () => {
    expect(refusal(() => createRegistry(js<RegistryOptions>({ sandbox: { mdoe: 'required' } })))).toBe(
      'createRegistry options: sandbox.mdoe is not an option (did you mean "mode"?); the options are mode, filesystem, network, autoAllow.',
    );
  });

  it('a misspelled mode is refused with the nearest mode and the allowed ones', () => {
    expect(refusal(() => createRegistry(js<RegistryOptions>({ sandbox: { mode: 'requried' } })))).toBe(
      'createRegistry options: sandbox.mode "requried" is not a mode (did you mean "required"?); use one of auto, required, off.',
    );
  });

  it('every problem is listed, each with its path', () => {
    const message = refusal(() =>
      createRegistry(js<RegistryOptions>({ concurency: 2, truncate: { maxLine: 10 }, policy: { rules: [] } })),
    );
    expect(message).toMatch(/^createRegistry options: 3 problems:$/m);
    expect(message).toMatch(/^- concurency is not an option \(did you mean "concurrency"\?\)/m);
    expect(message).toMatch(/^- truncate\.maxLine is not an option \(did you mean "maxLines"\?\)/m);
    expect(message).toMatch(/^- policy must be a policy made by createPolicy\(\{ rules \}\), got an object$/m);
  });

  it('valid options pass, every key of the type among them', () => {
    const ok: Required<Omit<RegistryOptions, 'store' | 'telemetry'>> = {
      concurrency: 2,
      timeoutMs: 1000,
      truncate: { maxLines: 10, maxBytes: 1000 },
      policy: createPolicy({ rules: [] }),
      loopGuard: { threshold: 4, action: 'ask', exempt: ['read'] },
      sandbox: { mode: 'off', filesystem: { allowWrite: ['/tmp/x'] }, network: { allowedDomains: ['example.com'] } },
      namespace: ['app'],
      storeLabel: 'mine',
      skills: { dirs: [], defaults: false, maxSkillListingChars: 4000, honorAllowedTools: false },
    };
    expect(() => createRegistry(ok)).not.toThrow();
    expect(refusal(() => createRegistry(js<RegistryOptions>({ skills: { honorAllowedTool: true } })))).toMatch(
      /skills\.honorAllowedTool is not an option \(did you mean "honorAllowedTools"\?\)/,
    );
    expect(() => createRegistry({ loopGuard: false, telemetry: { enabled: false } })).not.toThrow();
  });
});

describe('registry.tools() options', () => {
  const registry = registerBuiltinTools(createRegistry());

  it('enabledPermission (no s) is refused instead of handing out every tool', async () => {
    await expect(registry.tools(js<ToolsOptions>({ enabledPermission: ['read'] }))).rejects.toThrow(
      'registry.tools() options: enabledPermission is not an option (did you mean "enabledPermissions"?); the options are ids, enabledPermissions, initCtx,',
    );
  });

  it('an unknown permission is refused with the nearest one; a Set of known ones is fine', async () => {
    await expect(registry.tools(js<ToolsOptions>({ enabledPermissions: ['raed'] }))).rejects.toThrow(
      'registry.tools() options: enabledPermissions[0] "raed" is not a permission (did you mean "read"?); use one of read, write, execute, network, memory.',
    );
    const tools = await registry.tools({ enabledPermissions: new Set(['read'] as const) });
    expect(tools.map((t) => t.name)).toContain('read');
    expect(tools.map((t) => t.name)).not.toContain('bash');
  });

  it("initCtx: a near miss of a known key is refused; a user's own tool options pass", async () => {
    await expect(registry.tools(js<ToolsOptions>({ initCtx: { workspceRoot: '/srv/app' } }))).rejects.toThrow(
      'registry.tools() options: initCtx.workspceRoot is not an option (did you mean "workspaceRoot"?)',
    );
    await expect(registry.tools(js<ToolsOptions>({ initCtx: { sandbox: { mode: 'requried' } } }))).rejects.toThrow(
      'initCtx.sandbox.mode "requried" is not a mode (did you mean "required"?)',
    );
    await expect(
      registry.tools(js<ToolsOptions>({ ids: ['read'], initCtx: { myToolsRegion: 'eu' } })),
    ).resolves.toHaveLength(1);
  });

  it('artifact and callbacks are checked too', async () => {
    await expect(registry.tools(js<ToolsOptions>({ artifact: 'minmal' }))).rejects.toThrow(
      'artifact "minmal" is not an artifact mode (did you mean "minimal"?); use one of result, minimal.',
    );
    await expect(registry.tools(js<ToolsOptions>({ onToolResult: 'log' }))).rejects.toThrow(
      'onToolResult must be a function, got "log".',
    );
  });
});

describe('registry.execute() options and init context', () => {
  it('a misspelled grant is a failed call, and the tool never runs', async () => {
    const ws = await tempDir();
    try {
      const registry = registerBuiltinTools(createRegistry());
      const u = await registry.execute(
        'bash',
        { command: 'touch ran' },
        { sessionID: 's' },
        { workspaceRoot: ws.dir },
        js<{ enabledPermissions: [] }>({ enabledPermission: [] }),
      );
      expect(u.success).toBe(false);
      expect(u.error).toContain('enabledPermission is not an option (did you mean "enabledPermissions"?)');
      const after = await registry.execute('glob', { pattern: 'ran' }, { sessionID: 's' }, { workspaceRoot: ws.dir });
      expect(after.result.output).toMatch(/^No files found/);
      const typo = await registry.execute(
        'read',
        { filePath: 'x' },
        { sessionID: 's' },
        js<Tool.InitContext>({ workspaceRot: ws.dir }),
      );
      expect(typo.error).toContain('workspaceRot is not an option (did you mean "workspaceRoot"?)');
    } finally {
      await ws.cleanup();
    }
  });
});

describe('registerBuiltinTools and toAISDKTools options', () => {
  it('are refused with the nearest name', async () => {
    expect(refusal(() => registerBuiltinTools(createRegistry(), js<BuiltinToolsOptions>({ onyl: ['read'] })))).toBe(
      'registerBuiltinTools options: onyl is not an option (did you mean "only"?); the options are only, defer, deferBudgetChars, edits.',
    );
    expect(refusal(() => registerBuiltinTools(createRegistry(), js<BuiltinToolsOptions>({ defer: 'atuo' })))).toMatch(
      /defer "atuo" is not a defer mode \(did you mean "auto"\?\)/,
    );
    const registry = registerBuiltinTools(createRegistry(), ['read']);
    await expect(toAISDKTools(registry, js<AISDKToolsOptions>({ enabledPermission: ['read'] }))).rejects.toThrow(
      'toAISDKTools options: enabledPermission is not an option (did you mean "enabledPermissions"?)',
    );
  });
});

describe('the policy file', () => {
  it('reports its sandbox problems with the same schema and sentences', () => {
    expect(policyProblems({ rules: [], sandbox: { mode: 'requried', mdoe: 'off' } })).toEqual([
      {
        path: 'sandbox.mode',
        message: '"requried" is not a mode (did you mean "required"?); use one of auto, required, off',
      },
      {
        path: 'sandbox.mdoe',
        message: 'is not an option (did you mean "mode"?); the options are mode, filesystem, network, autoAllow',
      },
    ]);
  });
});
