/**
 * Error text shared by the MCP modules.
 * Must not hold behaviour beyond wording errors.
 */
import { describeThrown } from '../text/describe.js';

/**
 * An error's message without the SDK's `MCP error -32000: ` prefix; a failed fetch says what
 * failed. Duck-typed: errors from fetch may come from another realm (a vm context), where
 * `instanceof Error` is false.
 */
export function describeError(err: unknown): string {
  try {
    return withoutPrefix(err);
  } catch {
    return describeThrown(err); // a proxy whose traps throw: never a second throw in a catch
  }
}

function withoutPrefix(err: unknown): string {
  const e = err as { message?: unknown; cause?: { code?: unknown; message?: unknown } } | null;
  if (!e || typeof e !== 'object' || typeof e.message !== 'string') return describeThrown(err);
  const message = e.message.replace(/^MCP error -?\d+: /, '');
  if (message === 'fetch failed') {
    const why = e.cause ? describeThrown(e.cause.code ?? e.cause.message) : 'no answer';
    return `could not reach the server (${why}); check that it is running and the URL is right`;
  }
  return message;
}
