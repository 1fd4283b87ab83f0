import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import type { Actor } from '../auth/actor.ts';
import { datasetSamples, sampleImagesOf } from '../datasets/dataset-samples.ts';
import { pgArray, query } from '../db/sql.ts';
import { containsPattern } from '../images/image-search.ts';
import type { Storage } from '../storage/storage.ts';
import type { EXPLORE_SORTS, ExploreQuery, ExploreResult } from './explore.schemas.ts';

type Search = z.output<typeof ExploreQuery>;
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
function commonFilters(actor: Actor, search: Search, alias: string, stars: { table: string; column: string }): { sql: string; params: unknown[] } {
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
    params.push(actor.kind === 'key' ? actor.userId : null);
  }
  return { sql: conditions.join(' and '), params };
}

/** Explore: what every workspace on the appliance made public. */
export class ExploreService {
  private readonly em: EntityManager;
  private readonly storage: Storage;

  constructor(em: EntityManager, storage: Storage) {
    this.em = em;
    this.storage = storage;
  }

  async search(actor: Actor, search: Search): Promise<z.input<typeof ExploreResult>> {
    const [projects, datasets] = await Promise.all([
      search.type === 'all' || search.type === 'projects' ? this.projects(actor, search) : [],
      search.type === 'all' || search.type === 'datasets' ? this.datasets(actor, search) : [],
    ]);
    return {
      projects: projects.slice(0, search.limit),
      datasets: datasets.slice(0, search.limit),
      ...(search.type === 'images' ? { images: [] } : {}),
      hasMore: projects.length > search.limit || datasets.length > search.limit,
    };
  }

  /** One more than the limit, so hasMore can be told. */
  private async datasets(actor: Actor, search: Search): Promise<z.input<typeof ExploreResult>['datasets']> {
    const filters = commonFilters(actor, search, 'd', { table: 'dataset_stars', column: 'dataset_id' });
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
    const rows = await query<DatasetRow>(
      this.em,
      `select d.id, d.slug, d.name, d.description, d.visibility, d.task, d.image_count, d.class_names, d.tags, d.train_count, d.val_count, d.test_count,
              d.labeled_count, d.star_count, d.license, d.updated_at, d.workspace_id, w.handle as owner
         from datasets d join workspaces w on w.id = d.workspace_id
        where ${[filters.sql, ...extra].join(' and ')}
        order by ${orderBy(search.sort, 'd', 'd.image_count')} limit ? offset ?`,
      [...params, search.limit + 1, search.offset],
    );
    const samples = await datasetSamples(this.em, this.storage.urls, rows.map((row) => ({ id: row.id, workspaceId: row.workspace_id })), false);
    return rows.map((row) => ({
      id: row.id,
      dataset: row.slug,
      name: row.name,
      description: row.description,
      owner: row.owner,
      visibility: row.visibility,
      task: row.task,
      imageCount: row.image_count,
      classCount: row.class_names.length,
      classNames: row.class_names,
      tags: row.tags,
      splits: { train: row.train_count, val: row.val_count, test: row.test_count, labeled: row.labeled_count },
      starCount: row.star_count,
      ...(row.license ? { license: row.license } : {}),
      sampleImages: sampleImagesOf(samples.get(row.id) ?? []),
      updatedAt: new Date(row.updated_at).toISOString(),
    }));
  }

  private async projects(actor: Actor, search: Search): Promise<z.input<typeof ExploreResult>['projects']> {
    const filters = commonFilters(actor, search, 'p', { table: 'project_stars', column: 'project_id' });
    const extra: string[] = [];
    const params = [...filters.params];
    if (search.task?.length) {
      extra.push('exists (select 1 from models t where t.project_id = p.id and t.deleted_at is null and t.task = any(?::text[]))');
      params.push(pgArray(search.task));
    }
    const rows = await query<ProjectRow>(
      this.em,
      `select p.id, p.slug, p.name, p.description, p.visibility, p.star_count, p.license, p.updated_at, w.handle as owner,
              coalesce(m.names, '{}') as model_names, coalesce(m.bytes, 0)::bigint as total_bytes, coalesce(m.count, 0)::int as model_count
         from projects p join workspaces w on w.id = p.workspace_id
         left join lateral (select array_agg(name order by created_at) as names, sum(file_bytes) as bytes, count(*) as count
                              from models where project_id = p.id and deleted_at is null) m on true
        where ${[filters.sql, ...extra].join(' and ')}
        order by ${orderBy(search.sort, 'p', 'coalesce(m.count, 0)')} limit ? offset ?`,
      [...params, search.limit + 1, search.offset],
    );
    return rows.map((row) => ({
      id: row.id,
      project: row.slug,
      name: row.name,
      description: row.description,
      owner: row.owner,
      visibility: row.visibility,
      modelCount: row.model_count,
      modelNames: row.model_names,
      totalBytes: Number(row.total_bytes),
      starCount: row.star_count,
      ...(row.license ? { license: row.license } : {}),
      updatedAt: new Date(row.updated_at).toISOString(),
    }));
  }
}

interface DatasetRow {
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

interface ProjectRow {
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
