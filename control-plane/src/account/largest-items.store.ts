// The storage breakdown's largest items: a read across datasets (their images' bytes), models (with their projects)
// and model_exports (each file once), for one workspace.
import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from '../db/sql.ts';

export interface LargestItemRow {
  id: string;
  name: string;
  slug: string;
  bytes: string;
  type: 'dataset' | 'model' | 'export';
  parent_name: string | null;
  parent_slug: string | null;
}

/** The ten largest live datasets, models and export artifacts of the workspace, largest first. */
export async function largestItems(em: EntityManager, workspaceId: string): Promise<LargestItemRow[]> {
  return query<LargestItemRow>(
    em,
    `(select d.id, d.name, d.slug, coalesce(sum(i.bytes), 0)::bigint as bytes, 'dataset' as type, null as parent_name, null as parent_slug
          from datasets d left join images i on i.dataset_id = d.id
         where d.workspace_id = ? and d.deleted_at is null group by d.id)
       union all
       (select m.id, m.name, m.slug, m.file_bytes as bytes, 'model' as type, p.name as parent_name, p.slug as parent_slug
          from models m join projects p on p.id = m.project_id
         where p.workspace_id = ? and m.deleted_at is null and m.file_bytes is not null)
       union all
       (select distinct on (e.file_key) e.id, e.file_name as name, e.format as slug, e.file_size as bytes, 'export' as type, m.name as parent_name, m.slug as parent_slug
          from model_exports e join models m on m.id = e.model_id
         where e.workspace_id = ? and e.file_key is not null order by e.file_key, e.created_at)
       order by bytes desc, id limit 10`,
    [workspaceId, workspaceId, workspaceId],
  );
}
