/**
 * grep's JavaScript backend (no rg on PATH): walks the tree with the ignore rules and scans files
 * block by block.
 * Must not shape output (grep-results.ts) or validate patterns (grep-pattern.ts), nor spawn rg (grep-rg.ts).
 */
import { readdirSync, openSync, fstatSync, readFileSync, readSync, closeSync, type Dirent } from 'node:fs';
import path from 'node:path';
import { IgnoreTree, VCS_DIRS } from '../files/search-common.js';
import { isAtomicTempName } from '../../workspace/atomic-write.js';
import { AUTOMATON_LONG_LINE_BYTES, testLongLine } from './long-line.js';
import type { CompiledPattern } from './pattern.js';
import { MAX_LINE_LENGTH, type FileAccumulator, type SearchOptions } from './results.js';

/** Block size when the pattern runs on re2js: linear, but a pathological pattern costs microseconds per byte. */
export const AUTOMATON_BLOCK_BYTES = 8 * 1024;

/** Of a line matched in a worker, the bytes decoded for output: more than MAX_LINE_LENGTH characters, however wide. */
const LONG_LINE_SHOWN_BYTES = MAX_LINE_LENGTH * 4 + 4;

/** Files up to this size are searched in one piece by the JS backend; bigger ones in blocks. */
export const JS_BLOCK_BYTES = 8 * 1024 * 1024;
/** The JS backend yields to the event loop this often (abort, progress). */
const JS_SLICE_MS = 20;
/**
 * Files are first read into one reused buffer of this size: most fit, and then cost no `fstat`
 * (the modification time is looked up only for files with matches) and no new buffer.
 */
export const FIRST_READ_BYTES = 256 * 1024;
let firstRead: Buffer | undefined;

/** Searches `o.target` with the JS engine, feeding `o.collector`; stops early when the call aborts. */
export async function searchWithJs(o: SearchOptions): Promise<void> {
  // Synchronous file I/O in time slices: one thread-pool round trip per file would cost more than
  // the search itself on trees of small files. Between slices the event loop runs, so abort and
  // progress stay live.
  let sliceStart = performance.now();
  const maybeYield = async (): Promise<boolean> => {
    if (performance.now() - sliceStart < JS_SLICE_MS) return !o.ctx.abort.aborted;
    await new Promise<void>((r) => setImmediate(r));
    sliceStart = performance.now();
    return !o.ctx.abort.aborted;
  };
  const searchOne = async (abs: string): Promise<void> => {
    const hit = await searchFile(abs, o, maybeYield);
    o.collector.filesScanned++;
    if (hit) o.collector.addFile(abs, hit.acc, hit.mtime);
    o.report();
  };
  if (o.isFile) {
    await searchOne(o.target);
    return;
  }
  const tree = await IgnoreTree.forWalk(o.top, o.target);
  const stack = [o.target];
  while (stack.length) {
    if (!(await maybeYield())) return;
    const dir = stack.pop() as string;
    let entries: Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      continue; // unreadable directory: skipped, as ripgrep does
    }
    const pending = tree.enter(
      dir,
      entries.map((e) => e.name),
    );
    const chain = Array.isArray(pending) ? pending : await pending;
    const rules = chain.length > 0;
    const subdirs: string[] = [];
    for (const e of entries) {
      if (VCS_DIRS.has(e.name) || o.ignored.has(e.name) || e.isSymbolicLink()) continue;
      const isDir = e.isDirectory();
      if (!isDir && (!e.isFile() || isAtomicTempName(e.name))) continue;
      const abs = dir.endsWith(path.sep) ? dir + e.name : dir + path.sep + e.name;
      if (rules && tree.isIgnored(chain, abs, isDir)) continue;
      if (o.filter?.skips(abs, isDir)) continue;
      if (isDir) subdirs.push(abs);
      else if (!o.include || o.include.matches(path.relative(o.target, abs).split(path.sep).join('/'))) {
        if (!(await maybeYield())) return;
        await searchOne(abs);
      }
    }
    for (let i = subdirs.length - 1; i >= 0; i--) stack.push(subdirs[i]);
  }
}

