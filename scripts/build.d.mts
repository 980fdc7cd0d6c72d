/** Written after a successful build, dated when the build began. */
export const BUILD_STAMP: string;
/** What a build reads besides src/: a change to any of them makes dist/ stale. */
export const BUILD_INPUTS: readonly string[];
/** Whether dist/ under `root` was built after the last change to any build input. */
export function distUpToDate(root?: string): boolean;
