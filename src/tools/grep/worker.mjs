// grep's JS backend: tests one very long line in a worker thread (see grep-long-line.ts), so that a
// line of megabytes cannot hold the main event loop and a slow pattern on it can be terminated.
// Plain JavaScript because a worker runs outside any TypeScript transform.
import { parentPort } from 'node:worker_threads';
import { RE2JS } from 're2js';

const decoder = new TextDecoder();

parentPort.on('message', ({ id, source, caseInsensitive, automaton, bytes }) => {
  try {
    // Invalid UTF-8 becomes U+FFFD, as Buffer#toString does on the main thread.
    const text = decoder.decode(bytes);
    const matcher = automaton
      ? RE2JS.compile(source, caseInsensitive ? RE2JS.CASE_INSENSITIVE : 0)
      : new RegExp(source, `u${caseInsensitive ? 'i' : ''}`);
    parentPort.postMessage({ id, hit: matcher.test(text) });
  } catch (err) {
    parentPort.postMessage({ id, error: String(err && err.message ? err.message : err) });
  }
});
