/** Jest 30 in native ESM mode (run with --experimental-vm-modules); TypeScript via @swc/jest. */
export default {
  // Node's, with a temp dir per suite checked empty at its end (__tests__/support/environment.mjs).
  testEnvironment: '<rootDir>/__tests__/support/environment.mjs',
  extensionsToTreatAsEsm: ['.ts'],
  transform: {
    '^.+\\.ts$': [
      '@swc/jest',
      {
        jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
        module: { type: 'es6' },
      },
    ],
  },
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  testMatch: ['<rootDir>/__tests__/**/*.test.ts'],
  testTimeout: 30000,
  // Guards for the host (docs/contributing.md): a private TMPDIR checked empty at the end, and no
  // variable the package reads taken from the host's environment.
  globalSetup: '<rootDir>/__tests__/support/global-setup.mjs',
  globalTeardown: '<rootDir>/__tests__/support/global-teardown.mjs',
  setupFiles: ['<rootDir>/__tests__/support/setup-env.mjs'],
  // Tests spawn real processes and servers; two workers match CI's two cores.
  maxWorkers: 2,
};
