import type { EntityManager } from '@mikro-orm/postgresql';
import { roleAtLeast, type Role } from '../account/roles.ts';
import { requireKey } from '../auth/access.ts';
import type { Actor } from '../auth/actor.ts';
import { roleIn } from '../auth/access.ts';
import { Forbidden, NotFound } from '../http/errors.ts';
import { Dataset } from './dataset.entity.ts';

/** view: public, or a key of the workspace (any role) · edit: a key of the workspace with editor or above. */
export type DatasetNeed = 'view' | 'edit';

export interface DatasetAccess {
  dataset: Dataset;
  role: Role | null;
}

/**
 * The access rule of every dataset and image endpoint. A private dataset the actor cannot view is
 * reported missing (404), never forbidden, so names of other workspaces' datasets do not leak; a visible
 * dataset the actor may not change is 403. Datasets in trash are gone for every endpoint.
 */
export function checkDatasetAccess(actor: Actor, dataset: Dataset | null, need: DatasetNeed, label: string): DatasetAccess {
  const role = dataset ? roleIn(actor, dataset.workspace.id) : null;
  if (!dataset || dataset.deletedAt || (dataset.visibility !== 'public' && !role)) throw NotFound(`Dataset ${label} not found`);
  if (need === 'edit') {
    requireKey(actor);
    if (!role || !roleAtLeast(role, 'editor')) throw Forbidden();
  }
  return { dataset, role };
}

export async function findDataset(em: EntityManager, actor: Actor, owner: string, slug: string, need: DatasetNeed): Promise<DatasetAccess> {
  const dataset = await em.findOne(Dataset, { workspace: { handle: owner }, slug, deletedAt: null }, { populate: ['workspace'] });
  return checkDatasetAccess(actor, dataset, need, `${owner}/${slug}`);
}
