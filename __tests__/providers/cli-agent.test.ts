/**
 * `toolbelt agent` with real provider classes (openai:, anthropic:, google-genai:) against the
 * mocks, pointed there by the base-URL variables each class reads; keys and base URLs from the
 * environment or `.env`; API errors (401, 429, 5xx) and network failures as one line with bounded
 * retries; a missing provider package or key, or an unknown provider, as one line saying what to do.
 */
import { describe, it, expect, beforeAll, beforeEach, afterEach } from '@jest/globals';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { ROOT, ensureDist } from '../support/dist.js';
import { describeModelError, loadChatModel } from '../../src/providers/chat-model.js';
import { tempDir } from '../support/helpers.js';
import { runCli } from '../support/cli-run.js';
import { startMockProvider, toolResults, type MockProvider, type ScriptStep } from './mock-server.js';
import { sentTools, type Api } from './subsets.js';

let ws: { dir: string; cleanup: () => Promise<void> };
let mock: MockProvider | undefined;

beforeAll(() => ensureDist(), 180_000);
beforeEach(async () => {
  ws = await tempDir('toolbelt-cli-agent-');
  await writeFile(path.join(ws.dir, 'notes.md'), 'The deploy script lives in ops/deploy.sh\n');
});
afterEach(async () => {
  await mock?.close();
  mock = undefined;
  await ws.cleanup();
});

/** Runs the built CLI in the workspace with exactly `env` (plus PATH): no key or URL leaks in from the host. */
const toolbelt = (args: string[], env: Record<string, string> = {}) => runCli(ws.dir, args, env);

/** Builds `spec` with the CLI's loader under `env`, makes one call, returns describeModelError's line. */
async function failedCall(spec: string, env: Record<string, string>, maxRetries: number): Promise<string> {
  const saved = { ...process.env };
  Object.assign(process.env, env);
  try {
    const model = (await loadChatModel(spec, { maxRetries })) as { invoke(input: string): Promise<unknown> };
    const err = await model.invoke('hi').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeDefined();
    return describeModelError(err, spec, { env, maxRetries });
  } finally {
    for (const key of Object.keys(env)) delete process.env[key];
    Object.assign(process.env, saved);
  }
}

/** The environment that points each provider's class at the mock, as a user would set it. */
const PROVIDERS: Record<string, { api: Api; model: string; env: (url: string) => Record<string, string> }> = {
  openai: {
    api: 'openai-chat',
    model: 'openai:gpt-4o-mini',
    env: (url) => ({ OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: `${url}/v1` }),
  },
  anthropic: {
    api: 'anthropic',
    model: 'anthropic:claude-sonnet-4-5',
    env: (url) => ({ ANTHROPIC_API_KEY: 'sk-ant-test', ANTHROPIC_BASE_URL: url }),
  },
  'google-genai': {
    api: 'gemini',
    model: 'google-genai:gemini-2.5-flash',
    env: (url) => ({ GEMINI_API_KEY: 'gemini-test', GOOGLE_GEMINI_BASE_URL: url }),
  },
};

const grepThenAnswer: ScriptStep[] = [
  { calls: [{ name: 'grep', args: { pattern: 'deploy' } }] },
  (req) => ({ text: /notes\.md/.test(toolResults(req)[0]?.content ?? '') ? 'It is in notes.md.' : 'not found' }),
];

