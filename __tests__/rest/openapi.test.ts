/**
 * OpenAPI 3 import against the public Petstore 3 document (__tests__/fixtures/openapi/petstore3.json),
 * served with a few of its operations by a real loopback server; every call goes through the
 * LangChain adapter. Provider acceptance of the generated schemas: providers/openapi-schemas.test.ts.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import http from 'node:http';
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createRegistry } from '../../src/index.js';
import { importOpenApi, registerOpenApiTools } from '../../src/rest/index.js';
import { callTool } from '../support/tool-call.js';
import { listenLoopback, closeServer } from '../support/helpers.js';

export const PETSTORE = path.join(
  path.dirname(fileURLToPath(import.meta.url)),
  '..',
  'fixtures',
  'openapi',
  'petstore3.json',
);
const KEY = 'petstore-SECRET-key-31';
let server: http.Server;
let base: string;

/** A few Petstore operations, as the public server answers them; `api_key` required on the store. */
function petstore(): http.Server {
  const pets = new Map<number, Record<string, unknown>>();
  let next = 10;
  return http.createServer((req, res) => {
    const url = new URL(req.url!, 'http://x');
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const json = (status: number, v: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(v));
      };
      const route = `${req.method} ${url.pathname.replace(/\/\d+$/, '/{id}')}`;
      const id = Number(url.pathname.split('/').pop());
      switch (route) {
        case 'GET /openapi.json':
          res.writeHead(200, { 'content-type': 'application/json' });
          return res.end(readFileSync(PETSTORE));
        case 'POST /api/v3/pet': {
          if (req.headers['content-type'] !== 'application/json') return json(415, { code: 415, message: 'JSON only' });
          const pet = JSON.parse(Buffer.concat(chunks).toString()) as Record<string, unknown>;
          if (typeof pet.name !== 'string' || !Array.isArray(pet.photoUrls))
            return json(422, { code: 422, message: 'name and photoUrls are required' });
          const stored = { ...pet, id: next++ };
          pets.set(stored.id, stored);
          return json(200, stored);
        }
        case 'GET /api/v3/pet/{id}':
          return pets.has(id) ? json(200, pets.get(id)) : json(404, { code: 404, message: 'Pet not found' });
        case 'GET /api/v3/pet/findByStatus': {
          const status = url.searchParams.get('status');
          return json(
            200,
            [...pets.values()].filter((p) => p.status === status),
          );
        }
        case 'DELETE /api/v3/pet/{id}':
          pets.delete(id);
          return json(200, { deleted: id });
        case 'GET /api/v3/store/inventory': {
          if (req.headers.api_key !== KEY)
            return json(401, { code: 401, message: `bad api_key ${String(req.headers.api_key)}` });
          const counts: Record<string, number> = {};
          for (const p of pets.values()) counts[String(p.status)] = (counts[String(p.status)] ?? 0) + 1;
          return json(200, counts);
        }
        default:
          return json(404, { code: 404, message: `no route ${route}` });
      }
    });
  });
}

beforeAll(async () => {
  server = petstore();
  base = await listenLoopback(server);
});
afterAll(() => closeServer(server));

const local = { ssrfPolicy: { allowPrivateNetwork: true } };

