/**
 * REST config files: `{ "tools": [RestToolConfig...], "openapi": [{ "document", ...import options }] }`
 * read and registered into a registry (what `toolbelt --rest-config FILE` does). No HTTP of its own.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Registry } from '../registry/registry.js';
import { registerRestTools, type RegisterRestOptions, type RestToolConfig } from './tools.js';
import { registerOpenApiTools, type OpenApiImport, type OpenApiImportOptions } from './openapi.js';

/** One OpenAPI document to import: a file (relative to the config file) or an http(s) URL, with its import options. */
export interface RestOpenApiEntry extends OpenApiImportOptions {
  document: string;
  /** Id prefix of this document's tools (default `rest__`). */
  prefix?: string;
}

/** The shape of a REST config file. */
export interface RestConfigFile {
  tools?: RestToolConfig[];
  openapi?: RestOpenApiEntry[];
}

/** Reads a REST config file and registers its tools; returns their ids and the operations left out. */
export async function loadRestConfig(
  registry: Registry,
  file: string,
  options: Pick<RegisterRestOptions, 'env' | 'replace'> = {},
): Promise<{ ids: string[]; skipped: OpenApiImport['skipped'] }> {
  const abs = path.resolve(file);
  let config: RestConfigFile;
  try {
    config = JSON.parse(await readFile(abs, 'utf8')) as RestConfigFile;
  } catch (err) {
    throw new Error(`Cannot read the REST config ${abs}: ${(err as Error).message}`, { cause: err });
  }
  if (!config || typeof config !== 'object' || Array.isArray(config))
    throw new Error(`The REST config ${abs} must be a JSON object with "tools" and/or "openapi" lists.`);
  for (const key of ['tools', 'openapi'] as const)
    if (config[key] !== undefined && !Array.isArray(config[key]))
      throw new Error(`The REST config ${abs}: "${key}" must be a list.`);
  const ids = registerRestTools(registry, config.tools ?? [], options);
  const skipped: OpenApiImport['skipped'] = [];
  for (const entry of config.openapi ?? []) {
    if (typeof entry?.document !== 'string')
      throw new Error(`The REST config ${abs}: each "openapi" entry needs a "document" (a file or an http(s) URL).`);
    const source = /^https?:\/\//i.test(entry.document)
      ? entry.document
      : path.resolve(path.dirname(abs), entry.document);
    const done = await registerOpenApiTools(registry, source, { ...entry, ...options });
    ids.push(...done.ids);
    skipped.push(...done.skipped);
  }
  return { ids, skipped };
}
