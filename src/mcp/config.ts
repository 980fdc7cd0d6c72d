/**
 * Config parsing: the server lists and maps people already have, and each entry's validation
 * and `${...}` expansion. Three shapes are read:
 * - ours: `{ "servers": [{ "name", "transport", ... }] }`
 * - Claude Desktop / Cursor: `{ "mcpServers": { "<name>": { "command", "args", "env" } | { "url" } } }`
 * - VS Code: `{ "servers": { "<name>": { "type": "stdio" | "http" | "sse", ... } } }`
 * A bad entry fails alone (an error naming the server and the field); the others still connect.
 * Must not connect to anything: parsing and validation only.
 */
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ALL_PERMISSIONS } from '../authoring/permissions.js';
import type { McpServerConfig } from './types.js';

/** Options of `loadMcpConfig`. */
export interface LoadMcpConfigOptions {
  /**
   * What `${workspaceFolder}` means (default: the directory above `.vscode/` for a file in one,
   * else the config file's directory).
   */
  workspaceFolder?: string;
}

/** Where `${...}` in an entry gets its values. */
export interface ExpansionContext {
  workspaceFolder: string;
  variables: Record<string, string | undefined>;
}

/**
 * Reads an MCP config file in any of the three shapes. Relative stdio `cwd`s resolve against the
 * file's directory; `${workspaceFolder}` becomes `options.workspaceFolder` (see its default).
 * Throws only when the file as a whole is unusable; bad entries fail when connected.
 */
