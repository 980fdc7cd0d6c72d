/**
 * The real provider classes, pointed at a mock server with each class's own base-URL option. No
 * retries: a refused request must fail the test at once, with the mock's 400 message.
 */
import { ChatOpenAI } from '@langchain/openai';
import { ChatAnthropic } from '@langchain/anthropic';
import { ChatGoogleGenerativeAI } from '@langchain/google-genai';
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import type { Api } from './subsets.js';
import { fixGeminiParallelToolResults } from '../../src/index.js';

/** Every API the suite covers: OpenAI has two (Chat Completions and Responses). */
export const APIS: readonly Api[] = ['openai-chat', 'openai-responses', 'anthropic', 'gemini'];

/** Options of `chatModel`. */
export interface ModelOptions {
  streaming?: boolean;
  /** Gemini only: leave out fixGeminiParallelToolResults (to show what the class sends without it). */
  unfixed?: boolean;
  /** OpenAI only: send tools with `strict: true`. */
  strict?: boolean;
}

/** A real provider class of `api` whose requests go to `baseUrl` (a mock server). */
export function chatModel(api: Api, baseUrl: string, options: ModelOptions = {}): BaseChatModel {
  // Only passed when asked: ChatOpenAI reads an explicit `streaming: false` as "never stream".
  const streaming = options.streaming ? { streaming: true } : {};
  switch (api) {
    case 'openai-chat':
    case 'openai-responses':
      return new ChatOpenAI({
        model: 'gpt-4o-mini',
        apiKey: 'sk-test',
        ...streaming,
        maxRetries: 0,
        useResponsesApi: api === 'openai-responses',
        ...(options.strict ? { supportsStrictToolCalling: true } : {}),
        configuration: { baseURL: `${baseUrl}/v1` },
      });
    case 'anthropic':
      return new ChatAnthropic({
        model: 'claude-sonnet-4-5',
        apiKey: 'sk-ant-test',
        ...streaming,
        maxRetries: 0,
        anthropicApiUrl: baseUrl,
      });
    case 'gemini': {
      const model = new ChatGoogleGenerativeAI({
        model: 'gemini-2.5-flash',
        apiKey: 'gemini-test',
        ...streaming,
        maxRetries: 0,
        baseUrl,
      });
      return options.unfixed ? model : fixGeminiParallelToolResults(model);
    }
  }
}
