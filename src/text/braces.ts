/**
 * Brace expansion for globs (`{a,b}` alternatives), shared by the search tools and the policy's
 * patterns. Light on purpose: the root entry loads it through the policy, so it must not import a
 * tool module or anything heavy.
 */

/** Most alternatives one brace expression may expand to (`{a,b}{c,d}` counts 4). */
export const MAX_BRACE_EXPANSIONS = 256;

/**
 * Expands `{a,b}` alternatives (nested too) into plain globs, as ripgrep and fast-glob read them.
 * Braces with no comma, and escaped braces, stay literal.
 */
export function expandBraces(glob: string): string[] {
  const out: string[] = [];
  const walk = (s: string): void => {
    if (out.length > MAX_BRACE_EXPANSIONS) {
      throw new Error(
        `The glob ${JSON.stringify(glob)} expands to more than ${MAX_BRACE_EXPANSIONS} alternatives. Use fewer {a,b} groups.`,
      );
    }
    let depth = 0;
    let open = -1;
    const commas: number[] = [];
    for (let i = 0; i < s.length; i++) {
      const c = s[i];
      if (c === '\\') {
        i++;
        continue;
      }
      if (c === '{') {
        if (depth++ === 0) {
          open = i;
          commas.length = 0;
        }
      } else if (c === '}' && depth > 0) {
        if (--depth === 0) {
          if (commas.length === 0) {
            open = -1;
            continue;
          } // `{x}`: literal
          const parts: string[] = [];
          let from = open + 1;
          for (const c2 of commas) {
            parts.push(s.slice(from, c2));
            from = c2 + 1;
          }
          parts.push(s.slice(from, i));
          for (const part of parts) walk(s.slice(0, open) + part + s.slice(i + 1));
          return;
        }
      } else if (c === ',' && depth === 1) commas.push(i);
    }
    out.push(s);
  };
  walk(glob);
  return [...new Set(out)];
}
