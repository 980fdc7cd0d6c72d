/**
 * current_time: the date and time now, in UTC and in an IANA time zone.
 * Must not touch the file system or network.
 */
import { z } from 'zod';
import { Tool } from '../../authoring/tool.js';
import { descriptionBeside } from '../../authoring/description.js';

const parameters = z.object({
  timezone: z
    .string()
    .optional()
    .describe('IANA time zone name such as "Europe/Berlin" or "America/New_York". Default: UTC.'),
});

/** What current_time reports. */
export interface CurrentTimeMetadata extends Tool.Metadata {
  /** ISO 8601 in UTC. */
  iso: string;
  /** Seconds since the Unix epoch. */
  unix: number;
  timezone: string;
  /** Local date and time in the zone, `YYYY-MM-DD HH:MM:SS`. */
  local: string;
  /** Offset from UTC, e.g. `+02:00`. */
  offset: string;
  weekday: string;
  truncated: false;
}

export const CurrentTimeTool = Tool.define<typeof parameters, CurrentTimeMetadata>(
  {
    id: 'current_time',
    permissions: { required: [] },
    descriptionPath: descriptionBeside(import.meta.url, 'current_time'),
    danger: 'safe',
  },
  {
    description: 'The current date and time, in UTC or an IANA time zone.',
    parameters,
    async execute(args) {
      const zone = args.timezone?.trim() || 'UTC';
      const now = new Date();
      const meta = timeIn(now, zone);
      return {
        title: `${meta.local} ${meta.timezone}`,
        output: `${meta.weekday} ${meta.local} ${meta.timezone} (UTC${meta.offset}); ISO ${meta.iso}; unix ${meta.unix}`,
        metadata: meta,
      };
    },
  },
);

/** `now` seen in `zone`; an unknown zone is an error naming it. */
export function timeIn(now: Date, zone: string): CurrentTimeMetadata {
  let format: Intl.DateTimeFormat;
  try {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      weekday: 'long',
    });
  } catch {
    throw new Error(
      `Unknown time zone ${JSON.stringify(zone)}. Use an IANA name like "Europe/Berlin", "America/New_York" or "Asia/Tokyo", or omit timezone for UTC.`,
    );
  }
  const parts = Object.fromEntries(format.formatToParts(now).map((p) => [p.type, p.value]));
  const local = `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second}`;
  // The offset is the local wall clock read as if it were UTC, minus the real instant.
  const wall = Date.UTC(+parts.year, +parts.month - 1, +parts.day, +parts.hour, +parts.minute, +parts.second);
  const minutes = Math.round((wall - Math.floor(now.getTime() / 1000) * 1000) / 60_000);
  const sign = minutes < 0 ? '-' : '+';
  const abs = Math.abs(minutes);
  const offset = `${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
  return {
    iso: now.toISOString(),
    unix: Math.floor(now.getTime() / 1000),
    // The name as asked (Intl may canonicalise "Asia/Kolkata" to its legacy "Asia/Calcutta"), in Intl's casing.
    timezone: resolvedName(format.resolvedOptions().timeZone, zone),
    local,
    offset,
    weekday: parts.weekday,
    truncated: false,
  };
}

function resolvedName(resolved: string, asked: string): string {
  return resolved.toLowerCase() === asked.toLowerCase() ? resolved : asked;
}
