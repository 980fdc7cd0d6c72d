/**
 * Async tools: `execute` as an async generator (yields are progress, the return value the result)
 * and pending results (`Tool.pending`, `registry.submitResult`, expiry, the cap, and how a
 * createAgent loop receives a late result on its next turn). Waits are on events, never sleeps.
 */
import { describe, it, expect } from '@jest/globals';
import { z } from 'zod';
import { createAgent } from 'langchain';
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import { fakeModel } from '@langchain/core/testing';
import { Tool, createRegistry, lateResultMessages, type ToolEvent, type ToolUpdate } from '../../src/index.js';
import { MAX_PENDING_CALLS, MAX_PENDING_EXPIRY_MS, DEFAULT_PENDING_EXPIRY_MS } from '../../src/constants.js';
import { callTool } from '../support/tool-call.js';

interface StepMeta extends Tool.Metadata {
  step: number;
}

const counter = Tool.define<z.ZodObject<{ n: z.ZodNumber }>, StepMeta>('counter', {
  description: 'counts to n, reporting each step',
  parameters: z.object({ n: z.number() }),
  async *execute(args) {
    for (let i = 1; i <= args.n; i++) yield { title: `step ${i}`, metadata: { step: i } };
    return { title: 'counted', metadata: { step: args.n }, output: `counted to ${args.n}` };
  },
});

/** A tool that waits for a person: it always answers later. */
const askHuman = Tool.define('ask_human', {
  description: 'Asks a person a question; the answer arrives later.',
  parameters: z.object({ question: z.string() }),
  async execute(args) {
    return Tool.pending({ message: `Asked a person: ${args.question}`, expiresInMs: 60_000 });
  },
});

function registryWith(...tools: Tool.Info[]) {
  const r = createRegistry();
  for (const t of tools) r.register(t, { permissions: { required: [] } });
  return r;
}

/** The next event of `type` from `registry`. */
function nextEvent<T extends ToolEvent['type']>(
  registry: ReturnType<typeof createRegistry>,
  type: T,
): Promise<Extract<ToolEvent, { type: T }>> {
  return new Promise((resolve) => {
    const off = registry.on(type, (e) => {
      off();
      resolve(e);
    });
  });
}

