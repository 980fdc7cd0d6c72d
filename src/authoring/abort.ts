/**
 * What a tool says when its call is aborted part-way, and the check that says it.
 * Must not stop or settle a call: the pipeline's own abort handling (and its message) is pipeline/call.ts'.
 */

/** The sentence for work stopped by an abort: `<what> was aborted before it finished. ...`. */
export function abortedMessage(what: string): string {
  return `${what} was aborted before it finished. Run it again if you still need the result.`;
}

/** Throws `message` (e.g. abortedMessage('grep')) when `signal` has fired. */
export function throwIfAborted(signal: AbortSignal | undefined, message: string): void {
  if (signal?.aborted) throw new Error(message);
}
