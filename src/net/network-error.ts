/**
 * What went wrong with a connection, as a clause a model can act on (unresolvable host, refused
 * or dropped connection, a certificate not accepted), shared by webfetch and the HTTP exchange.
 * Must not decide what to do about it: each caller starts its own sentence and ends it with advice.
 */
import { formatBytes } from '../text/format.js';
import { describeThrown } from '../text/describe.js';

/** Where the transfer was when it failed: `while <stage>` and the bytes read so far. */
export interface TransferStage {
  stage: string;
  bytes?: number;
}

/** The failure `err` of a connection to `url`, e.g. "the host x could not be resolved (ENOTFOUND); check the spelling of the domain". */
export function networkFailure(err: unknown, url: URL, where?: TransferStage): string {
  const e = err as NodeJS.ErrnoException | undefined;
  const code = typeof e?.code === 'string' ? e.code : '';
  const message = typeof e?.message === 'string' ? e.message : describeThrown(err);
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN')
    return `the host ${url.hostname} could not be resolved (${code}); check the spelling of the domain`;
  if (code === 'ECONNREFUSED') return `the connection to ${url.host} was refused; nothing is listening there`;
  if (code === 'ECONNRESET' || message === 'aborted') {
    const when = where ? ` while ${where.stage}${where.bytes ? ` (after ${formatBytes(where.bytes)})` : ''}` : '';
    return `the connection was closed by the server${when}`;
  }
  if (code.startsWith('ERR_TLS') || code.includes('CERT') || /certificate/i.test(message))
    return `the TLS certificate of ${url.host} was not accepted (${message})`;
  return `${message}${code ? ` (${code})` : ''}`;
}
