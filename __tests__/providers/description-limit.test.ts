/**
 * `maxDescriptionChars`: OpenAI-compatible endpoints that refuse descriptions over 1,024 characters
 * (the mock's `maxDescriptionChars` mode, as Azure OpenAI answers) accept every built-in once
 * `tools({ maxDescriptionChars: 1024 })` fits them; what matters stays first, lines about a parameter
 * move into its description, and the cut is exact at the edge.
 */
import { describe, it, expect, afterEach, beforeAll, afterAll } from '@jest/globals';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { HumanMessage } from '@langchain/core/messages';
import { Tool, createRegistry, registerBuiltinTools } from '../../src/index.js';
import { MIN_DESCRIPTION_CHARS, moreNote } from '../../src/registry/description-fit.js';
import { startMockProvider, type MockProvider } from './mock-server.js';
import { chatModel } from './clients.js';
import { sentTools, toolbeltViolations } from './subsets.js';
import { tempDir } from '../support/helpers.js';

// skill is offered only when Agent Skills exist; 30 of them make its listing long (up to 4,000 characters).
let skillsHome: { dir: string; cleanup: () => Promise<void> };
beforeAll(async () => {
  skillsHome = await tempDir('desc-limit-skills-');
  for (let i = 0; i < 30; i++) {
    const dir = path.join(skillsHome.dir, `skill-${i}`);
    await mkdir(dir, { recursive: true });
    await writeFile(
      path.join(dir, 'SKILL.md'),
      `---\nname: skill-${i}\ndescription: Skill number ${i}, which explains at some length when a model should load it and why.\n---\nBody.\n`,
    );
  }
});
afterAll(() => skillsHome.cleanup());

const LIMIT = 1024;
const mocks: MockProvider[] = [];
afterEach(async () => {
  await Promise.all(mocks.splice(0).map((m) => m.close()));
});

describe('a 1,024-character endpoint', () => {
  for (const api of ['openai-chat', 'openai-responses'] as const) {
    it(`${api}: refuses the built-ins as they are, and accepts every one with maxDescriptionChars: 1024`, async () => {
      const registry = registerBuiltinTools(createRegistry());
      const refused = await startMockProvider([{ text: 'ok' }], { maxDescriptionChars: LIMIT });
      const accepted = await startMockProvider([{ text: 'ok' }], { maxDescriptionChars: LIMIT });
      mocks.push(refused, accepted);
      // task is offered only with sub-agents (registry.tools() leaves out what cannot run); the factory is never called.
      const initCtx = {
        subagents: { helper: { model: () => chatModel(api, refused.url), permissions: ['read' as const] } },
        skills: { dirs: [skillsHome.dir] },
      };
      const full = await registry.tools({ initCtx });
      expect(full.some((t) => t.description.length > LIMIT)).toBe(true);
      await expect(chatModel(api, refused.url).bindTools!(full).invoke([new HumanMessage('hi')])).rejects.toThrow(
        /string too long\. Expected a string with maximum length 1024/,
      );

      const fitted = await registry.tools({ initCtx, maxDescriptionChars: LIMIT });
      await chatModel(api, accepted.url).bindTools!(fitted).invoke([new HumanMessage('hi')]);
      expect(accepted.requests[0].refused).toBeUndefined();
      const sent = sentTools(api, accepted.requests[0].body);
      expect(sent.map((t) => t.name)).toEqual(registry.ids());
      for (const t of sent) {
        expect(t.description!.length).toBeLessThanOrEqual(LIMIT);
        expect(toolbeltViolations(t)).toEqual([]);
        // What matters first: the opening line of the whole description is kept.
        const whole = full.find((f) => f.name === t.name)!.description;
        expect(t.description!.startsWith(whole.split('\n')[0].slice(0, 100))).toBe(true);
        if (whole.length <= LIMIT) expect(t.description).toBe(whole);
      }
    });
  }

  it("bash's lines about its parameters move into those parameters' descriptions", async () => {
    const registry = registerBuiltinTools(createRegistry(), ['bash']);
    const [whole] = await registry.tools();
    const [fitted] = await registry.tools({ maxDescriptionChars: LIMIT });
    const line = whole.description.split('\n').find((l) => l.startsWith('- workdir: '))!;
    expect(fitted.description).not.toContain(line);
    const params = (fitted.schema as { properties: Record<string, { description: string }> }).properties;
    expect(params.workdir.description).toContain(line.slice('- workdir: '.length));
    expect(fitted.description.endsWith(moreNote('bash'))).toBe(true);
  });
});

describe('the edge', () => {
  const sized = (n: number) =>
    Tool.define('sized', {
      description: `First line says what it does.\n${'x'.repeat(n - 30)}`,
      parameters: z.object({ a: z.string().describe('A value') }),
      execute: async () => ({ title: '', metadata: {}, output: '' }),
    });

  it('a description of exactly maxDescriptionChars is sent as it is; one character more is cut to fit, first line kept', async () => {
    const at = createRegistry().register(sized(300), { permissions: { required: [] } });
    const [same] = await at.tools({ maxDescriptionChars: 300 });
    expect(same.description.length).toBe(300);
    expect(same.description).toBe((await at.tools())[0].description);

    const past = createRegistry().register(sized(301), { permissions: { required: [] } });
    const [cut] = await past.tools({ maxDescriptionChars: 300 });
    expect(cut.description.length).toBeLessThanOrEqual(300);
    expect(cut.description).toBe(`First line says what it does.${moreNote('sized')}`);
  });

  it(`refuses a limit under MIN_DESCRIPTION_CHARS (${MIN_DESCRIPTION_CHARS}) with a sentence naming it`, async () => {
    const r = createRegistry().register(sized(300), { permissions: { required: [] } });
    await expect(r.tools({ maxDescriptionChars: MIN_DESCRIPTION_CHARS - 1 })).rejects.toThrow(
      /maxDescriptionChars must be a whole number of at least 200, got 199/,
    );
    await expect(r.tools({ maxDescriptionChars: MIN_DESCRIPTION_CHARS })).resolves.toHaveLength(1);
  });
});
