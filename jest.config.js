/** Jest 30 in native ESM mode (run with --experimental-vm-modules); TypeScript via @swc/jest. */
export default {
  testEnvironment: 'node',
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
  // Tests spawn real processes and servers; two workers match CI's two cores.
  maxWorkers: 2,
};
