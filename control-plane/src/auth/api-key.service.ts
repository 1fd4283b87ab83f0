import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import { announceAuthChange } from './authenticator.ts';
import { Membership } from '../account/membership.entity.ts';
import { User } from '../account/user.entity.ts';
import { Workspace } from '../account/workspace.entity.ts';
import { Conflict, Invalid, NotFound } from '../http/errors.ts';
import { requireRole } from './access.ts';
import type { Actor } from './actor.ts';
import { ApiKey } from './api-key.entity.ts';
import type { ApiKeyListItem } from './api-key.schemas.ts';
import { displayPrefix, generateApiKey, hashApiKey } from './key-format.ts';

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
 * API keys. Keys are created and revoked by the operator (vpctl) only: the API lists them, and an
 * API key can never create or revoke one. The key is returned once; only its hash is kept.
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
      { workspace: key.workspaceId, jobScope: null },
      { orderBy: { createdAt: 'asc' } },
    );
    return records.map(listItem);
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
