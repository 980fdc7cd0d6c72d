/**
 * Reading from the end of a file (read's negative offset): find where the last N lines start by
 * reading backwards in blocks, and give that line its absolute number from a per-file line count
 * that is cached by the file's identity (device, inode, size, mtime, ctime, last bytes) — or, when
 * counting would mean reading more than TAIL_COUNT_MAX_BYTES, number the lines from the end.
 * Also read's SlicedReader (synchronous positioned reads that yield every READ_SLICE_BYTES).
 * Must not format output (read.ts does) or resolve paths (Workspace does).
 */
import { readSync } from 'node:fs';
import type { BigIntStats } from 'node:fs';

/** Block size of the backwards scan (one read covers the last ~600 lines of a typical log). */
export const TAIL_BLOCK_BYTES = 64 * 1024;
/**
 * Most bytes counted to give the last lines their absolute numbers (the part of the file before
 * them). Past it, and with no cached count, the lines are numbered from the end (-1 is the last
 * line) and the footer says so: counting 100 MB costs a whole-file read (~400 ms on a loaded
 * 2-core machine) where the tail itself costs one block.
 */
export const TAIL_COUNT_MAX_BYTES = 8 * 1024 * 1024;
/** Files whose line count is remembered per read tool instance (least recently used dropped). */
export const LINE_COUNT_CACHE_ENTRIES = 256;
/**
 * A count is cached only for a file whose mtime and ctime are both at least this much older than
 * the start of the count: a change within the same timestamp tick (coarse clocks, 2 s on FAT)
 * could otherwise keep size and times equal while moving a newline ("racy" entries, as git calls
 * them). ctime is checked too because mtime can be set back by anyone (touch -d, utimes).
 */
export const LINE_COUNT_SETTLE_MS = 2000;
/** Last bytes of a file compared on a cache hit (they are in the block the scan reads anyway). */
const PROBE_BYTES = 64;
/** Chunk size of the forward newline count. */
const COUNT_CHUNK_BYTES = 1024 * 1024;
/** Bytes read synchronously before the event loop gets a turn (and abort is checked again). */
export const READ_SLICE_BYTES = 16 * 1024 * 1024;

/**
 * Positioned synchronous reads of one open file, in slices of READ_SLICE_BYTES that yield to the
 * event loop: a read of a few KB from the page cache costs microseconds, a thread-pool round trip
 * per read costs more (and milliseconds when the machine is loaded, as the 2-core CI box is).
 */
export class SlicedReader {
  private sliceLeft = READ_SLICE_BYTES;

  constructor(
    readonly fd: number,
    private readonly signal: AbortSignal,
  ) {}

  /** Reads up to `len` bytes at `position` into the start of `buf`; returns how many were read. */
  async read(buf: Buffer, len: number, position: number): Promise<number> {
    if (this.sliceLeft <= 0) {
      await new Promise((resolve) => setImmediate(resolve));
      this.sliceLeft = READ_SLICE_BYTES;
    }
    if (this.signal.aborted) throw new Error('read was aborted.');
    const got = readSync(this.fd, buf, 0, len, position);
    this.sliceLeft -= Math.max(got, 1);
    return got;
  }
}

/** Where the last lines of a file start. */
export interface TailStart {
  /** Byte position of the first of those lines. */
  position: number;
  /** Lines from `position` to the end of the file (fewer than asked when the file is shorter). */
  lines: number;
  /** The file's last bytes, to validate a cached line count. */
  probe: Buffer;
}

/**
 * Reads backwards from the end of a `size`-byte file in TAIL_BLOCK_BYTES blocks until it has
 * passed `n` line starts. A final newline ends the last line (it does not start an empty one); a
 * line longer than a block just costs more blocks, never more memory.
 */
export async function findTailStart(reader: SlicedReader, size: number, n: number): Promise<TailStart> {
  const buf = Buffer.allocUnsafe(Math.min(TAIL_BLOCK_BYTES, size));
  let probe = Buffer.alloc(0);
  let pos = size;
  let found = 0;
  while (pos > 0) {
    const len = Math.min(buf.length, pos);
    pos -= len;
    const got = await reader.read(buf, len, pos);
    if (got < len) throw new Error('The file got shorter while its end was being read. Read it again.');
    let i = len - 1;
    if (pos + len === size) {
      probe = Buffer.from(buf.subarray(Math.max(0, len - PROBE_BYTES), len));
      if (buf[i] === 10) i--;
    }
    // Each newline found (before the final one) starts one more line counted from the end.
    while (i >= 0 && (i = buf.lastIndexOf(10, i)) !== -1) {
      if (++found === n) return { position: pos + i + 1, lines: n, probe };
      i--;
    }
  }
  return { position: 0, lines: found + 1, probe };
}

interface CountEntry {
  size: bigint;
  mtimeNs: bigint;
  ctimeNs: bigint;
  probe: Buffer;
  lines: number;
}

/**
 * Line counts of files this tool has read, keyed by device and inode and trusted only while size,
 * mtime, ctime and the last bytes are unchanged. One per read tool instance (so per registry).
 */
export class LineCounts {
  private readonly entries = new Map<string, CountEntry>();

  /** The cached line count of the file `st` describes, if still valid. */
  get(st: BigIntStats, probe: Buffer): number | undefined {
    const key = `${st.dev}:${st.ino}`;
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (e.size !== st.size || e.mtimeNs !== st.mtimeNs || e.ctimeNs !== st.ctimeNs || !e.probe.equals(probe)) {
      this.entries.delete(key);
      return undefined;
    }
    this.entries.delete(key);
    this.entries.set(key, e);
    return e.lines;
  }

  /** Remembers `lines` for the file `st` describes, unless it changed too recently to trust. */
  set(st: BigIntStats, probe: Buffer, lines: number, countStartedMs: number): void {
    const newest = Number((st.mtimeNs > st.ctimeNs ? st.mtimeNs : st.ctimeNs) / 1_000_000n);
    if (countStartedMs - newest < LINE_COUNT_SETTLE_MS) return;
    const key = `${st.dev}:${st.ino}`;
    this.entries.delete(key);
    this.entries.set(key, { size: st.size, mtimeNs: st.mtimeNs, ctimeNs: st.ctimeNs, probe, lines });
    if (this.entries.size > LINE_COUNT_CACHE_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
  }
}

/** Newline bytes in [0, end) of the file, read through `reader` in one reused buffer. */
export async function countNewlinesBefore(reader: SlicedReader, end: number): Promise<number> {
  const buf = Buffer.allocUnsafe(Math.min(COUNT_CHUNK_BYTES, end));
  let count = 0;
  let pos = 0;
  while (pos < end) {
    const got = await reader.read(buf, Math.min(buf.length, end - pos), pos);
    if (got === 0) break;
    for (let i = buf.indexOf(10); i !== -1 && i < got; i = buf.indexOf(10, i + 1)) count++;
    pos += got;
  }
  return count;
}
