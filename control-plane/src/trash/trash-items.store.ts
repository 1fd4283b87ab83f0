// The trash listing: a read across the projects, datasets and models tables (their rows in trash, in the same
// columns), and the bytes the trashed datasets' images and models hold. Trash is not a table: what changes a row
// in trash (restore, erase) is in that table's store.
import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from '../db/sql.ts';
import type { TrashType } from './trash-erase.ts';

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

export const TRASH_ITEM_TYPES = Object.keys(ITEMS) as TrashType[];

export interface TrashItemRow {
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

/** The one item of that type and id in the workspace's trash (none or one row). */
export async function trashItem(
  em: EntityManager,
  workspaceId: string,
  type: TrashType,
  id: string,
): Promise<TrashItemRow[]> {
  return query<TrashItemRow>(em, `${ITEMS[type]} and ${type === 'project' ? 'p' : 'm'}.id = ?`, [workspaceId, id]);
}

/** A page of the workspace's trash items of those types, most recently deleted first. */
export async function trashItems(
  em: EntityManager,
  workspaceId: string,
  types: TrashType[],
  limit: number,
  offset: number,
): Promise<TrashItemRow[]> {
  const union = types.map((type) => ITEMS[type]).join(' union all ');
  return query<TrashItemRow>(em, `${union} order by deleted_at desc, id desc limit ? offset ?`, [
    ...types.map(() => workspaceId),
    limit,
    offset,
  ]);
}

/** How many items of each type the workspace's trash lists (types without any are absent). */
export async function trashItemCounts(
  em: EntityManager,
  workspaceId: string,
): Promise<Array<{ type: TrashType; count: number }>> {
  return query<{ type: TrashType; count: number }>(
    em,
    `select type, count(*)::int as count from (${Object.values(ITEMS).join(' union all ')}) t group by type`,
    Object.keys(ITEMS).map(() => workspaceId),
  );
}

/** The bytes of the images of the workspace's datasets in trash, and of its models' files in trash. */
export async function trashSizes(
  em: EntityManager,
  workspaceId: string,
): Promise<{ datasets: string; models: string }> {
  const [sizes] = await query<{ datasets: string; models: string }>(
    em,
    `select (select coalesce(sum(i.bytes), 0) from images i join datasets d on d.id = i.dataset_id where d.workspace_id = ? and d.deleted_at is not null)::bigint as datasets,
              (select coalesce(sum(m.file_bytes), 0) from models m where m.workspace_id = ? and m.deleted_at is not null)::bigint as models`,
    [workspaceId, workspaceId],
  );
  return sizes!;
}
