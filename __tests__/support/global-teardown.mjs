/** jest globalTeardown: fails the run on anything left in its temp dir, then removes it (host-guard.mjs). */
export { teardown as default } from './host-guard.mjs';
