// ESLint flat config: typescript-eslint's type-aware rules for src/, __tests__/, bench/ and scripts/.
// `npm run lint` runs it with zero warnings allowed, plus madge's import-cycle check on src/.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** Node's globals, for the plain .js/.mjs files (benchmarks, scripts, fixtures). */
const nodeGlobals = Object.fromEntries(
  [
    'process',
    'console',
    'Buffer',
    'URL',
    'URLSearchParams',
    'AbortController',
    'AbortSignal',
    'TextEncoder',
    'TextDecoder',
    'setTimeout',
    'clearTimeout',
    'setInterval',
    'clearInterval',
    'setImmediate',
    'clearImmediate',
    'queueMicrotask',
    'structuredClone',
    'performance',
    'fetch',
    'Response',
    'Request',
    'Headers',
    'global',
    'globalThis',
  ].map((name) => [name, 'readonly']),
);

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', 'bench/out/**'] },
  js.configs.recommended,
  {
    files: ['**/*.ts'],
    extends: [tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // `Tool` is a namespace by contract (Tool.define, Tool.Context...), and tools declare their
      // typed init options by augmenting it (`declare module ... { namespace Tool { ... } }`).
      '@typescript-eslint/no-namespace': ['error', { allowDeclarations: true }],
      // A tool's `async execute()` that happens not to await is how it returns the Promise the
      // Tool.Definition contract asks for; the rule would make every such tool wrap its result.
      '@typescript-eslint/require-await': 'off',
      // `_`-prefixed parameters are deliberately unused (callbacks whose signature is fixed).
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // Tests read untyped JSON, LangChain message content (string | parts) and MCP results, and
    // throw hostile non-Error values on purpose (the pipeline must survive them): the unsafe-any and
    // stringification rules would only make them cast everything.
    files: ['__tests__/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/only-throw-error': 'off',
      '@typescript-eslint/no-base-to-string': 'off',
      '@typescript-eslint/restrict-plus-operands': 'off',
    },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    languageOptions: { globals: nodeGlobals },
  },
);
