import { describe, it, expect } from '@jest/globals';
import { z } from 'zod';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { Tool } from '../../src/authoring/tool.js';
import { builtinTools, type Tool as PublicTool } from '../../src/index.js';
import { loadBuiltinInfos } from '../../src/tools/index.js';
import { readdirSync, readFileSync } from 'node:fs';

// Compile-time checks (npm test type-checks this file): execute's args are typed from the schema
// in the forms docs/authoring-tools.md recommends. A regression here fails `tsc`, not jest.
const parameters = z.object({ path: z.string(), depth: z.number().optional() });

const objectForm = Tool.define('object_form', {
  description: 'd',
  parameters,
  async execute(args) {
    const p: string = args.path;
    const d: number | undefined = args.depth;
    return { title: p, metadata: { d }, output: p };
  },
});

const annotatedInit = Tool.define('annotated_init', async (initCtx: Tool.InitContext) => {
  const root = initCtx.workspaceRoot ?? '/';
  return {
    description: `under ${root}`,
    parameters,
    concurrency: 'exempt',
    timeout: { managed: true },
    async execute(args) {
      const p: string = args.path;
      return { title: p, metadata: {}, output: `${root}${p}` };
    },
  };
});

// Init options are typed: each tool declares its own in its own file (grep's grepBackend, list's
// listLimit, ...), and a user who imports the package sees all of them on Tool.InitContext.
const typedOptions: PublicTool.InitContext = { workingDir: '/w', grepBackend: 'js', listLimit: 5, memoryRoot: 'm' };
// @ts-expect-error a misspelled option is a compile error, not a value silently ignored
const misspelled: PublicTool.InitContext = { grepBakend: 'js' };
// @ts-expect-error an option's value is typed too
const wrongValue: PublicTool.InitContext = { grepBackend: 'ripgrep' };

describe('Tool.define typing', () => {
  it('typed init options are plain data handed to every tool unchanged', async () => {
    const seen: Tool.InitContext[] = [];
    const probe = Tool.define('probe', (initCtx: Tool.InitContext) => {
      seen.push(initCtx);
      return { description: 'd', parameters, execute: async () => ({ title: '', metadata: {}, output: '' }) };
    });
    for (const ctx of [typedOptions, misspelled, wrongValue]) await probe.init(ctx);
    expect(seen).toEqual([typedOptions, { grepBakend: 'js' }, { grepBackend: 'ripgrep' }]);
  });

  it('every built-in tool declares its permissions, danger and a .txt beside its module named after its id', () => {
    for (const { info, permissions, descriptionPath } of builtinTools) {
      expect({ id: info.id, permissions: info.permissions, danger: typeof info.danger }).toEqual({
        id: info.id,
        permissions,
        danger: 'string',
      });
      expect(path.basename(descriptionPath)).toBe(`${info.id}.txt`);
      expect({ id: info.id, exists: existsSync(descriptionPath) }).toEqual({ id: info.id, exists: true });
    }
  });

  it('the built-in list says what each tool file declares (id, permissions, danger, .txt), and lists every tool file', async () => {
    const declared = await loadBuiltinInfos();
    const about = (i: Tool.About) => ({
      id: i.id,
      permissions: i.permissions,
      danger: i.danger,
      txt: i.descriptionPath,
    });
    expect(builtinTools.map((t) => about(t.info))).toEqual(declared.map(about));
    // Every Tool.define with a declared id in src/tools/ is in the list (a new tool file cannot be forgotten).
    const dir = path.join(path.dirname(new URL(import.meta.url).pathname), '..', '..', 'src', 'tools');
    const ids = readdirSync(dir, { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts'))
      .flatMap((f) => [
        ...readFileSync(path.join(dir, f), 'utf8').matchAll(/Tool\.define(?:<[^>]*>)?\(\s*\{\s*id: '([a-z_]+)'/g),
      ])
      .map((m) => m[1]);
    expect(ids.length).toBeGreaterThanOrEqual(builtinTools.length);
    expect([...new Set(ids)].sort()).toEqual(builtinTools.map((t) => t.info.id).sort());
  });

  it('a built-in tool initialises through the list exactly as through its own file', async () => {
    const lazy = builtinTools.find((t) => t.info.id === 'list')!.info;
    const own = (await loadBuiltinInfos()).find((i) => i.id === 'list')!;
    const [a, b] = await Promise.all([lazy.init({ listLimit: 7 }), own.init({ listLimit: 7 })]);
    expect({ ...a, execute: typeof a.execute }).toEqual({ ...b, execute: typeof b.execute });
  });

  it('both forms run with parsed arguments', async () => {
    const a = await objectForm.init();
    const b = await annotatedInit.init({ workspaceRoot: '/ws/' });
    expect((await a.execute(a.parameters.parse({ path: 'x' }), {} as Tool.Context)).output).toBe('x');
    expect((await b.execute(b.parameters.parse({ path: 'y' }), {} as Tool.Context)).output).toBe('/ws/y');
  });
});
