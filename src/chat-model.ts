/**
 * Turning a `provider:model` string (CLI `--model`, `TOOLBELT_MODEL`) into a LangChain chat model
 * with `initChatModel`, checking first that the provider's package is installed and its API key is
 * set, so the user gets one clear sentence instead of a stack trace.
 */

/** What each well-known provider needs: the LangChain package and the environment variable holding the key. */
export const PROVIDERS: Readonly<Record<string, { pkg: string; keyEnv?: string }>> = {
  openai: { pkg: '@langchain/openai', keyEnv: 'OPENAI_API_KEY' },
  azure_openai: { pkg: '@langchain/openai', keyEnv: 'AZURE_OPENAI_API_KEY' },
  anthropic: { pkg: '@langchain/anthropic', keyEnv: 'ANTHROPIC_API_KEY' },
  'google-genai': { pkg: '@langchain/google-genai', keyEnv: 'GOOGLE_API_KEY' },
  'google-vertexai': { pkg: '@langchain/google-vertexai' },
  mistralai: { pkg: '@langchain/mistralai', keyEnv: 'MISTRAL_API_KEY' },
  groq: { pkg: '@langchain/groq', keyEnv: 'GROQ_API_KEY' },
  deepseek: { pkg: '@langchain/deepseek', keyEnv: 'DEEPSEEK_API_KEY' },
  xai: { pkg: '@langchain/xai', keyEnv: 'XAI_API_KEY' },
  cohere: { pkg: '@langchain/cohere', keyEnv: 'COHERE_API_KEY' },
  bedrock: { pkg: '@langchain/aws' },
  ollama: { pkg: '@langchain/ollama' },
};

/** A model spec that cannot be used, with a message that says what to do. */
export class ModelConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ModelConfigError';
  }
}

/** Splits `provider:model`; throws a ModelConfigError for anything else. */
export function parseModelSpec(spec: string | undefined): { provider: string; model: string } {
  const m = /^([A-Za-z0-9_-]+):(.+)$/.exec(spec?.trim() ?? '');
  if (!m) {
    throw new ModelConfigError(
      `Model ${JSON.stringify(spec ?? '')} is not of the form provider:model (e.g. openai:gpt-4o-mini, anthropic:claude-sonnet-4-5). ` +
        'Pass --model provider:model or set TOOLBELT_MODEL.',
    );
  }
  return { provider: m[1], model: m[2] };
}

/** Environment and module loading, injectable for tests. */
export interface ModelLoaderDeps {
  env?: Record<string, string | undefined>;
  importModule?: (name: string) => Promise<unknown>;
}

/** Checks that the provider's package can be loaded and its key is set; throws ModelConfigError naming what is missing. */
export async function checkProvider(provider: string, deps: ModelLoaderDeps = {}): Promise<void> {
  const known = PROVIDERS[provider];
  if (!known) return; // initChatModel knows more providers than we list; let it decide.
  const env = deps.env ?? process.env;
  const importModule = deps.importModule ?? ((name: string) => import(name));
  try {
    await importModule(known.pkg);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (
      code === 'ERR_MODULE_NOT_FOUND' ||
      code === 'MODULE_NOT_FOUND' ||
      /Cannot find (module|package)/.test(String((err as Error).message))
    ) {
      throw new ModelConfigError(
        `The model provider "${provider}" needs the package ${known.pkg}, which is not installed. Install it with: npm install ${known.pkg}`,
      );
    }
    throw err;
  }
  if (known.keyEnv && !env[known.keyEnv]) {
    throw new ModelConfigError(
      `The model provider "${provider}" needs an API key in the environment variable ${known.keyEnv}, which is not set. ` +
        `Set it (e.g. in .env: ${known.keyEnv}=...) and retry.`,
    );
  }
}

/** Makes a chat model from `provider:model` with langchain's `initChatModel`, after `checkProvider`. */
export async function loadChatModel(spec: string | undefined, deps: ModelLoaderDeps = {}): Promise<unknown> {
  const { provider, model } = parseModelSpec(spec);
  await checkProvider(provider, deps);
  const { initChatModel } = await import('langchain');
  try {
    return await initChatModel(model, { modelProvider: provider });
  } catch (err) {
    throw new ModelConfigError(`Could not create the model ${provider}:${model}: ${(err as Error).message}`);
  }
}
