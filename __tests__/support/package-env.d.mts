/** Types for package-env.mjs (plain JS so jest's global setup can import it): see that file. */
export declare const KEPT_FROM_HOST: string[];
export declare function variablesReadBySource(root?: string): Set<string>;
export declare function providerVariables(root?: string): Set<string>;
export declare function variablesToClear(root?: string): string[];
export declare function clearPackageVariables(env: Record<string, string | undefined>, names?: string[]): string[];
