import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import { announceAuthChange } from './authenticator.ts';
import { Membership } from '../account/membership.entity.ts';
import { User } from '../account/user.entity.ts';
import { Workspace } from '../account/workspace.entity.ts';
import { Conflict, Forbidden, Invalid, NotFound } from '../http/errors.ts';
import { requireKey, requireRole } from './access.ts';
import type { Actor, KeyActor } from './actor.ts';
import { ApiKey } from './api-key.entity.ts';
import type { ApiKeyCreated, ApiKeyListItem, ApiKeyRevoked } from './api-key.schemas.ts';
import { displayPrefix, generateApiKey, hashApiKey } from './key-format.ts';
import { isSessionActor } from './session-actor.ts';

/** The 403 of a key creating or revoking a key: a leaked key must not be able to mint more, or lock its owner out. */
export const KEYS_NEED_SIGN_IN =
  'API keys cannot create or revoke API keys: sign in to the console with your password or OIDC as the workspace owner (or use vpctl keys)';

export interface CreatedKey {
  key: string;
  record: ApiKey;
}

function listItem(record: ApiKey): z.input<typeof ApiKeyListItem> {
  return {
    keyId: record.id,
    keyPrefix: record.prefix,
    prefix: record.prefix,
    name: record.name,
    createdAt: record.createdAt.toISOString(),
    lastUsedAt: record.lastUsedAt?.toISOString() ?? null,
  };
}

/**
 * API keys. Keys are created and revoked by the operator (vpctl), or by the workspace owner signed in to the console
 * (a password or OIDC session); an API key can never create or revoke one. The key is returned once; only its hash is
 * kept.
 */
export class ApiKeyService {
  private readonly em: EntityManager;

  constructor(em: EntityManager) {
    this.em = em;
  }

  /** A key for a workspace, carrying its owner's permissions, or a member's when `username` is given. */
  async create(workspaceHandle: string, name: string, username?: string): Promise<CreatedKey> {
    if (!name.trim() || name.length > 100) throw Invalid('name: must be 1-100 characters');
    const workspace = await this.em.findOne(Workspace, { handle: workspaceHandle }, { populate: ['owner'] });
    if (!workspace) throw NotFound(`Workspace "${workspaceHandle}" not found`);
    let user = workspace.owner;
    if (username && username !== workspace.owner.username) {
      const member = await this.em.findOne(Membership, { workspace, user: { username } }, { populate: ['user'] });
      if (!member) throw NotFound(`"${username}" is not a member of "${workspaceHandle}"`);
      user = member.user;
    }
    const key = generateApiKey();
    const record = this.em.create(ApiKey, {
      workspace,
      user: user as User,
      name,
      keyHash: hashApiKey(key),
      prefix: displayPrefix(key),
    });
    await this.em.flush();
    return { key, record };
  }

  /** Owner only ("Workspace owner access required" for other roles). */
  async listForActor(actor: Actor): Promise<Array<z.input<typeof ApiKeyListItem>>> {
    const key = requireRole(actor, actor.kind === 'key' ? actor.workspaceId : '', 'owner');
    const records = await this.em.find(
      ApiKey,
      // A training job's key and a deployment's own key belong to them (revoked when they end), not to the list.
      { workspace: key.workspaceId, jobScope: null, deploymentId: null },
      { orderBy: { createdAt: 'asc' } },
    );
    return records.map(listItem);
  }

  /** POST /api/api-keys: a key of the owner's, in the session's workspace; the key is in this answer only. */
  async createForActor(actor: Actor, name: string): Promise<z.input<typeof ApiKeyCreated>> {
    const owner = requireOwnerSession(actor);
    const { key, record } = await this.create(owner.workspaceHandle, name);
    return { ...listItem(record), key };
  }

  /** DELETE /api/api-keys/{keyId}: a key of the session's workspace (another's, a job's or a deployment's: 404); immediate everywhere. */
  async revokeForActor(actor: Actor, keyId: string): Promise<z.input<typeof ApiKeyRevoked>> {
    const owner = requireOwnerSession(actor);
    const record = await this.em.findOne(ApiKey, {
      id: keyId,
      workspace: owner.workspaceId,
      jobScope: null,
      deploymentId: null,
    });
    if (!record) throw NotFound(`No API key ${keyId} in workspace ${owner.workspaceHandle}`);
    await this.em.remove(record).flush();
    await announceAuthChange(this.em);
    return { success: true, keyId: record.id, prefix: record.prefix };
  }

  async listAll(workspaceHandle?: string): Promise<ApiKey[]> {
    return this.em.find(
      ApiKey,
      workspaceHandle ? { workspace: { handle: workspaceHandle }, jobScope: null } : { jobScope: null },
      {
        populate: ['workspace', 'user'],
        orderBy: { createdAt: 'asc' },
      },
    );
  }

  /** Deletes the key whose display prefix matches; immediate on every replica. */
  async revoke(prefix: string, workspaceHandle?: string): Promise<ApiKey> {
    if (!/^ul_[0-9a-f]{8}$/.test(prefix))
      throw Invalid('prefix: must be the 11-character display prefix, e.g. ul_1a2b3c4d');
    const where = workspaceHandle ? { prefix, workspace: { handle: workspaceHandle } } : { prefix };
    const matches = await this.em.find(ApiKey, where, { populate: ['workspace'] });
    if (matches.length === 0) throw NotFound(`No API key with prefix ${prefix}`);
    if (matches.length > 1) throw Conflict(`${matches.length} keys share prefix ${prefix}; name the workspace too`);
    await this.em.remove(matches[0]).flush();
    await announceAuthChange(this.em);
    return matches[0];
  }
}

/** The workspace owner signed in to the console: any API key is refused (KEYS_NEED_SIGN_IN), other roles too. */
function requireOwnerSession(actor: Actor): KeyActor {
  const key = requireKey(actor);
  if (!isSessionActor(key)) throw Forbidden(KEYS_NEED_SIGN_IN);
  return requireRole(key, key.workspaceId, 'owner');
}