describe('execute as an async generator', () => {
  it('infers argument and progress types from the definition', () => {
    const typed = Tool.define<z.ZodObject<{ n: z.ZodNumber }>, StepMeta>('typed_gen', {
      description: 'x',
      parameters: z.object({ n: z.number() }),
      async *execute(args, ctx) {
        const n: number = args.n;
        ctx.metadata({ metadata: { step: 0 } });
        yield { metadata: { step: n } };
        return { title: 't', metadata: { step: n }, output: '' };
      },
    });
    // Initialized tools always return a promise, whatever form the definition took.
    const run: (tool: Tool.Initialized<z.ZodObject<{ n: z.ZodNumber }>, StepMeta>) => Promise<Tool.Result<StepMeta>> = (
      tool,
    ) => tool.execute({ n: 1 }, {} as Tool.Context<StepMeta>);
    expect(typeof run).toBe('function');
    // @ts-expect-error -- progress metadata must match the tool's metadata type
    Tool.define<z.ZodObject<{ n: z.ZodNumber }>, StepMeta>('bad_yield', {
      description: 'x',
      parameters: z.object({ n: z.number() }),
      async *execute() {
        yield { metadata: { step: 'one' } };
        return { title: 't', metadata: { step: 1 }, output: '' };
      },
    });
    // @ts-expect-error -- the return value must be a Tool.Result
    Tool.define('bad_return', {
      description: 'x',
      parameters: z.object({}),
      async *execute() {
        yield { title: 'x' };
        return { title: 'no output' };
      },
    });
    expect(typed.id).toBe('typed_gen');
  });

  it('turns each yield into a running update and the return value into the result (registry.execute)', async () => {
    const r = registryWith(counter);
    const seen: ToolUpdate[] = [];
    const progress: Tool.MetadataUpdate[] = [];
    const final = await r.execute('counter', { n: 3 }, { metadata: (u) => progress.push(u) }, undefined, {
      onToolResult: (u) => seen.push(u),
    });
    expect(seen.map((u) => `${u.status}:${u.result.title}`)).toEqual([
      'running:step 1',
      'running:step 2',
      'running:step 3',
      'completed:counted',
    ]);
    expect(progress.map((p) => p.metadata?.step)).toEqual([1, 2, 3]);
    expect(final.result).toMatchObject({ output: 'counted to 3', metadata: { step: 3 } });
  });

  it("reaches onToolResult and LangChain's custom stream through the adapter", async () => {
    const r = registryWith(counter);
    const updates: ToolUpdate[] = [];
    const tools = await r.tools({ onToolResult: (u) => updates.push(u) });
    const direct = await callTool(tools, 'counter', { n: 2 });
    expect(direct.content).toBe('counted to 2');
    expect(updates.filter((u) => u.status === 'running')).toHaveLength(2);

    const model = fakeModel()
      .respondWithTools([{ name: 'counter', args: { n: 2 }, id: 'call_count' }])
      .respond(new AIMessage('done'));
    const agent = createAgent({ model, tools });
    const custom: Array<{ title: string }> = [];
    for await (const chunk of await agent.stream({ messages: [new HumanMessage('count')] }, { streamMode: 'custom' }))
      custom.push(chunk as { title: string });
    expect(custom.map((c) => c.title)).toEqual(['step 1', 'step 2']);
  });

  it('ends the generator (its finally runs) when the call is aborted mid-way', async () => {
    let cleaned = false;
    let markCleaned!: () => void;
    const cleanedUp = new Promise<void>((resolve) => (markCleaned = resolve));
    let yielded!: () => void;
    const firstYield = new Promise<void>((resolve) => (yielded = resolve));
    let proceed!: () => void;
    const gate = new Promise<void>((resolve) => (proceed = resolve));
    const slow = Tool.define('slow_gen', {
      description: 'yields, then waits',
      parameters: z.object({}),
      async *execute() {
        try {
          yield { title: 'first' };
          yielded();
          await gate;
          yield { title: 'second (after abort)' };
          return { title: 'finished', metadata: {}, output: 'should not be seen' };
        } finally {
          cleaned = true;
          markCleaned();
        }
      },
    });
    const r = registryWith(slow);
    const controller = new AbortController();
    const titles: string[] = [];
    const running = r.execute('slow_gen', {}, {}, undefined, {
      signal: controller.signal,
      onToolResult: (u) => titles.push(u.result.title),
    });
    await firstYield;
    controller.abort();
    const final = await running;
    expect(final).toMatchObject({ status: 'error' });
    expect(final.error).toMatch(/aborted/);
    proceed();
    // The generator resumes once, sees the abort and is closed: its finally block runs.
    await cleanedUp;
    expect(cleaned).toBe(true);
    expect(titles).toEqual(['first', 'first']);
  });

  it('a generator that returns nothing fails with a sentence naming the tool', async () => {
    // @ts-expect-error -- deliberately returns no result
    const empty = Tool.define('empty_gen', {
      description: 'returns nothing',
      parameters: z.object({}),
      async *execute() {
        yield { title: 'working' };
      },
    });
    const final = await registryWith(empty).execute('empty_gen', {});
    expect(final.status).toBe('error');
    expect(final.error).toMatch(/Tool "empty_gen" finished without returning a result/);
  });
});