describe.each(Object.entries(PROVIDERS))('toolbelt agent --model %s:…', (_name, p) => {
  it('runs the task with the default permissions against the API at the base URL', async () => {
    mock = await startMockProvider(grepThenAnswer);
    const res = await toolbelt(['agent', 'Where is the deploy script?', '--model', p.model], p.env(mock.url));
    expect(res.stderr).not.toMatch(/\n\s+at /);
    expect([res.code, res.stdout.trim()]).toEqual([0, 'It is in notes.md.']);
    expect(mock.requests.map((r) => r.refused)).toEqual([undefined, undefined]);
    // Default permissions grant every built-in.
    const offered = sentTools(mock.requests[0].api, mock.requests[0].body).map((t) => t.name);
    expect(offered).toEqual(expect.arrayContaining(['read', 'edit', 'bash', 'webfetch']));
  });

  it('offers task with a general-purpose sub-agent on the same model and tools; --no-task leaves it out', async () => {
    const subCall = p.api === 'anthropic' ? 'toolu_sub' : 'call_sub';
    mock = await startMockProvider([
      {
        calls: [
          {
            name: 'task',
            args: {
              description: 'Find the script',
              prompt: 'Where is the deploy script?',
              subagent_type: 'general-purpose',
            },
          },
        ],
      },
      { calls: [{ name: 'grep', args: { pattern: 'deploy' }, id: subCall }] },
      (req) => ({ text: /notes\.md/.test(toolResults(req)[0]?.content ?? '') ? 'notes.md says ops/deploy.sh' : 'no' }),
      (req) => ({ text: `Sub-agent: ${toolResults(req)[0]?.content ?? ''}` }),
    ]);
    const res = await toolbelt(['agent', 'Where is the deploy script?', '--model', p.model], p.env(mock.url));
    expect([res.code, res.stdout.trim()]).toEqual([0, 'Sub-agent: notes.md says ops/deploy.sh']);
    expect(mock.requests.map((r) => r.refused)).toEqual([undefined, undefined, undefined, undefined]);
    const offered = (i: number) => sentTools(mock!.requests[i].api, mock!.requests[i].body).map((t) => t.name);
    const task = sentTools(mock.requests[0].api, mock.requests[0].body).find((t) => t.name === 'task')!;
    expect(task.description).toMatch(/general-purpose: A general-purpose agent with the same model and tools/);
    // The sub-agent ran on the same model with the same tools, less task.
    expect(offered(1)).toEqual(offered(0).filter((n) => n !== 'task'));
    expect(mock.requests[1].body.model ?? mock.requests[1].path).toEqual(
      mock.requests[0].body.model ?? mock.requests[0].path,
    );
    await mock.close();

    mock = await startMockProvider([{ text: 'ok' }]);
    const without = await toolbelt(['agent', 'hi', '--model', p.model, '--no-task'], p.env(mock.url));
    expect(without.code).toBe(0);
    expect(offered(0)).not.toContain('task');
    expect(offered(0)).toContain('bash');
  });

  // In-process (the CLI's own loader and error text, no process per case): 401 and 5xx.
  it('401: one line naming the key variable', async () => {
    mock = await startMockProvider([{ error: { status: 401 } }]);
    const line = await failedCall(p.model, p.env(mock.url), 2);
    expect(mock.requests).toHaveLength(1);
    expect(line).toMatch(/^The \S+ API at 127\.0\.0\.1:\d+ refused the API key \(401.*\)\. Check \w+_API_KEY/);
  });

  it('5xx: retried exactly maxRetries times, then one line', async () => {
    const failure = { error: { status: 503, message: 'The server is overloaded.', retryAfter: '5' } };
    mock = await startMockProvider([failure, failure, failure, failure]);
    const line = await failedCall(p.model, p.env(mock.url), 2);
    expect(mock.requests).toHaveLength(3);
    expect(line).toMatch(/failed \(503.*overloaded.*\) after 2 retries\. Try again later/);
  });
});

// Through the built CLI: what a user sees is exactly one line on stderr, exit code 1, no stack.
it.each([
  [
    401,
    'anthropic',
    /^toolbelt: The anthropic API at 127\.0\.0\.1:\d+ refused the API key \(401.*\)\. Check ANTHROPIC_API_KEY\.$/,
  ],
  [429, 'openai', /^toolbelt: The openai API at .* is rate-limiting this key \(429.*\)\. Wait a moment and retry/],
  [
    503,
    'google-genai',
    /^toolbelt: The google-genai API at 127\.0\.0\.1:\d+ failed \(503.*\) after 1 retry\. Try again later/,
  ],
])('toolbelt agent, API answers %i (%s): one line, exit 1, no stack', async (status, name, line) => {
  const failure = { error: { status, retryAfter: '5' } };
  mock = await startMockProvider([failure, failure]);
  const p = PROVIDERS[name];
  const res = await toolbelt(['agent', 'hi', '--model', p.model, '--max-retries', '1'], p.env(mock.url));
  expect(res.code).toBe(1);
  expect(mock.requests.length).toBeLessThanOrEqual(2);
  expect(res.stderr.split('\n').filter(Boolean)).toEqual([expect.stringMatching(line)]);
  expect(res.stdout).toBe('');
});

it('network failure: one line naming the host and what to check, exit 1, no stack', async () => {
  // A port that was free a moment ago: connection refused.
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((r) => server.close(() => r()));
  const url = `http://127.0.0.1:${port}`;
  const res = await toolbelt(
    ['agent', 'hi', '--model', 'openai:gpt-4o-mini', '--max-retries', '1'],
    PROVIDERS.openai.env(url),
  );
  expect(res.code).toBe(1);
  expect(res.stderr.trim().split('\n')).toHaveLength(1);
  expect(res.stderr).toMatch(
    new RegExp(
      `^toolbelt: Could not reach the openai API at 127\\.0\\.0\\.1:${port} \\(connection refused\\) after 1 retry\\. Check the network connection, proxy and OPENAI_BASE_URL \\(set to ${url}/v1\\)`,
    ),
  );
  for (const name of ['anthropic', 'google-genai']) {
    const p = PROVIDERS[name];
    const line = await failedCall(p.model, p.env(url), 0);
    expect(line).toMatch(
      new RegExp(
        `^Could not reach the ${name} API at 127\\.0\\.0\\.1:${port} \\(connection (refused|failed)\\) after 0 retries\\. Check the network connection, proxy and \\w+_BASE_URL`,
      ),
    );
  }
});

