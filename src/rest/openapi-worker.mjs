// Reads and dereferences one OpenAPI document in a worker thread (see openapi-load.ts), so a
// document whose shared $refs expand to billions of nodes can neither hold the event loop nor
// exhaust the main heap: the expanded size is counted first (memoised per $ref, so the count is
// linear in the document) and a document past the bound is refused before the resolver expands it;
// the worker's deadline and heap cap catch whatever the count cannot see.
// $refs to files are read only for a document given as a file, only inside its own directory, and
// only as JSON or YAML; remote $refs are never fetched here.
// Must not fetch URLs, build tools or word the final errors (openapi-load.ts does).
// Plain JavaScript because a worker runs outside any TypeScript transform.
import { parentPort } from 'node:worker_threads';
import { constants as fsConstants } from 'node:fs';
import { open, realpath } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import $RefParser from '@apidevtools/json-schema-ref-parser';

const READABLE = new Set(['.json', '.yaml', '.yml']);

/** A $ref the import will not follow; its message is the sentence the caller shows. */
class Refused extends Error {}

/**
 * The file resolver for a local document: the document itself (`root`, any name), and files inside
 * its directory `dir` (after links), JSON or YAML only.
 */
function confinedFiles(dir, root, refusals) {
  const refuse = (message) => {
    refusals.push(message);
    throw new Refused(message);
  };
  return {
    order: 1,
    canRead: () => true,
    async read(file) {
      const raw = String(file.url);
      if (/^[a-z][a-z0-9+.-]+:/i.test(raw) && !/^file:/i.test(raw))
        refuse(
          `a $ref to ${raw} is remote, and the import does not fetch remote $refs; save that schema next to the document`,
        );
      const target = /^file:/i.test(raw) ? fileURLToPath(raw) : raw;
      if (target === root) return readRegular(root, refuse);
      if (!READABLE.has(path.extname(target).toLowerCase()))
        refuse(`a $ref to ${target} is not a JSON or YAML file (.json, .yaml, .yml); only those are read`);
      let real;
      try {
        real = await realpath(target);
      } catch {
        refuse(`a $ref to ${target} names a file that does not exist`);
      }
      const rel = path.relative(dir, real);
      if (rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel))
        refuse(`a $ref to ${target} is outside the document's directory ${dir}; move the file next to the document`);
      return readRegular(real, refuse);
    },
  };
}

/**
 * The bytes of `file` if it is a regular file: opened without blocking and checked on the open
 * handle, so a FIFO or device (which would hold a thread of the process's I/O pool forever, even
 * after the worker is stopped) is refused, also one swapped in after a check.
 */
async function readRegular(file, refuse) {
  let handle;
  try {
    handle = await open(file, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
  } catch (err) {
    refuse(`${file} could not be opened (${err.code ?? err.message})`);
  }
  try {
    if (!(await handle.stat()).isFile()) refuse(`${file} is not a regular file`);
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}

/** A resolver that refuses every external $ref (a document given as an object or fetched by URL). */
function noFiles(refusals) {
  return {
    order: 1,
    canRead: () => true,
    read(file) {
      const message =
        `a $ref to ${file.url} points outside the document, and a document given as an object or fetched by URL ` +
        'may only use $refs inside itself (#/...); inline that schema, or import the document from a file next to it';
      refusals.push(message);
      throw new Refused(message);
    },
  };
}

/**
 * The number of nodes (objects, arrays and values) the document has once every $ref is replaced
 * by its target; a $ref inside its own expansion (a cycle) counts as one node, as the resolver
 * leaves it in place. Throws when the count passes `max`.
 */
function countExpanded($refs, rootFile, max) {
  const memo = new Map();
  const active = new Set();
  const absolute = (ref, file) => {
    if (ref.startsWith('#')) return `${file}${ref}`;
    const u = new URL(ref, pathToFileURL(file));
    return `${fileURLToPath(u)}${u.hash}`;
  };
  const over = () => {
    throw new Refused(`TOO_LARGE`);
  };
  const size = (node, file) => {
    if (node === null || typeof node !== 'object') return 1;
    if (typeof node.$ref === 'string') {
      const abs = absolute(node.$ref, file);
      if (memo.has(abs)) return memo.get(abs);
      if (active.has(abs)) return 1;
      active.add(abs);
      let target;
      try {
        target = $refs.get(abs);
      } catch {
        active.delete(abs);
        return 1; // the resolver reports a broken $ref with its own words
      }
      const n = size(target, abs.split('#')[0]);
      active.delete(abs);
      memo.set(abs, n);
      return n;
    }
    let n = 1;
    for (const value of Object.values(node)) {
      n += size(value, file);
      if (n > max) over();
    }
    return n;
  };
  const root = $refs.get(`${rootFile}#`);
  return size(root, rootFile);
}

async function load(job, refusals) {
  const root = job.kind === 'file' ? path.resolve(job.path) : '';
  const resolver =
    job.kind === 'file' ? confinedFiles(path.dirname(await realpath(root)), root, refusals) : noFiles(refusals);
  const options = {
    parse: { text: false, binary: false },
    resolve: { file: resolver, http: false, external: true },
    dereference: { circular: 'ignore' },
  };
  const input = job.kind === 'file' ? root : job.doc;
  const parser = new $RefParser();
  const $refs = await parser.resolve(input, options);
  const rootFile = $refs.paths()[0];
  let nodes;
  try {
    nodes = countExpanded($refs, rootFile, job.maxNodes);
  } catch (err) {
    if (err instanceof Refused && err.message === 'TOO_LARGE') return { tooLarge: true };
    throw err;
  }
  const doc = await new $RefParser().dereference(input, options);
  return { doc, nodes };
}

parentPort.on('message', async (job) => {
  const refusals = [];
  try {
    const out = await load(job, refusals);
    parentPort.postMessage({ id: job.id, ...out });
  } catch (err) {
    const message = refusals[0] ?? (err instanceof Error ? err.message : String(err));
    parentPort.postMessage({ id: job.id, refused: refusals.length > 0, failure: message });
  }
});
