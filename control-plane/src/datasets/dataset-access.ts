import type { EntityManager } from '@mikro-orm/postgresql';
import type { Role } from '../account/roles.ts';
import type { Actor } from '../auth/actor.ts';
import { requireAccess, type AccessNeed } from '../auth/resource-access.ts';
import { Dataset } from './dataset.entity.ts';

export type DatasetNeed = AccessNeed;

export interface DatasetAccess {
  dataset: Dataset;
  role: Role | null;
}

/** The access rule of every dataset and image endpoint (see requireAccess): invisible or trashed is 404, visible but not editable 403. */
export function checkDatasetAccess(
  actor: Actor,
  dataset: Dataset | null,
  need: DatasetNeed,
  label: string,
): DatasetAccess {
  const { resource, role } = requireAccess(actor, dataset, need, `Dataset ${label} not found`);
  return { dataset: resource, role };
}

export async function findDataset(
  em: EntityManager,
  actor: Actor,
  owner: string,
  slug: string,
  need: DatasetNeed,
): Promise<DatasetAccess> {
  const dataset = await em.findOne(
    Dataset,
    { workspace: { handle: owner }, slug, deletedAt: null },
    { populate: ['workspace'] },
  );
  return checkDatasetAccess(actor, dataset, need, `${owner}/${slug}`);
}
