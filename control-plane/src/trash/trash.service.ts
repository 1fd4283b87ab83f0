import type { EntityManager } from '@mikro-orm/postgresql';
import type { Region } from '@vp/config';
import type { z } from 'zod';
import { requireKey, requireRole } from '../auth/access.ts';
import type { Actor } from '../auth/actor.ts';
import { TRASH_DAYS } from '../datasets/dataset.service.ts';
import { query } from '../db/sql.ts';
import { pageInfo } from '../http/pagination.ts';
import { Conflict, NotFound } from '../http/errors.ts';
import type { Storage } from '../storage/storage.ts';
import { ACTIVE_JOB, eraseItem, eraseTrash, TRASH_TABLES, type TrashType } from './trash-erase.ts';
import type { TrashDeleteBody, TrashDeleted, TrashList, TrashListQuery, TrashResources, TrashRestored, TrashTarget } from './trash.schemas.ts';

const DAY_MS = 86_400_000;

/**
 * Each type's trash items of one workspace (placeholder: the workspace id), in the same columns. A model
 * that went to trash with its project is listed only through the project (modelCount, the preview).
 */
const ITEMS: Record<TrashType, string> = {
  project: `select p.id, 'project' as type, p.slug, p.name, p.deleted_at, null::text as project, null::text as project_id, null::text as project_name,
                   (select count(*)::int from models m where m.project_id = p.id) as model_count
            from projects p where p.workspace_id = ? and p.deleted_at is not null`,
  dataset: `select d.id, 'dataset' as type, d.slug, d.name, d.deleted_at, null::text as project, null::text as project_id, null::text as project_name, null::int as model_count
            from datasets d where d.workspace_id = ? and d.deleted_at is not null`,
  model: `select m.id, 'model' as type, m.slug, m.name, m.deleted_at, p.slug as project, p.id as project_id, p.name as project_name, null::int as model_count
          from models m join projects p on p.id = m.project_id where m.workspace_id = ? and m.deleted_at is not null and not m.trashed_with_project`,
};

interface ItemRow {
  id: string;
  type: TrashType;
  slug: string;
  name: string;
  deleted_at: Date;
  project: string | null;
  project_id: string | null;
  project_name: string | null;
  model_count: number | null;
}

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
    const types = request.type === 'all' ? (Object.keys(ITEMS) as TrashType[]) : [request.type];
    const union = types.map((type) => ITEMS[type]).join(' union all ');
    const rows = request.id
      ? await query<ItemRow>(this.em, `${ITEMS[request.type as TrashType]} and ${request.type === 'project' ? 'p' : 'm'}.id = ?`, [key.workspaceId, request.id])
      : await query<ItemRow>(this.em, `${union} order by deleted_at desc, id desc limit ? offset ?`, [
          ...types.map(() => key.workspaceId),
          request.limit,
          (request.page - 1) * request.limit,
        ]);
    if (request.id && rows.length === 0) throw NotFound(`No ${request.type} ${request.id} listed in this workspace's trash`);
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
        ...(row.project ? { project: row.project, parentProject: { _id: row.project_id!, name: row.project_name!, slug: row.project } } : {}),
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
    const counts = await query<{ type: TrashType; count: number }>(
      this.em,
      `select type, count(*)::int as count from (${Object.values(ITEMS).join(' union all ')}) t group by type`,
      Object.keys(ITEMS).map(() => workspaceId),
    );
    const [sizes] = await query<{ datasets: string; models: string }>(
      this.em,
      `select (select coalesce(sum(i.bytes), 0) from images i join datasets d on d.id = i.dataset_id where d.workspace_id = ? and d.deleted_at is not null)::bigint as datasets,
              (select coalesce(sum(m.file_bytes), 0) from models m where m.workspace_id = ? and m.deleted_at is not null)::bigint as models`,
      [workspaceId, workspaceId],
    );
    const of = (type: TrashType) => counts.find((row) => row.type === type)?.count ?? 0;
    const total = of('project') + of('dataset') + of('model');
    const bytes = { datasets: Number(sizes!.datasets), models: Number(sizes!.models) };
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
  private async resources(item: ItemRow): Promise<z.input<typeof TrashResources>> {
    const models = await query<{ id: string; slug: string; name: string; trashed_with_project: boolean }>(
      this.em,
      `select id, slug, name, trashed_with_project from models where ${item.type === 'project' ? 'project_id' : 'id'} = ? order by slug`,
      [item.id],
    );
    const project = item.type === 'project' ? [{ id: item.id, type: 'project' as const, name: item.name, slug: item.slug }] : [];
    return [...project, ...models.map((m) => ({ id: m.id, type: 'model' as const, name: m.name, slug: m.slug, trashedWithProject: m.trashed_with_project }))];
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
        const [project] = await query<{ slug: string }>(
          tx,
          'select p.slug from models m join projects p on p.id = m.project_id where m.id = ? and m.workspace_id = ? and m.deleted_at is not null and p.deleted_at is not null',
          [id, key.workspaceId],
        );
        if (project) throw Conflict(`The model's project "${project.slug}" is in trash: restore the project`);
      }
      const restored = await query(
        tx,
        `update ${TRASH_TABLES[type]} set deleted_at = null, updated_at = now()${type === 'model' ? ', trashed_with_project = false' : ''}
         where id = ? and workspace_id = ? and deleted_at is not null returning id`,
        [id, key.workspaceId],
      );
      if (restored.length === 0) throw NotFound(`No ${type} ${id} in this workspace's trash`);
      if (type !== 'project') return { success: true as const, id, type };
      const models = await query(
        tx,
        `update models set deleted_at = null, trashed_with_project = false, updated_at = now()
         where project_id = ? and trashed_with_project and deleted_at is not null returning id`,
        [id],
      );
      return { success: true as const, id, type, restoredModels: models.length };
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
      const [busy] = await query<{ slug: string }>(
        this.em,
        `select d.slug from datasets d where d.workspace_id = ? and d.deleted_at is not null and ${ACTIVE_JOB} limit 1`,
        [key.workspaceId],
      );
      if (busy) throw Conflict(`A job (an ingest) is working on dataset "${busy.slug}" in trash; wait for it to finish or cancel it, then empty the trash`);
      return { success: true, ...(await eraseTrash(this.em, this.storage, { workspaceId: key.workspaceId })), survivingDeployments: 0 };
    }
    requireRole(actor, key.workspaceId, 'editor');
    return { success: true, ...(await eraseItem(this.em, this.storage, key.workspaceId, body.type, body.id)), survivingDeployments: 0 };
  }
}
