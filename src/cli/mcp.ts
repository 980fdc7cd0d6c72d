/**
 * `toolbelt mcp`: serve the registry over MCP stdio or Streamable HTTP until a signal.
 * The server itself is src/mcp/server.ts' (loaded on first use); only flags and lifetime live here.
 */
import { UsageError, type Command, type Setup, type Values } from './command.js';

async function mcp({ registry, initCtx, grant }: Setup, values: Values): Promise<number> {
  const { serveMcp } = await import('../mcp/server.js');
  if (values.http === undefined) {
    const serving = await serveMcp(registry, { transport: 'stdio', permissions: grant, initCtx });
    const stop = () => void serving.close();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    process.stderr.write(`toolbelt: serving ${registry.enabled(grant).length} tools over MCP stdio\n`);
    await serving.closed;
    return 0;
  }
  const port = Number(values.http);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new UsageError(
      `--http needs a port number 0-65535 (0 picks a free one), got ${JSON.stringify(values.http)}.`,
    );
  const host = values.host === undefined ? undefined : String(values.host);
  const serving = await serveMcp(registry, { transport: 'http', port, host, permissions: grant, initCtx });
  process.stderr.write(
    `toolbelt: serving ${registry.enabled(grant).length} tools over MCP Streamable HTTP at ${serving.url}\n`,
  );
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await serving.close();
  return 0;
}

export const mcpCommand: Command = {
  options: { http: { type: 'string' }, host: { type: 'string' } },
  positionals: [0, 0],
  usage: 'toolbelt mcp [--http PORT] [--permissions LIST]',
  run: (setup, values) => mcp(setup, values),
};
