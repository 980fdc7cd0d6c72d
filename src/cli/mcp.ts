/**
 * `toolbelt mcp`: serve the registry over MCP stdio or Streamable HTTP until a signal.
 * Must not implement serving: that is src/mcp/server.ts' (loaded on first use); only flags and lifetime live here.
 */
import { UsageError, type Command, type Setup, type Values } from './command.js';
import { mcpClientApprover, useApprover } from './approver.js';

/** The environment variable `toolbelt mcp --http` reads the bearer token from when --token is not given. */
const MCP_TOKEN_ENV = 'TOOLBELT_MCP_TOKEN';

const HTTP_ONLY = ['host', 'token', 'allow-origin', 'stateless'] as const;

async function mcp({ registry, initCtx, grant, store }: Setup, values: Values): Promise<number> {
  const { serveMcp } = await import('../mcp/index.js');
  // The policy's asks go to the client's user as elicitations (refused when the client cannot show one).
  useApprover(registry.policy, mcpClientApprover());
  if (values.http === undefined) {
    for (const flag of HTTP_ONLY) {
      if (values[flag] !== undefined) throw new UsageError(`--${flag} applies to HTTP only: add --http PORT.`);
    }
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
  const token = (values.token as string | undefined) ?? (process.env[MCP_TOKEN_ENV] || undefined);
  const stateless = values.stateless === true;
  let serving;
  try {
    serving = await serveMcp(registry, {
      transport: 'http',
      port,
      host,
      token,
      allowedOrigins: values['allow-origin'] as string[] | undefined,
      stateless,
      permissions: grant,
      initCtx,
    });
  } catch (err) {
    // A missing or short token is a usage mistake, not a crash.
    if (/token/.test((err as Error).message)) throw new UsageError((err as Error).message);
    throw err;
  }
  process.stderr.write(
    `toolbelt: serving ${registry.enabled(grant).length} tools over MCP Streamable HTTP${stateless ? ' (stateless)' : ''} at ${serving.url}${token ? ' (bearer token required)' : ''}${store ? `, state in the ${store.label}` : ''}\n`,
  );
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await serving.close();
  return 0;
}

export const mcpCommand: Command = {
  options: {
    http: { type: 'string' },
    host: { type: 'string' },
    token: { type: 'string' },
    'allow-origin': { type: 'string', multiple: true },
    stateless: { type: 'boolean' },
  },
  positionals: [0, 0],
  usage:
    'toolbelt mcp [--http PORT [--host HOST] [--token T] [--allow-origin ORIGIN] [--stateless]] [--permissions LIST] [--workspace DIR]',
  run: (setup, values) => mcp(setup, values),
};