describe('pending results', () => {
  it('tells the model the result comes later and keeps a record; submitResult resolves it and emits an event', async () => {
    const r = registryWith(askHuman);
    const tools = await r.tools({ createContext: () => ({ sessionID: 's-1' }) });
    const pendingEvent = nextEvent(r, 'pending');
    const msg = await callTool(tools, 'ask_human', { question: 'Deploy on Friday?' }, 'call_ask');
    expect(msg.status).toBe('success');
    expect(msg.content).toContain('Asked a person: Deploy on Friday?');
    expect(msg.content).toContain('will arrive later');
    expect(msg.content).toContain('call_ask');
    expect(msg.result.metadata).toMatchObject({ pending: true });
    expect((await pendingEvent).call.toolCallId).toBe('call_ask');

    const [record] = await r.pending();
    expect(record).toMatchObject({
      toolCallId: 'call_ask',
      tool: 'ask_human',
      args: { question: 'Deploy on Friday?' },
      status: 'pending',
      sessionID: 's-1',
    });
    expect(record.expiresAt - record.createdAt).toBe(60_000);

    const resolved = nextEvent(r, 'resolved');
    const done = await r.submitResult('call_ask', 'Yes, after 10:00.');
    expect(done.status).toBe('resolved');
    const event = await resolved;
    expect(event.update).toMatchObject({ success: true, callID: 'call_ask', result: { output: 'Yes, after 10:00.' } });

    await expect(r.submitResult('call_ask', 'again')).rejects.toThrow(/already resolved/);
    await expect(r.submitResult('call_nope', 'x')).rejects.toThrow(/No call "call_nope" is waiting/);
    expect(await r.takeSettled({ sessionID: 'other' })).toEqual([]);
    expect((await r.takeSettled({ sessionID: 's-1' })).map((c) => c.toolCallId)).toEqual(['call_ask']);
    expect(await r.pending()).toEqual([]);
  });

  it('an Error submitted resolves the call as a failure', async () => {
    const r = registryWith(askHuman);
    await r.execute('ask_human', { question: 'q' }, {}, undefined, { callID: 'c-err' });
    await r.submitResult('c-err', new Error('The person declined to answer.'));
    const [settled] = await r.takeSettled();
    expect(settled.update).toMatchObject({ success: false, error: 'The person declined to answer.' });
    expect(lateResultMessages([settled])[0].content).toMatch(/failed:\n\nThe person declined to answer\./);
  });

  it('an expired call resolves as an error and emits an event', async () => {
    const quick = Tool.define('quick_pending', {
      description: 'expires fast',
      parameters: z.object({}),
      async execute() {
        return Tool.pending({ expiresInMs: 5 });
      },
    });
    const r = registryWith(quick);
    const expired = nextEvent(r, 'expired');
    await r.execute('quick_pending', {}, {}, undefined, { callID: 'c-exp' });
    const event = await expired;
    expect(event.update.success).toBe(false);
    expect(event.update.error).toMatch(/did not arrive by .* so the call failed/);
    await expect(r.submitResult('c-exp', 'late')).rejects.toThrow(/already expired/);
    expect((await r.pending())[0].status).toBe('expired');
  });

  it('clamps the expiry to MAX_PENDING_EXPIRY_MS and defaults to DEFAULT_PENDING_EXPIRY_MS', async () => {
    const long = Tool.define('long_pending', {
      description: 'x',
      parameters: z.object({ ms: z.number().optional() }),
      async execute(args) {
        return Tool.pending({ expiresInMs: args.ms });
      },
    });
    const r = registryWith(long);
    await r.execute('long_pending', { ms: MAX_PENDING_EXPIRY_MS * 2 }, {}, undefined, { callID: 'a' });
    await r.execute('long_pending', {}, {}, undefined, { callID: 'b' });
    const [a, b] = await r.pending();
    expect(a.expiresAt - a.createdAt).toBe(MAX_PENDING_EXPIRY_MS);
    expect(b.expiresAt - b.createdAt).toBe(DEFAULT_PENDING_EXPIRY_MS);
    await r.dispose();
  });

  it(`keeps at most MAX_PENDING_CALLS (${MAX_PENDING_CALLS}) waiting calls; settled ones make room`, async () => {
    const r = registryWith(askHuman);
    for (let i = 0; i < MAX_PENDING_CALLS; i++) {
      const ok = await r.execute('ask_human', { question: `q${i}` }, {}, undefined, { callID: `c${i}` });
      expect(ok.success).toBe(true);
    }
    const refused = await r.execute('ask_human', { question: 'one more' }, {}, undefined, { callID: 'c-over' });
    expect(refused.success).toBe(false);
    expect(refused.error).toMatch(new RegExp(`${MAX_PENDING_CALLS} calls are already waiting`));
    // A settled (not yet taken) record is evicted to make room for a new waiting call.
    await r.submitResult('c0', 'answer 0');
    const admitted = await r.execute('ask_human', { question: 'now' }, {}, undefined, { callID: 'c-new' });
    expect(admitted.success).toBe(true);
    expect((await r.pending()).map((c) => c.toolCallId)).not.toContain('c0');
    expect(await r.pending()).toHaveLength(MAX_PENDING_CALLS);
    await r.dispose();
  });

  it('a createAgent loop receives the late result as a message on its next turn', async () => {
    const r = registryWith(askHuman);
    const tools = await r.tools({ createContext: () => ({ sessionID: 'chat-1' }) });
    const model = fakeModel()
      .respondWithTools([{ name: 'ask_human', args: { question: 'Ship it?' }, id: 'call_ship' }])
      .respond(new AIMessage('I asked; I will continue when the answer arrives.'))
      .respond(new AIMessage('The person said yes, shipping.'));
    const agent = createAgent({ model, tools });

    const first = await agent.invoke({ messages: [new HumanMessage('Ask whether to ship.')] });
    const toolMsg = first.messages.find((m: BaseMessage) => ToolMessage.isInstance(m))!;
    expect(String(toolMsg.content)).toContain('will arrive later');

    // Later, a person answers (a webhook, a UI button):
    await r.submitResult('call_ship', 'Yes, ship it.');
    const late = lateResultMessages(await r.takeSettled({ sessionID: 'chat-1' }));
    const second = await agent.invoke({ messages: [...first.messages, ...late] });

    const seenByModel = model.calls[2].messages.map((m) => String(m.content));
    expect(seenByModel.at(-1)).toContain('The late result of your earlier call to ask_human (call call_ship)');
    expect(seenByModel.at(-1)).toContain('Yes, ship it.');
    expect(String(second.messages.at(-1)!.content)).toBe('The person said yes, shipping.');
  });
});