it('reads keys and base URLs from .env in the working directory (GEMINI_API_KEY for google-genai)', async () => {
  mock = await startMockProvider(grepThenAnswer);
  await writeFile(path.join(ws.dir, '.env'), `GEMINI_API_KEY=from-dotenv\nGOOGLE_GEMINI_BASE_URL=${mock.url}\n`);
  const res = await toolbelt(['agent', 'Where?', '--model', 'google-genai:gemini-2.5-flash']);
  expect([res.code, res.stdout.trim()]).toEqual([0, 'It is in notes.md.']);
  expect(mock.requests[0].headers['x-goog-api-key']).toBe('from-dotenv');
});

it('google-genai takes its key from GOOGLE_API_KEY too (the variable the class reads first)', async () => {
  mock = await startMockProvider(grepThenAnswer);
  const res = await toolbelt(['agent', 'Where?', '--model', 'google-genai:gemini-2.5-flash'], {
    GOOGLE_API_KEY: 'from-google-api-key',
    GOOGLE_GEMINI_BASE_URL: mock.url,
  });
  expect([res.code, res.stdout.trim()]).toEqual([0, 'It is in notes.md.']);
  expect(mock.requests.map((r) => r.headers['x-goog-api-key'])).toEqual(['from-google-api-key', 'from-google-api-key']);
});

it('a provider whose package is not installed: one line naming the npm install to run, exit 2, no stack', async () => {
  // @langchain/groq is a provider toolbelt knows but this repository does not install.
  expect(existsSync(path.join(ROOT, 'node_modules', '@langchain', 'groq'))).toBe(false);
  const res = await toolbelt(['agent', 'hi', '--model', 'groq:llama-3.1-8b-instant'], { GROQ_API_KEY: 'gsk-test' });
  expect(res.code).toBe(2);
  expect(res.stderr.split('\n').filter(Boolean)).toEqual([
    'toolbelt: The model provider "groq" needs the package @langchain/groq, which is not installed. Install it with: npm install @langchain/groq',
  ]);
});

it('a missing key names every variable the class reads', async () => {
  const res = await toolbelt(['agent', 'hi', '--model', 'google-genai:gemini-2.5-flash']);
  expect(res.code).toBe(2);
  expect(res.stderr).toMatch(
    /needs an API key in one of the environment variables GOOGLE_API_KEY or GEMINI_API_KEY, none of which is set/,
  );
});

it('an unknown provider is one line listing the supported ones', async () => {
  const res = await toolbelt(['agent', 'hi', '--model', 'foo:bar']);
  expect(res.code).toBe(2);
  expect(res.stderr.split('\n')[0]).toBe(
    'toolbelt: Unknown model provider "foo" in "foo:bar". Supported providers: openai, anthropic, google-genai, azure_openai, google-vertexai, mistralai, groq, deepseek, xai, cohere, bedrock, ollama.',
  );
});

it('--max-retries outside 0-10 is a usage error', async () => {
  const res = await toolbelt(['agent', 'hi', '--model', 'openai:gpt-4o-mini', '--max-retries', '99'], {
    OPENAI_API_KEY: 'k',
  });
  expect(res.code).toBe(2);
  expect(res.stderr).toMatch(/--max-retries must be a whole number from 0 to 10, got "99"/);
});

it('--max-description-chars 1024: a 1,024-character endpoint accepts every tool; without it the request is refused', async () => {
  const p = PROVIDERS.openai;
  mock = await startMockProvider([{ text: 'ok' }], { maxDescriptionChars: 1024 });
  const refused = await toolbelt(['agent', 'hi', '--model', p.model, '--max-retries', '0'], p.env(mock.url));
  expect(refused.code).toBe(1);
  expect(refused.stderr).toMatch(/string too long/);
  await mock.close();
  mock = await startMockProvider([{ text: 'ok' }], { maxDescriptionChars: 1024 });
  const ok = await toolbelt(['agent', 'hi', '--model', p.model, '--max-description-chars', '1024'], p.env(mock.url));
  expect([ok.code, ok.stdout.trim()]).toEqual([0, 'ok']);
  expect(sentTools('openai-chat', mock.requests[0].body).every((t) => (t.description ?? '').length <= 1024)).toBe(true);
  const bad = await toolbelt(['agent', 'hi', '--model', p.model, '--max-description-chars', '100'], p.env(mock.url));
  expect(bad.code).toBe(2);
  expect(bad.stderr).toMatch(/--max-description-chars must be a whole number of at least 200/);
});
