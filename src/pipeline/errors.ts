/**
 * The sentence a model reads for anything a tool threw: system errors in words, bare words given
 * their tool's name, values that are not errors described without ever throwing.
 */
/** What a system call's error code means, in words a model can act on. */
const SYSTEM_ERRORS: Record<string, string> = {
  ENOENT: 'it does not exist',
  EEXIST: 'something already exists there',
  EACCES: 'permission denied',
  EPERM: 'the operation is not permitted',
  ENAMETOOLONG: 'a name is too long (at most 255 bytes per name, 4096 per path)',
  ENOTDIR: 'a part of the path is not a directory',
  EISDIR: 'it is a directory',
  ENOTEMPTY: 'the directory is not empty',
  EXDEV: 'it would cross file systems',
  ENOSPC: 'the disk is full',
  EMFILE: 'too many files are open',
  EBUSY: 'it is busy',
  EROFS: 'the file system is read-only',
  ELOOP: 'it goes through too many symbolic links',
  EINVAL: 'an argument is invalid',
};

function shortPath(p: unknown): string {
  const s = String(p);
  return JSON.stringify(s.length > 160 ? `${s.slice(0, 160)}...` : s);
}

/**
 * The text of anything a tool threw, as a sentence; never throws, whatever the value (an Error
 * from another realm, a system error, a string, null, a Symbol, a Proxy that throws on access).
 */
export function errorText(err: unknown, toolId: string): string {
  const bug = 'This is a bug in the tool; try another way to get the result.';
  try {
    if (typeof err === 'string')
      return err.trim() ? err : `Tool "${toolId}" failed with an empty error message. ${bug}`;
    if (err !== null && typeof err === 'object') {
      const e = err as {
        message?: unknown;
        code?: unknown;
        syscall?: unknown;
        path?: unknown;
        dest?: unknown;
        name?: unknown;
      };
      const code = e.code;
      if (typeof code === 'string' && typeof e.syscall === 'string') {
        const where =
          e.path === undefined
            ? ''
            : ` of ${shortPath(e.path)}${e.dest === undefined ? '' : ` to ${shortPath(e.dest)}`}`;
        return `Tool "${toolId}" failed: ${e.syscall}${where} was refused because ${SYSTEM_ERRORS[code] ?? 'the system reported an error'} (${code}). Check the arguments and try again.`;
      }
      const message = e.message;
      if (typeof message === 'string' && message.trim()) {
        // A bare word ("trap", "boom") is not something a model can act on: say whose failure it is.
        return /\s/.test(message.trim()) ? message : `Tool "${toolId}" failed: ${message.trim()}. ${bug}`;
      }
      const json = JSON.stringify(err);
      const name = typeof e.name === 'string' && e.name ? e.name : 'an error without a message';
      return `Tool "${toolId}" failed with ${json && json !== '{}' ? json.slice(0, 500) : name}. ${bug}`;
    }
    return `Tool "${toolId}" failed with the value ${typeof err === 'symbol' ? err.toString() : String(err)}. ${bug}`;
  } catch {
    return `Tool "${toolId}" failed with an error value that could not be read. ${bug}`;
  }
}