describe('OpenAPI import of the Petstore 3 document', () => {
  it('makes one tool per operation, operationId as name, and says which it left out', async () => {
    const { configs, skipped, title } = await importOpenApi(PETSTORE, { serverUrl: `${base}/api/v3` });
    expect(title).toBe('Swagger Petstore - OpenAPI 3.0');
    expect(configs.map((c) => c.name)).toEqual([
      'updatePet',
      'addPet',
      'findPetsByStatus',
      'findPetsByTags',
      'getPetById',
      'updatePetWithForm',
      'deletePet',
      'getInventory',
      'placeOrder',
      'getOrderById',
      'deleteOrder',
      'createUser',
      'createUsersWithListInput',
      'loginUser',
      'logoutUser',
      'getUserByName',
      'updateUser',
      'deleteUser',
    ]);
    expect(skipped).toEqual([
      {
        operation: 'uploadFile',
        reason: 'its request body is application/octet-stream; only JSON request bodies are supported',
      },
    ]);
    const getPet = configs.find((c) => c.name === 'getPetById')!;
    expect(getPet).toMatchObject({ method: 'GET', url: `${base}/api/v3/pet/{petId}` });
    expect(getPet.parametersSchema).toEqual({
      type: 'object',
      properties: { petId: { type: 'integer', format: 'int64', description: 'ID of pet to return' } },
      required: ['petId'],
    });
    // $refs resolved: addPet's body is the Pet schema, with Category and Tag inlined.
    const addPet = configs.find((c) => c.name === 'addPet')!.parametersSchema as {
      properties: { body: { required: string[]; properties: Record<string, { properties?: object }> } };
      required: string[];
    };
    expect(addPet.required).toEqual(['body']);
    expect(addPet.properties.body.required).toEqual(['name', 'photoUrls']);
    expect(Object.keys(addPet.properties.body.properties.category.properties!)).toEqual(['id', 'name']);
    expect(JSON.stringify(addPet)).not.toContain('$ref');
  });

  it('filters by tags and by operations', async () => {
    const byTag = await importOpenApi(PETSTORE, { serverUrl: base, tags: ['store'] });
    expect(byTag.configs.map((c) => c.name)).toEqual(['getInventory', 'placeOrder', 'getOrderById', 'deleteOrder']);
    const byOp = await importOpenApi(PETSTORE, { serverUrl: base, operations: ['getPetById', 'uploadFile'] });
    expect(byOp.configs.map((c) => c.name)).toEqual(['getPetById']);
    expect(byOp.skipped.map((s) => s.operation)).toEqual(['uploadFile']);
  });

  it('runs the operations against the server through the adapter; auth comes from config and is never shown', async () => {
    const registry = createRegistry();
    const { ids } = await registerOpenApiTools(registry, `${base}/openapi.json`, {
      tags: ['pet', 'store'],
      auth: { headers: { api_key: '${PETSTORE_API_KEY}' } },
      env: { PETSTORE_API_KEY: KEY },
      ...local,
    });
    expect(ids).toEqual(
      expect.arrayContaining(['rest__addPet', 'rest__getPetById', 'rest__getInventory', 'rest__deletePet']),
    );
    const tools = await registry.tools();
    // The server URL is the document's relative "/api/v3", resolved against where it was fetched.
    const added = await callTool(tools, 'rest__addPet', {
      body: {
        name: 'Rex',
        photoUrls: ['https://img.example/rex.png'],
        status: 'available',
        category: { id: 1, name: 'Dogs' },
      },
    });
    expect(added.status).toBe('success');
    const pet = JSON.parse(String(added.content).slice(String(added.content).indexOf('\n') + 1)) as { id: number };
    const got = await callTool(tools, 'rest__getPetById', { petId: pet.id });
    expect(String(got.content)).toContain('"name": "Rex"');
    const found = await callTool(tools, 'rest__findPetsByStatus', { status: 'available' });
    expect(String(found.content)).toContain(`"id": ${pet.id}`);
    const inventory = await callTool(tools, 'rest__getInventory', {});
    expect(String(inventory.content)).toContain('"available": 1');
    // deletePet's api_key header parameter is covered by the configured auth: the model does not see it.
    const deleteTool = tools.find((t) => t.name === 'rest__deletePet')!;
    expect(Object.keys((deleteTool.schema as { properties: object }).properties ?? {})).not.toContain('api_key');
    await callTool(tools, 'rest__deletePet', { petId: pet.id });
    const gone = await callTool(tools, 'rest__getPetById', { petId: pet.id });
    expect(gone.status).toBe('error');
    expect(String(gone.content)).toContain('answered HTTP 404 Not Found');
    expect(String(gone.content)).toContain('Pet not found');
    // Invalid arguments are refused by the generated schema before any request.
    const bad = await callTool(tools, 'rest__addPet', { body: { name: 'NoPhotos' } });
    expect(bad.status).toBe('error');
    expect(String(bad.content)).toMatch(/photoUrls/);
  });

  it('a wrong key: the server echoes it in the error, the model never sees it', async () => {
    const registry = createRegistry();
    await registerOpenApiTools(registry, PETSTORE, {
      serverUrl: `${base}/api/v3`,
      operations: ['getInventory'],
      auth: { headers: { api_key: '${PETSTORE_API_KEY}' } },
      env: { PETSTORE_API_KEY: 'wrong-SECRET-key-77' },
      ...local,
    });
    const msg = await callTool(await registry.tools(), 'rest__getInventory', {});
    expect(msg.status).toBe('error');
    expect(String(msg.content)).toContain('bad api_key ***');
    expect(JSON.stringify([msg.content, msg.result])).not.toContain('SECRET');
  });

  it('the document URL goes through the SSRF guard', async () => {
    await expect(importOpenApi(`${base}/openapi.json`)).rejects.toThrow(/Blocked request to/);
  });

  it('a relative server URL in a file needs serverUrl', async () => {
    await expect(importOpenApi(PETSTORE)).rejects.toThrow('is relative and the document has no URL; pass serverUrl');
  });
});
