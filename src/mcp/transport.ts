/**
 * Transport selection: a stdio child process, Streamable HTTP, or the legacy HTTP+SSE transport
 * when a server answers Streamable HTTP's POST with 400/404/405 (the SDK's documented fallback).
 * Must not know about tools or registries.
 */
import type { Readable } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { McpServerConfig, McpServerStatus } from './types.js';
import { describeError } from './errors.js';
import { isInstance } from '../text/describe.js';
import { orderProgressBeforeResponses } from './progress-order.js';

export { orderProgressBeforeResponses };

/** How long (ms) a server may take to start and answer `initialize` and `tools/list`. */
export const MCP_CONNECT_TIMEOUT_MS = 30_000;
/** HTTP statuses with which a legacy (HTTP+SSE only) server refuses Streamable HTTP's POST. */
const LEGACY_SERVER_STATUSES = new Set([400, 404, 405]);

/** An initialised SDK client and what it runs over. */
export interface OpenedClient {
  client: Client;
  transport: Transport;
  kind: NonNullable<McpServerStatus['transport']>;
}

/** What opening a client needs besides the config. */
export interface OpenOptions {
  clientName: string;
  /** A stdio server's stderr chunks. */
  onStderr(chunk: string): void;
  /** Told which transport is being tried, so a failure reports the right one. */
  onTrying(kind: OpenedClient['kind']): void;
  /** Builds the SDK client (the connection adds its notification handlers). */
  makeClient(info: { name: string; version: string }): Client;
}

/** Starts the server's transport and completes `initialize`; throws a readable error on failure. */
export async function openClient(config: McpServerConfig, options: OpenOptions): Promise<OpenedClient> {
  const info = { name: options.clientName, version: '0.1.0' };
  if (config.transport === 'stdio') {
    const transport = new StdioClientTransport({
      command: config.command,
      args: config.args,
      // The child gets a minimal safe environment (no secrets of ours) plus what the entry asks for.
      env: { ...getDefaultEnvironment(), ...config.env },
      cwd: config.cwd,
      stderr: 'pipe',
    });
    const stderr = transport.stderr as Readable | null;
    stderr?.setEncoding('utf8');
    stderr?.on('data', (chunk: string) => options.onStderr(chunk));
    return connectOver(transport, 'stdio', options, info);
  }
  const url = new URL(config.url);
  const requestInit = config.headers ? { headers: config.headers } : undefined;
  if (config.transport === 'http') {
    try {
      return await connectOver(
        new StreamableHTTPClientTransport(url, { requestInit }),
        'streamable-http',
        options,
        info,
      );
    } catch (err) {
      if (!(isInstance(err, StreamableHTTPError) && LEGACY_SERVER_STATUSES.has(err.code ?? 0))) {
        throw new Error(`Streamable HTTP at ${config.url} failed: ${describeError(err)}`, { cause: err });
      }
      // A legacy server: fall through to HTTP+SSE.
    }
  }
  const sse = new SSEClientTransport(url, {
    requestInit,
    eventSourceInit: config.headers ? { fetch: withHeaders(config.headers) } : undefined,
  });
  try {
    return await connectOver(sse, 'sse', options, info);
  } catch (err) {
    const why =
      config.transport === 'http'
        ? `the server refused Streamable HTTP, and the legacy HTTP+SSE transport failed too`
        : 'the HTTP+SSE transport failed';
    throw new Error(`${why} at ${config.url}: ${describeError(err)}`, { cause: err });
  }
}

async function connectOver(
  transport: Transport,
  kind: OpenedClient['kind'],
  options: OpenOptions,
  info: { name: string; version: string },
): Promise<OpenedClient> {
  options.onTrying(kind);
  const client = options.makeClient(info);
  try {
    await client.connect(transport, { timeout: MCP_CONNECT_TIMEOUT_MS });
  } catch (err) {
    await client.close().catch(() => undefined);
    throw err;
  }
  orderProgressBeforeResponses(transport);
  return { client, transport, kind };
}

function withHeaders(headers: Record<string, string>): typeof fetch {
  return (input, init) =>
    fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), ...headers } });
}
