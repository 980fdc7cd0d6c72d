/**
 * jest setupFiles: before each suite, clears every variable the package reads (package-env.mjs;
 * PATH kept) from the suite's process.env, so no suite sees the host's values; a test that means
 * to use one sets it itself. The global setup already cleared them in the real environment.
 */
import { clearPackageVariables } from './package-env.mjs';

clearPackageVariables(process.env);
