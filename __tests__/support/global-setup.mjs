/** jest globalSetup: clears the package's environment variables and gives the run a private TMPDIR (host-guard.mjs). */
export { setup as default } from './host-guard.mjs';
