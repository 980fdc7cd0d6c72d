/**
 * How the CLI prints a progress update on stderr (`run` and `agent` share it).
 * Must not write to a stream: run.ts and agent.ts print the line it formats.
 */
import type { ToolUpdate } from '../pipeline/types.js';

/** One progress report as a stderr line: `[tool] title {metadata}`. */
export function progressLine(u: ToolUpdate): string {
  const meta = Object.keys(u.result.metadata).length ? ` ${safeJson(u.result.metadata, 300)}` : '';
  return `[${u.toolId}] ${u.result.title || 'running'}${meta}`;
}

function safeJson(value: unknown, max: number): string {
  let s: string;
  try {
    s = JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
  } catch {
    s = String(value);
  }
  return s.length > max ? `${s.slice(0, max - 3)}...` : s;
}