/**
 * Searches one file; null when it is binary (contains a NUL byte), unreadable, or the search was
 * stopped. Reads are synchronous (cheaper than a thread-pool round trip), in blocks of whole lines
 * with `pause()` between blocks, so a big file cannot hold the event loop. An automaton (re2js) is
 * linear but slower per byte, so its blocks are smaller.
 */
async function searchFile(
  abs: string,
  o: SearchOptions,
  pause: () => Promise<boolean>,
): Promise<{ acc: FileAccumulator; mtime?: number } | null> {
  const blockBytes = o.compiled.automaton ? Math.min(o.blockBytes, AUTOMATON_BLOCK_BYTES) : o.blockBytes;
  let fd: number;
  try {
    fd = openSync(abs, 'r');
  } catch {
    return null;
  }
  try {
    const scanner = new LineScanner(o.compiled, o.before, o.after, o.collector.newFile());
    // A file that fits the first read (and the block size) is searched from the reused buffer,
    // synchronously (nothing else uses the buffer meanwhile). A positional read: the file offset
    // stays at 0 for the paths below.
    firstRead ??= Buffer.allocUnsafe(FIRST_READ_BYTES);
    const want = Math.min(FIRST_READ_BYTES, blockBytes + 1);
    const got = readSync(fd, firstRead, 0, want, 0);
    if (got < want) {
      const buf = firstRead.subarray(0, got);
      if (buf.indexOf(0) !== -1) return null;
      scanner.block(buf, true);
      return { acc: scanner.acc };
    }
    const st = fstatSync(fd);
    if (st.size <= blockBytes) {
      const buf = readFileSync(fd);
      if (buf.indexOf(0) !== -1) return null;
      scanner.block(buf, true);
      return { acc: scanner.acc, mtime: st.mtimeMs };
    }
    // Large file: blocks of whole lines, so memory stays flat. A line longer than `longLine` is
    // gathered whole (chunks kept in a list: no quadratic re-copying) and matched in a worker.
    const longLine = o.compiled.automaton ? AUTOMATON_LONG_LINE_BYTES : blockBytes;
    let carry: Buffer[] = [];
    let carryBytes = 0;
    const keep = (b: Buffer): void => {
      if (!b.length) return;
      carry.push(Buffer.from(b));
      carryBytes += b.length;
    };
    const takeCarry = (tail?: Buffer): Buffer => {
      const whole = Buffer.concat(tail ? [...carry, tail] : carry);
      carry = [];
      carryBytes = 0;
      return whole;
    };
    /**
     * Matches one long line off the main thread (its bytes are handed over, not copied); only the
     * start that output can show is decoded here. False when the call was stopped meanwhile.
     */
    const longLineDone = async (line: Buffer, last: boolean): Promise<boolean> => {
      const shown = Buffer.from(line.subarray(0, LONG_LINE_SHOWN_BYTES));
      const hit = await testLongLine(line, o.compiled, o.ctx.abort);
      if (hit === undefined) return false;
      scanner.block(shown, last, hit);
      return true;
    };
    const chunk = Buffer.allocUnsafe(blockBytes);
    for (;;) {
      if (!(await pause())) return null;
      const bytesRead = readSync(fd, chunk, 0, chunk.length, null);
      if (bytesRead === 0) break;
      let data: Buffer = chunk.subarray(0, bytesRead);
      if (data.indexOf(0) !== -1) return null;
      const firstNl = data.indexOf(10);
      if (firstNl === -1) {
        keep(data);
        continue;
      }
      if (carryBytes + firstNl > longLine) {
        if (!(await longLineDone(takeCarry(data.subarray(0, firstNl)), false))) return null;
        data = data.subarray(firstNl + 1);
      } else if (carryBytes) {
        data = takeCarry(data);
      }
      const lastNl = data.lastIndexOf(10);
      if (lastNl === -1) {
        keep(data);
        continue;
      }
      scanner.block(data.subarray(0, lastNl + 1), false);
      keep(data.subarray(lastNl + 1));
    }
    if (carryBytes > longLine) {
      if (!(await longLineDone(takeCarry(), true))) return null;
    } else if (carryBytes) {
      scanner.block(takeCarry(), true);
    }
    return { acc: scanner.acc, mtime: st.mtimeMs };
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}

/**
 * Finds matching lines block by block, with before/after context carried across blocks. A block
 * is first tested as a whole (one native regex pass); only blocks with a hit are split into lines.
 */
class LineScanner {
  private nextLine = 1;
  private tail: string[] = [];
  private afterUntil = 0;
  private lastEmitted = 0;

  constructor(
    private readonly re: CompiledPattern,
    private readonly before: number,
    private readonly after: number,
    readonly acc: FileAccumulator,
  ) {}

  /**
   * Scans a block of whole lines (the last block may lack its final `\n`). `hit`, when given, is
   * whether a long line matches, decided elsewhere (by a worker); `buf` is then the start of that
   * one line, as much as output shows.
   */
  block(buf: Buffer, last: boolean, hit?: boolean): void {
    if (buf.length === 0) return;
    const pendingAfter = this.afterUntil >= this.nextLine;
    if (hit === undefined && !pendingAfter && this.re.literals && !containsAny(buf, this.re.literals)) hit = false;
    if (hit === false && !pendingAfter) {
      if (!last) this.skip(buf, this.before ? buf.toString('utf8') : '');
      return;
    }
    const text = buf.toString('utf8');
    if (hit === undefined && !pendingAfter && !this.re.block.test(text)) {
      if (!last) this.skip(buf, text);
      return;
    }
    const lines = text.split('\n');
    if (text.endsWith('\n')) lines.pop();
    const hits = hit === undefined ? this.re.matchLines(text, lines) : Uint8Array.of(hit ? 1 : 0);
    const first = this.nextLine;
    for (let i = 0; i < lines.length; i++) {
      const n = first + i;
      const line = lines[i];
      if (hits[i]) {
        for (let k = Math.max(this.lastEmitted + 1, n - this.before); k < n; k++) {
          const t = k >= first ? lines[k - first] : this.tail[this.tail.length - (first - k)];
          if (t !== undefined) this.emit(k, t, false);
        }
        this.emit(n, line, true);
        this.afterUntil = n + this.after;
      } else if (n <= this.afterUntil) {
        this.emit(n, line, false);
      }
    }
    this.nextLine = first + lines.length;
    if (this.before) this.tail = [...this.tail, ...lines.slice(-this.before)].slice(-this.before);
  }

  private emit(line: number, text: string, match: boolean): void {
    this.acc.add({ line, text, match });
    this.lastEmitted = line;
  }

  /** A block without hits: count its lines and keep the last few for before-context. */
  private skip(buf: Buffer, text: string): void {
    let count = 0;
    for (let i = buf.indexOf(10); i !== -1; i = buf.indexOf(10, i + 1)) count++;
    if (buf[buf.length - 1] !== 10) count++;
    this.nextLine += count;
    if (this.before) this.tail = lastLines(text, this.before);
  }
}

/** Whether `buf` contains any of `needles` (a native byte search each, nothing decoded). */
function containsAny(buf: Buffer, needles: readonly Buffer[]): boolean {
  for (const n of needles) if (buf.includes(n)) return true;
  return false;
}

/** The last `n` lines of a block that ends with `\n`. */
function lastLines(text: string, n: number): string[] {
  let end = text.endsWith('\n') ? text.length - 1 : text.length;
  const out: string[] = [];
  while (out.length < n && end >= 0) {
    const start = text.lastIndexOf('\n', end - 1) + 1;
    out.unshift(text.slice(start, end));
    if (start === 0) break;
    end = start - 1;
  }
  return out;
}
