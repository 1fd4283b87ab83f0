import type { EntityManager } from '@mikro-orm/postgresql';
import type { Region } from '@vp/config';
import type { z } from 'zod';
import { requireKey, requireRole } from '../auth/access.ts';
import type { Actor } from '../auth/actor.ts';
import { TRASH_DAYS } from '../datasets/dataset.service.ts';
import { busyTrashedDatasetSlug, restoreDataset } from '../datasets/dataset.store.ts';
import {
  modelsOfTrashItem,
  restoreModel,
  restoreModelsTrashedWithProject,
  trashedProjectSlugOfModel,
} from '../models/model.store.ts';
import { restoreProject } from '../projects/project.store.ts';
import { pageInfo } from '../http/pagination.ts';
import { Conflict, NotFound } from '../http/errors.ts';
import type { Storage } from '../storage/storage.ts';
import { eraseItem, eraseTrash, type TrashType } from './trash-erase.ts';
import {
  TRASH_ITEM_TYPES,
  trashItem,
  trashItemCounts,
  trashItems,
  trashSizes,
  type TrashItemRow,
} from './trash-items.store.ts';
import type {
  TrashDeleteBody,
  TrashDeleted,
  TrashList,
  TrashListQuery,
  TrashResources,
  TrashRestored,
  TrashTarget,
} from './trash.schemas.ts';

const DAY_MS = 86_400_000;

/** The trash of the key's workspace: projects, datasets and models deleted in the last 30 days. */
export class TrashService {
  private readonly em: EntityManager;
  private readonly region: Region;
  private readonly storage: Storage;

  constructor(em: EntityManager, region: Region, storage: Storage) {
    this.em = em;
    this.region = region;
    this.storage = storage;
  }

  /** Most recently deleted first; with id, that item alone and what its restore or deletion affects. */
  async list(actor: Actor, request: z.output<typeof TrashListQuery>): Promise<z.input<typeof TrashList>> {
    const key = requireKey(actor);
    requireRole(actor, key.workspaceId, 'viewer');
    const types = request.type === 'all' ? TRASH_ITEM_TYPES : [request.type];
    const rows = request.id
      ? await trashItem(this.em, key.workspaceId, request.type as TrashType, request.id)
      : await trashItems(this.em, key.workspaceId, types, request.limit, (request.page - 1) * request.limit);
    if (request.id && rows.length === 0)
      throw NotFound(`No ${request.type} ${request.id} listed in this workspace's trash`);
    const summary = await this.summary(key.workspaceId);
    const total = request.id ? 1 : request.type === 'all' ? summary.total : summary[`${request.type}s`];
    const now = Date.now();
    return {
      items: rows.map((row) => ({
        id: row.id,
        _id: row.id,
        type: row.type,
        owner: key.workspaceHandle,
        slug: row.slug,
        name: row.name,
        ...(row.project
          ? {
              project: row.project,
              parentProject: { _id: row.project_id!, name: row.project_name!, slug: row.project },
            }
          : {}),
        ...(row.model_count !== null ? { modelCount: row.model_count, cascadedCount: row.model_count } : {}),
        deletedAt: new Date(row.deleted_at).toISOString(),
        trashedAt: new Date(row.deleted_at).toISOString(),
        daysRemaining: Math.max(0, Math.ceil(TRASH_DAYS - (now - new Date(row.deleted_at).getTime()) / DAY_MS)),
      })),
      ...pageInfo(total, request.id ? 1 : request.page, request.limit),
      summary,
      ...(request.id ? { resources: await this.resources(rows[0]!) } : {}),
      region: this.region,
    };
  }

  private async summary(workspaceId: string): Promise<z.input<typeof TrashList>['summary']> {
    const counts = await trashItemCounts(this.em, workspaceId);
    const sizes = await trashSizes(this.em, workspaceId);
    const of = (type: TrashType) => counts.find((row) => row.type === type)?.count ?? 0;
    const total = of('project') + of('dataset') + of('model');
    const bytes = { datasets: Number(sizes.datasets), models: Number(sizes.models) };
    return {
      projects: of('project'),
      datasets: of('dataset'),
      models: of('model'),
      total,
      totalItems: total,
      totalSizeBytes: bytes.datasets + bytes.models,
      byType: {
        projects: { count: of('project') },
        datasets: { count: of('dataset'), sizeBytes: bytes.datasets },
        models: { count: of('model'), sizeBytes: bytes.models },
        exports: { count: 0, sizeBytes: 0 },
      },
    };
  }

  /**
   * The models a restore or permanent deletion touches. No deployment is ever listed: a model's deployments are deleted
   * for good when it (or its project) goes to trash, so none is left for a restore or an erase to touch.
   */
  private async resources(item: TrashItemRow): Promise<z.input<typeof TrashResources>> {
    const models = await modelsOfTrashItem(this.em, item.type === 'project' ? 'project' : 'model', item.id);
    const project =
      item.type === 'project' ? [{ id: item.id, type: 'project' as const, name: item.name, slug: item.slug }] : [];
    return [
      ...project,
      ...models.map((m) => ({
        id: m.id,
        type: 'model' as const,
        name: m.name,
        slug: m.slug,
        trashedWithProject: m.trashed_with_project,
      })),
    ];
  }

  /**
   * Back to active: slugs stay taken while in trash, so a restore never conflicts. A project brings back
   * the models that went to trash with it; a model deleted on its own before stays in trash. A model of a
   * project in trash is restored with the project, not alone (409).
   */
  async restore(actor: Actor, target: z.output<typeof TrashTarget>): Promise<z.input<typeof TrashRestored>> {
    const key = requireKey(actor);
    requireRole(actor, key.workspaceId, 'editor');
    const { id, type } = target;
    return this.em.transactional(async (tx) => {
      if (type === 'model') {
        const project = await trashedProjectSlugOfModel(tx, id, key.workspaceId);
        if (project) throw Conflict(`The model's project "${project}" is in trash: restore the project`);
      }
      const restore = { project: restoreProject, dataset: restoreDataset, model: restoreModel }[type];
      if (!(await restore(tx, id, key.workspaceId))) throw NotFound(`No ${type} ${id} in this workspace's trash`);
      if (type !== 'project') return { success: true as const, id, type };
      const models = await restoreModelsTrashedWithProject(tx, id);
      return { success: true as const, id, type, restoredModels: models };
    });
  }

  /**
   * Irreversible. One item needs an editor, like moving it to trash did; emptying the whole trash (other
   * members' deletions included) needs an admin. A dataset an ingest is still working on is refused (409).
   */
  async remove(actor: Actor, body: z.output<typeof TrashDeleteBody>): Promise<z.input<typeof TrashDeleted>> {
    const key = requireKey(actor);
    if ('all' in body) {
      requireRole(actor, key.workspaceId, 'admin');
      const busy = await busyTrashedDatasetSlug(this.em, key.workspaceId);
      if (busy)
        throw Conflict(
          `A job (an ingest) is working on dataset "${busy}" in trash; wait for it to finish or cancel it, then empty the trash`,
        );
      return {
        success: true,
        ...(await eraseTrash(this.em, this.storage, { workspaceId: key.workspaceId })),
        survivingDeployments: 0,
      };
    }
    requireRole(actor, key.workspaceId, 'editor');
    return {
      success: true,
      ...(await eraseItem(this.em, this.storage, key.workspaceId, body.type, body.id)),
      survivingDeployments: 0,
    };
  }
}
