import type { EntityManager } from '@mikro-orm/postgresql';
import { NotFound } from '../http/errors.ts';
import { StorageIntegration } from './integration.entity.ts';

/** The storage_integrations table; every read names the workspace, so one workspace never reaches another's rows. */
export class IntegrationStore {
  private readonly em: EntityManager;

  constructor(em: EntityManager) {
    this.em = em;
  }

  list(workspaceId: string): Promise<StorageIntegration[]> {
    return this.em.find(StorageIntegration, { workspace: workspaceId }, { orderBy: { createdAt: 'asc', id: 'asc' } });
  }

  /** Another workspace's integration is 404 like a missing one: its existence is not revealed. */
  async get(workspaceId: string, id: string): Promise<StorageIntegration> {
    const row = await this.em.findOne(StorageIntegration, { id, workspace: workspaceId });
    if (!row) throw NotFound(`Storage integration ${id} not found`);
    return row;
  }

  /** Rows sealed under another key than `keyId` (what a secret rotation re-seals), all workspaces. */
  sealedUnderOtherKeys(keyId: string): Promise<StorageIntegration[]> {
    return this.em.find(StorageIntegration, { credentialsKeyId: { $ne: keyId } }, { orderBy: { id: 'asc' } });
  }
}
