import { roleAtLeast, type Role } from '../account/roles.ts';
import type { Actor, KeyActor } from './actor.ts';
import { requireKey, requireRole, roleIn } from './access.ts';
import { Forbidden, NotFound } from '../http/errors.ts';

/** view: public, or a key of the workspace (any role) · edit: a key of the workspace with editor or above. */
export type AccessNeed = 'view' | 'edit';

/** What the access rule looks at: the owning workspace, the visibility, and whether it is in trash. */
export interface Guarded {
  id: string;
  workspace: { id: string };
  visibility: 'public' | 'private';
  deletedAt?: Date | null;
}

/**
 * The access rule of datasets, projects and models. A private resource the actor cannot view is
 * reported missing (404, `missing` as the message), never forbidden, so names of other workspaces'
 * resources do not leak; a visible resource the actor may not change is 403. Resources in trash are
 * gone for every endpoint.
 */
export function requireAccess<T extends Guarded>(
  actor: Actor,
  resource: T | null,
  need: AccessNeed,
  missing: string,
): { resource: T; role: Role | null } {
  const role = resource ? roleIn(actor, resource.workspace.id) : null;
  if (!resource || resource.deletedAt || (resource.visibility !== 'public' && !role)) throw NotFound(missing);
  // A training job's key reaches only what its job reads and writes.
  if (actor.kind === 'key' && actor.jobScope && !actor.jobScope.resourceIds.includes(resource.id))
    throw NotFound(missing);
  if (need === 'edit') {
    requireKey(actor);
    if (!role || !roleAtLeast(role, 'editor')) throw Forbidden();
  }
  return { resource, role };
}

/**
 * Creating in a workspace: the key must belong to `owner` when one is sent (a key reaches its own
 * workspace only, else 403 naming the key's workspace) and be editor or above there.
 */
export function requireEditorOfOwn(actor: Actor, owner: string | undefined, action: string): KeyActor {
  const key = requireKey(actor);
  if (owner && owner !== key.workspaceHandle)
    throw Forbidden(`This key belongs to "${key.workspaceHandle}"; use a key created in "${owner}" to ${action}`);
  return requireRole(actor, key.workspaceId, 'editor');
}