export async function loadMcpConfig(file: string, options: LoadMcpConfigOptions = {}): Promise<McpServerConfig[]> {
  const abs = path.resolve(file);
  let text: string;
  try {
    text = await readFile(abs, 'utf8');
  } catch (err) {
    throw new Error(
      `Cannot read the MCP config file ${abs} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}). Check the path.`,
      { cause: err },
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new Error(
      `The MCP config file ${abs} is not valid JSON: ${(err as Error).message}. Fix the file and retry.`,
      { cause: err },
    );
  }
  const dir = path.dirname(abs);
  const workspaceFolder = options.workspaceFolder ?? (path.basename(dir) === '.vscode' ? path.dirname(dir) : dir);
  return parseMcpConfig(json, dir, abs).map((s) => ({ ...s, workspaceFolder }));
}

/** Normalises an already-parsed config object (any of the three shapes) into server configs. */
export function parseMcpConfig(json: unknown, baseDir = process.cwd(), source = 'the MCP config'): McpServerConfig[] {
  if (!json || typeof json !== 'object' || Array.isArray(json)) {
    throw new Error(
      `${source} must be a JSON object with "servers" (a list or a map of name -> server) or "mcpServers" (a map).`,
    );
  }
  const obj = json as { servers?: unknown; mcpServers?: unknown };
  let entries: unknown[];
  if (Array.isArray(obj.servers)) entries = obj.servers;
  else if (isMap(obj.servers)) entries = named(obj.servers);
  else if (isMap(obj.mcpServers)) entries = named(obj.mcpServers);
  else {
    throw new Error(
      `${source} has neither "servers" (a list or a map) nor "mcpServers" (a map of name -> server). See docs/mcp.md for the format.`,
    );
  }
  return entries.map((s) => {
    if (!s || typeof s !== 'object') return s as McpServerConfig; // reported by validateServer
    const out = { ...(s as Record<string, unknown>) };
    // `type` is how the maps spell the transport ("stdio", "http", "streamable-http", "sse").
    if (out.transport === undefined) {
      const type = out.type;
      out.transport =
        type === 'sse'
          ? 'sse'
          : type === 'http' || type === 'streamable-http' || (type === undefined && typeof out.url === 'string')
            ? 'http'
            : type === undefined
              ? 'stdio'
              : type;
      delete out.type;
    }
    if (out.transport === 'stdio' && typeof out.cwd === 'string' && !out.cwd.includes('${')) {
      out.cwd = path.resolve(baseDir, out.cwd);
    }
    return out as unknown as McpServerConfig;
  });
}

/**
 * Checks one entry and expands `${VAR}`, `${env:VAR}`, `${VAR:-default}`, `${workspaceFolder}`
 * and `${userHome}` in its command, args, env, cwd, url and headers. Throws an error naming the
 * server and the field.
 */
export function resolveServerConfig(raw: unknown, index: number, ctx: ExpansionContext): McpServerConfig {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new Error(
      `MCP server #${index + 1} must be an object like { "command": "npx", "args": [...] } or { "url": "https://..." }.`,
    );
  }
  const c = { ...(raw as Record<string, unknown>) };
  const name = c.name;
  if (typeof name !== 'string' || !name) {
    throw new Error(`MCP server #${index + 1}: "name" must be a non-empty string (it prefixes the tool ids).`);
  }
  const fail = (field: string, what: string): never => {
    throw new Error(`MCP server "${name}": ${field} ${what}`);
  };
  if ('invalid' in c) {
    throw new Error(
      `MCP server "${name}" must be an object like { "command": ... } or { "url": ... }, got ${JSON.stringify(c.invalid)}.`,
    );
  }
  const workspaceFolder = typeof c.workspaceFolder === 'string' ? c.workspaceFolder : ctx.workspaceFolder;
  delete c.workspaceFolder;
  const expand = (value: unknown, field: string): string => {
    if (typeof value !== 'string') return fail(`"${field}"`, `must be a string, got ${JSON.stringify(value)}.`);
    return expandVariables(value, { ...ctx, workspaceFolder }, (msg) => fail(`"${field}"`, msg));
  };
  const expandMap = (value: unknown, field: string): Record<string, string> | undefined => {
    if (value === undefined) return undefined;
    if (!value || typeof value !== 'object' || Array.isArray(value)) {
      return fail(`"${field}"`, `must be an object of strings, got ${JSON.stringify(value)}.`);
    }
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, expand(v, `${field}.${k}`)]),
    );
  };
  if (c.transport === 'stdio') {
    if (typeof c.command !== 'string' || !c.command)
      fail('"command"', 'is missing: a stdio server needs the program to start (or give "url" for an HTTP server).');
    c.command = expand(c.command, 'command');
    if (c.args !== undefined) {
      if (!Array.isArray(c.args)) fail('"args"', `must be a list of strings, got ${JSON.stringify(c.args)}.`);
      c.args = (c.args as unknown[]).map((a, i) => expand(a, `args[${i}]`));
    }
    c.env = expandMap(c.env, 'env');
    if (c.cwd !== undefined) c.cwd = expand(c.cwd, 'cwd');
  } else if (c.transport === 'http' || c.transport === 'sse') {
    const url = expand(c.url, 'url');
    let parsed: URL | undefined;
    try {
      parsed = new URL(url);
    } catch {
      parsed = undefined;
    }
    if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:'))
      fail('"url"', `must be an absolute http(s) URL, got ${JSON.stringify(url)}.`);
    c.url = url;
    c.headers = expandMap(c.headers, 'headers');
  } else {
    fail(
      '"transport"',
      `must be "stdio", "http" or "sse" (or give "command" or "url"), got ${JSON.stringify(c.transport)}.`,
    );
  }
  for (const key of ['env', 'headers', 'args', 'cwd'] as const) if (c[key] === undefined) delete c[key];
  for (const key of ['timeoutMs', 'maxTotalTimeoutMs'] as const) {
    const v = c[key];
    if (v !== undefined && !(typeof v === 'number' && Number.isFinite(v) && v > 0))
      fail(`"${key}"`, `must be a positive number of milliseconds, got ${JSON.stringify(v)}.`);
  }
  for (const key of ['toolsAllowed', 'toolsDenied'] as const) {
    const v = c[key];
    if (v !== undefined && !(Array.isArray(v) && v.every((x) => typeof x === 'string')))
      fail(`"${key}"`, `must be a list of tool names, got ${JSON.stringify(v)}.`);
  }
  const perms = c.permissions;
  if (perms !== undefined && typeof perms !== 'function') {
    const lists = Array.isArray(perms) ? [perms] : isMap(perms) ? Object.values(perms) : [perms];
    for (const list of lists) {
      if (!Array.isArray(list))
        fail('"permissions"', `must be a list or a map of lists, got ${JSON.stringify(perms)}.`);
      for (const p of list as unknown[]) {
        if (!(ALL_PERMISSIONS as readonly unknown[]).includes(p))
          fail('"permissions"', `has the unknown permission ${JSON.stringify(p)}; use ${ALL_PERMISSIONS.join(', ')}.`);
      }
    }
  }
  return c as unknown as McpServerConfig;
}

/** Expands `${...}` in one string; `fail` receives the reason when a variable cannot be expanded. */
function expandVariables(value: string, ctx: ExpansionContext, fail: (message: string) => never): string {
  return value.replace(/\$\{([^}]*)\}/g, (whole, body: string) => {
    if (body === 'workspaceFolder') return ctx.workspaceFolder;
    if (body === 'userHome') return os.homedir();
    if (body.startsWith('input:')) {
      return fail(
        `uses ${whole}, a VS Code input prompt, which toolbelt cannot show. Put the value in an environment variable and write \${env:NAME}.`,
      );
    }
    const m = /^(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-(.*))?$/.exec(body);
    if (!m)
      return fail(
        `uses ${whole}, which is not a variable toolbelt knows. Use \${VAR}, \${env:VAR} or \${workspaceFolder}.`,
      );
    const [, name, fallback] = m;
    const v = ctx.variables[name];
    if (v !== undefined && v !== '') return v;
    if (fallback !== undefined) return fallback;
    return fail(
      `uses ${whole}, but the environment variable ${name} is not set. Set it, or write \${${name}:-default}.`,
    );
  });
}

function isMap(v: unknown): v is Record<string, unknown> {
  return !!v && typeof v === 'object' && !Array.isArray(v);
}

function named(map: Record<string, unknown>): unknown[] {
  return Object.entries(map).map(([name, s]) => (isMap(s) ? { name, ...s } : { name, invalid: s }));
}
