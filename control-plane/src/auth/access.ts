import { roleAtLeast, type Role } from '../account/roles.ts';
import { Forbidden, OWNER_REQUIRED, Unauthorized } from '../http/errors.ts';
import type { Actor, KeyActor } from './actor.ts';

export function requireKey(actor: Actor): KeyActor {
  if (actor.kind !== 'key') throw Unauthorized('API key required');
  return actor;
}

/** The actor's role in a workspace: a key reaches its own workspace only. */
export function roleIn(actor: Actor, workspaceId: string): Role | null {
  return actor.kind === 'key' && actor.workspaceId === workspaceId ? actor.role : null;
}

/** Passes when the key belongs to the workspace with at least the needed role; else 401 or 403. */
export function requireRole(actor: Actor, workspaceId: string, needed: Role): KeyActor {
  const key = requireKey(actor);
  const role = roleIn(key, workspaceId);
  if (!role || !roleAtLeast(role, needed)) throw Forbidden(needed === 'owner' ? OWNER_REQUIRED : undefined);
  return key;
}
