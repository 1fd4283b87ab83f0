import type { EntityManager } from '@mikro-orm/postgresql';
import { Conflict, Forbidden } from '../http/errors.ts';
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
  if (isConnected(dataset)) throw Conflict(`Dataset ${dataset.workspace.handle}/${dataset.slug} is backed by connected storage: ${operation}`);
}

/** 403: the spec's "moving from a read-only source"; copying (release false) stays allowed. */
export function refuseMoveOut(dataset: Dataset): void {
  if (isConnected(dataset)) {
    throw Forbidden(`release: ${dataset.workspace.handle}/${dataset.slug} is backed by connected storage and read-only; copy its images instead (release false)`);
  }
}

/**
 * 409 when an AI feature (analysis, similar images, batch labeling, training) may not read a connected dataset's
 * images: its cloud integration's processing is off ("turning them off stops new work"), or it was disconnected.
 */
export async function requireProcessing(em: EntityManager, dataset: Dataset, feature: string): Promise<void> {
  const reference = dataset.reference;
  if (reference?.provider !== 'cloud') return;
  const integration = await em.findOne(StorageIntegration, { id: reference.integrationId, workspace: dataset.workspace.id });
  if (!integration) {
    throw Conflict(`${feature}: the storage integration of ${dataset.workspace.handle}/${dataset.slug} was disconnected; its files are unavailable until the storage is connected again`);
  }
  if (!integration.processing) {
    throw Conflict(`${feature}: AI features are turned off for storage integration ${integration.id}; a workspace admin turns them on with PATCH /api/integrations/buckets/${integration.id} {"processing": true}`);
  }
}
