/**
 * Permission tags a tool declares and a host grants, and filtering by them.
 * Must not know about tools or registries beyond the permission shapes.
 */

/**
 * What a tool may do: read files, write files, execute programs, reach the network, keep notes in
 * the agent's memory directory (`memory`, separate from `write` so that an agent may remember
 * without being allowed to change the project).
 */
export type ToolPermission = 'read' | 'write' | 'execute' | 'network' | 'memory';

/** Every permission, in a stable order. */
export const ALL_PERMISSIONS: readonly ToolPermission[] = ['read', 'write', 'execute', 'network', 'memory'];

/** A tool's declared permissions: all of `required` must be granted; `optional` ones add abilities. */
export interface ToolPermissions {
  required: ToolPermission[];
  optional?: ToolPermission[];
}

/** A granted set, as a Set or an array. */
export type PermissionGrant = ReadonlySet<ToolPermission> | readonly ToolPermission[];

/** Throws a clear error for anything that is not a known permission. */
export function assertPermissions(perms: ToolPermissions, toolId: string): void {
  if (!perms || !Array.isArray(perms.required)) {
    throw new Error(
      `Tool "${toolId}": permissions must be { required: ToolPermission[], optional?: ToolPermission[] }.`,
    );
  }
  for (const p of [...perms.required, ...(perms.optional ?? [])]) {
    if (!ALL_PERMISSIONS.includes(p)) {
      throw new Error(
        `Tool "${toolId}": unknown permission ${JSON.stringify(p)}. Known permissions: ${ALL_PERMISSIONS.join(', ')}.`,
      );
    }
  }
}

/** Normalises a grant to a Set. */
export function toGrantSet(granted: PermissionGrant): ReadonlySet<ToolPermission> {
  return granted instanceof Set ? granted : new Set(granted as readonly ToolPermission[]);
}

/** Whether every required permission is in the grant. */
export function isAllowed(perms: ToolPermissions, granted: PermissionGrant): boolean {
  const set = toGrantSet(granted);
  return perms.required.every((p) => set.has(p));
}

/** Parses `read,network` (CLI/env form) into permissions, rejecting unknown names. */
export function parsePermissionList(text: string): ToolPermission[] {
  const out: ToolPermission[] = [];
  for (const raw of text.split(',')) {
    const p = raw.trim();
    if (!p) continue;
    if (p === 'all') return [...ALL_PERMISSIONS];
    if (!ALL_PERMISSIONS.includes(p as ToolPermission)) {
      throw new Error(
        `Unknown permission ${JSON.stringify(p)}. Use a comma-separated list of: ${ALL_PERMISSIONS.join(', ')} (or "all").`,
      );
    }
    out.push(p as ToolPermission);
  }
  return out;
}
