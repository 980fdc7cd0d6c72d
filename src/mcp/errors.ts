/**
 * Error text shared by the MCP modules.
 * Must not hold behaviour beyond wording errors.
 */

/**
 * An error's message without the SDK's `MCP error -32000: ` prefix; a failed fetch says what
 * failed. Duck-typed: errors from fetch may come from another realm (a vm context), where
 * `instanceof Error` is false.
 */
export function describeError(err: unknown): string {
  const e = err as { message?: unknown; cause?: { code?: unknown; message?: unknown } } | null;
  if (!e || typeof e !== 'object' || typeof e.message !== 'string') return String(err);
  const message = e.message.replace(/^MCP error -?\d+: /, '');
  if (message === 'fetch failed') {
    const why = e.cause ? String(e.cause.code ?? e.cause.message) : 'no answer';
    return `could not reach the server (${why}); check that it is running and the URL is right`;
  }
  return message;
}
