// The explore search: public datasets and projects of every workspace (datasets, projects and the models in them,
// their workspaces and stars), read together as one catalogue.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import { pgArray, query } from '../db/sql.ts';
import { containsPattern } from '../images/image-search.ts';
import type { EXPLORE_SORTS, ExploreQuery, ExploreResult } from './explore.schemas.ts';

export type Search = z.output<typeof ExploreQuery>;
type Sort = (typeof EXPLORE_SORTS)[number];

/** ORDER BY per sort; `count` is the table's own count column (images of a dataset, models of a project). */
function orderBy(sort: Sort, alias: string, count: string): string {
  const orders: Record<Sort, string> = {
    relevance: `${alias}.created_at desc`,
    newest: `${alias}.created_at desc`,
    oldest: `${alias}.created_at asc`,
    stars: `${alias}.star_count desc, ${alias}.created_at desc`,
    'name-asc': `lower(${alias}.name) asc`,
    'name-desc': `lower(${alias}.name) desc`,
    'count-desc': `${count} desc`,
    'count-asc': `${count} asc`,
  };
  return `${orders[sort]}, ${alias}.id`;
}

/** The WHERE conditions every resource type shares, for the table aliased `alias`, and their parameters. */
function commonFilters(
  search: Search,
  starredBy: string | null,
  alias: string,
  stars: { table: string; column: string },
): { sql: string; params: unknown[] } {
  const conditions = [`${alias}.visibility = 'public'`, `${alias}.deleted_at is null`];
  const params: unknown[] = [];
  if (search.q) {
    conditions.push(`(${alias}.name ilike ? or ${alias}.slug ilike ? or ${alias}.description ilike ?)`);
    const pattern = containsPattern(search.q);
    params.push(pattern, pattern, pattern);
  }
  if (search.license?.length) {
    conditions.push(`${alias}.license = any(?::text[])`);
    params.push(pgArray(search.license));
  }
  if (search.author) {
    conditions.push('w.handle = ?');
    params.push(search.author);
  }
  if (search.starred) {
    conditions.push(`exists (select 1 from ${stars.table} s where s.${stars.column} = ${alias}.id and s.user_id = ?)`);
    params.push(starredBy);
  }
  return { sql: conditions.join(' and '), params };
}

/** Public datasets matching `search` (`starredBy`: the user whose stars `starred` means), one more than the limit. */
export function searchPublicDatasets(
  em: EntityManager,
  search: Search,
  starredBy: string | null,
): Promise<DatasetRow[]> {
  const filters = commonFilters(search, starredBy, 'd', { table: 'dataset_stars', column: 'dataset_id' });
  const extra: string[] = [];
  const params = [...filters.params];
  if (search.task?.length) {
    extra.push('d.task = any(?::text[])');
    params.push(pgArray(search.task));
  }
  if (search.minImages !== undefined) {
    extra.push('d.image_count >= ?');
    params.push(search.minImages);
  }
  if (search.maxImages !== undefined) {
    extra.push('d.image_count <= ?');
    params.push(search.maxImages);
  }
  return query<DatasetRow>(
    em,
    `select d.id, d.slug, d.name, d.description, d.visibility, d.task, d.image_count, d.class_names, d.tags, d.train_count, d.val_count, d.test_count,
            d.labeled_count, d.star_count, d.license, d.updated_at, d.workspace_id, w.handle as owner
       from datasets d join workspaces w on w.id = d.workspace_id
      where ${[filters.sql, ...extra].join(' and ')}
      order by ${orderBy(search.sort, 'd', 'd.image_count')} limit ? offset ?`,
    [...params, search.limit + 1, search.offset],
  );
}

/** Public projects matching `search`, with their models' names, bytes and count, one more than the limit. */
export function searchPublicProjects(
  em: EntityManager,
  search: Search,
  starredBy: string | null,
): Promise<ProjectRow[]> {
  const filters = commonFilters(search, starredBy, 'p', { table: 'project_stars', column: 'project_id' });
  const extra: string[] = [];
  const params = [...filters.params];
  if (search.task?.length) {
    extra.push(
      'exists (select 1 from models t where t.project_id = p.id and t.deleted_at is null and t.task = any(?::text[]))',
    );
    params.push(pgArray(search.task));
  }
  return query<ProjectRow>(
    em,
    `select p.id, p.slug, p.name, p.description, p.visibility, p.star_count, p.license, p.updated_at, w.handle as owner,
            coalesce(m.names, '{}') as model_names, coalesce(m.bytes, 0)::bigint as total_bytes, coalesce(m.count, 0)::int as model_count
       from projects p join workspaces w on w.id = p.workspace_id
       left join lateral (select array_agg(name order by created_at) as names, sum(file_bytes) as bytes, count(*) as count
                            from models where project_id = p.id and deleted_at is null) m on true
      where ${[filters.sql, ...extra].join(' and ')}
      order by ${orderBy(search.sort, 'p', 'coalesce(m.count, 0)')} limit ? offset ?`,
    [...params, search.limit + 1, search.offset],
  );
}

export interface DatasetRow {
  id: string;
  slug: string;
  name: string;
  description: string;
  visibility: 'public';
  task: z.output<typeof ExploreResult>['datasets'][number]['task'];
  image_count: number;
  class_names: string[];
  tags: string[];
  train_count: number;
  val_count: number;
  test_count: number;
  labeled_count: number;
  star_count: number;
  license: string | null;
  updated_at: Date;
  workspace_id: string;
  owner: string;
}

export interface ProjectRow {
  id: string;
  slug: string;
  name: string;
  description: string;
  visibility: 'public';
  star_count: number;
  license: string | null;
  updated_at: Date;
  owner: string;
  model_names: string[];
  total_bytes: string;
  model_count: number;
}
