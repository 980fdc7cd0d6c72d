/**
 * What the bash parser makes of a command line: the simple commands it would run, their words,
 * redirections and nested commands. Declared apart from the parser so that the package's public
 * types (the danger classification, the policy's checks) never name web-tree-sitter's types, whose
 * declarations need @types/emscripten in a user's project.
 * Must not import web-tree-sitter or parse anything (parser.ts).
 */

/** A redirection of a simple command. */
export interface ShellRedirect {
  /** The operator: `>`, `>>`, `>|`, `&>`, `&>>`, `>&`, `<`, `<&`, `<<`, `<<<`, ... */
  op: string;
  /** The target word's value (a file, a descriptor number, or `-`). */
  target: string;
  /** The target is computed at run time. */
  dynamic: boolean;
}

/** How a nested group of commands is reached from the command that holds it. */
export type NestKind = 'substitution' | 'shell' | 'wrapper' | 'exec';

/** Commands run on behalf of another: a substitution in its words, or the command a wrapper runs. */
export interface NestedCommands {
  how: NestKind;
  /** What the nested commands were read from (the substitution's or the string's text). */
  source: string;
  commands: ShellCommand[];
}

/** One simple command of a command line. */
export interface ShellCommand {
  /** The command as written, without its redirections. */
  text: string;
  /** Its words' values (command name first); `VAR=value` prefixes are in `assignments`. */
  words: string[];
  /** Which words are only known at run time (same indexes as `words`). */
  dynamic: boolean[];
  assignments: Array<{ name: string; value: string }>;
  redirects: ShellRedirect[];
  /** Reads the output of the previous stage of a pipeline. */
  pipedInto: boolean;
  /** The command name of the stage piping into this one. */
  pipedFrom?: string;
  nested: NestedCommands[];
  /** Why this command cannot be analysed (a syntax error, nesting too deep); it is then never "known". */
  opaque?: string;
}

/** Nesting depth of `$(...)`, `bash -c` and the like that is followed before giving up (as opaque). */
export const MAX_NESTING_DEPTH = 8;
