import type { EntityManager } from '@mikro-orm/postgresql';
import { Conflict, Forbidden } from '../http/errors.ts';
import { Host } from '../hosts/host.entity.ts';
import { StorageIntegration } from '../integrations/integration.entity.ts';
import type { Dataset } from './dataset.entity.ts';

/**
 * The spec's rules for a dataset backed by connected storage (indexed in place: its images are the storage's
 * files, read on demand). Its images change only by re-syncing its reference, so what would add, move or copy
 * them is refused; and a cloud integration's `processing` switch decides whether AI features may read them.
 */
export function isConnected(dataset: Dataset): boolean {
  return dataset.reference != null;
}

/** 409 for an operation the spec refuses on a connected dataset (clone, adopt into it, auto-annotate, ingest another source). */
export function refuseConnected(dataset: Dataset, operation: string): void {
  if (isConnected(dataset))
    throw Conflict(`Dataset ${dataset.workspace.handle}/${dataset.slug} is backed by connected storage: ${operation}`);
}

/** 403: the spec's "moving from a read-only source"; copying (release false) stays allowed. */
export function refuseMoveOut(dataset: Dataset): void {
  if (isConnected(dataset)) {
    throw Forbidden(
      `release: ${dataset.workspace.handle}/${dataset.slug} is backed by connected storage and read-only; copy its images instead (release false)`,
    );
  }
}

/**
 * 409 when an AI feature (analysis, similar images, batch labeling, training) may not read a connected dataset's
 * images: its cloud integration's processing is off ("turning them off stops new work"), or it was disconnected.
 */
export async function requireProcessing(em: EntityManager, dataset: Dataset, feature: string): Promise<void> {
  const reference = dataset.reference;
  if (reference?.provider !== 'cloud') return;
  const integration = await em.findOne(StorageIntegration, {
    id: reference.integrationId,
    workspace: dataset.workspace.id,
  });
  if (!integration) {
    throw Conflict(
      `${feature}: the storage integration of ${dataset.workspace.handle}/${dataset.slug} was disconnected; its files are unavailable until the storage is connected again`,
    );
  }
  if (!integration.processing) {
    throw Conflict(
      `${feature}: AI features are turned off for storage integration ${integration.id}; a workspace admin turns them on with PATCH /api/integrations/buckets/${integration.id} {"processing": true}`,
    );
  }
}

/** How a connected dataset's list entry and read describe its storage (the hosted service's integration* fields). */
export interface ConnectionFields {
  integrationProvider: 'gcs' | 's3' | 'azure' | 'on-premise';
  /** disconnected: the cloud integration was removed; for a worker host's folder: online while its agent is connected, else offline. */
  integrationStatus: 'online' | 'offline' | 'disconnected';
  integrationProcessing: boolean;
  /** The appliance never writes to connected storage. */
  integrationWritable: false;
}

/** The connection fields of each connected dataset among `datasets` (one query per kind of storage), by dataset id. */
export async function connectionFields(em: EntityManager, datasets: Dataset[]): Promise<Map<string, ConnectionFields>> {
  const cloudIds = datasets.flatMap((dataset) =>
    dataset.reference?.provider === 'cloud' ? [dataset.reference.integrationId] : [],
  );
  const integrations = new Map(
    cloudIds.length
      ? (await em.find(StorageIntegration, { id: { $in: cloudIds } })).map((row) => [row.id, row] as const)
      : [],
  );
  const hostIds = datasets.flatMap((dataset) =>
    dataset.reference?.provider === 'local' ? [dataset.reference.keyId] : [],
  );
  const connectedHosts = new Set(
    hostIds.length
      ? (await em.find(Host, { id: { $in: hostIds }, state: 'connected' }, { fields: ['id'] })).map((host) => host.id)
      : [],
  );
  const fields = new Map<string, ConnectionFields>();
  for (const dataset of datasets) {
    const reference = dataset.reference;
    if (!reference) continue;
    if (reference.provider === 'local') {
      const status = connectedHosts.has(reference.keyId) ? 'online' : 'offline';
      fields.set(dataset.id, {
        integrationProvider: 'on-premise',
        integrationStatus: status,
        integrationProcessing: true,
        integrationWritable: false,
      });
      continue;
    }
    // Scoped to the dataset's workspace: an id another workspace holds is as good as removed.
    const integration = integrations.get(reference.integrationId);
    const found = integration && integration.workspace.id === dataset.workspace.id ? integration : undefined;
    fields.set(dataset.id, {
      // The spec names a folder on a worker host on-premise, however it was connected.
      integrationProvider: found?.provider === 'local' ? 'on-premise' : (found?.provider ?? 's3'),
      integrationStatus: found ? 'online' : 'disconnected',
      integrationProcessing: found?.processing ?? false,
      integrationWritable: false,
    });
  }
  return fields;
}

/** The dataset's `source` as the API shows it: cloud or local (a worker host's folder, or files this appliance was given). */
export function sourceOf(dataset: Dataset): Record<string, unknown> & { provider: 'cloud' | 'local' } {
  const reference = dataset.reference;
  if (reference?.provider === 'cloud') return { ...dataset.source, provider: 'cloud' };
  if (reference?.provider === 'local') return { ...dataset.source, provider: 'local', keyId: reference.keyId };
  return { provider: 'local', ...dataset.source };
}
