import { describe, it, expect } from '@jest/globals';
import { z } from 'zod';
import { Tool } from '../src/tool.js';

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

describe('Tool.define typing', () => {
  it('both forms run with parsed arguments', async () => {
    const a = await objectForm.init();
    const b = await annotatedInit.init({ workspaceRoot: '/ws/' });
    expect((await a.execute(a.parameters.parse({ path: 'x' }), {} as Tool.Context)).output).toBe('x');
    expect((await b.execute(b.parameters.parse({ path: 'y' }), {} as Tool.Context)).output).toBe('/ws/y');
  });
});
