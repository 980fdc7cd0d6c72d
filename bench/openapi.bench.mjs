// OpenAPI import: importOpenApi on the Petstore 3 document (read and $refs resolved in the bounded
// worker, expanded size counted first, then one config per operation) against the ref parser's
// dereference of the same file on the main thread, the import's old path, in the same process.
// Run: npm run build && node bench/openapi.bench.mjs
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import $RefParser from '@apidevtools/json-schema-ref-parser';
import { importOpenApi } from '../dist/rest/index.js';
import { compare } from './lib.mjs';

const TARGET = 3; // ours posts the document to a worker and back and counts it first: a few ms per import
const RUNS = Number(process.env.RUNS ?? 30);
const PETSTORE = path.join(
  path.dirname(fileURLToPath(import.meta.url)),
  '..',
  '__tests__',
  'fixtures',
  'openapi',
  'petstore3.json',
);
const options = { resolve: { http: false }, dereference: { circular: 'ignore' } };

await compare(
  'Petstore 3 import (worker, bounded) vs dereference on the main thread',
  TARGET,
  () => importOpenApi(PETSTORE, { serverUrl: 'https://petstore3.swagger.io/api/v3' }),
  () => $RefParser.dereference(PETSTORE, options),
  RUNS,
);
