import type { EntityManager } from '@mikro-orm/postgresql';
import type { Actor } from '../auth/actor.ts';
import { pgArray, query } from './sql.ts';

/** A starrable table (with a star_count column) and its star rows (`column`, user_id). */
export interface StarTables {
  items: 'datasets' | 'projects' | 'models';
  stars: 'dataset_stars' | 'project_stars' | 'model_stars';
  column: 'dataset_id' | 'project_id' | 'model_id';
}

export const DATASET_STARS: StarTables = { items: 'datasets', stars: 'dataset_stars', column: 'dataset_id' };
export const PROJECT_STARS: StarTables = { items: 'projects', stars: 'project_stars', column: 'project_id' };
export const MODEL_STARS: StarTables = { items: 'models', stars: 'model_stars', column: 'model_id' };

/** Stars or unstars for one user; returns the new star count. Repeats change nothing. */
export async function setStar(
  em: EntityManager,
  tables: StarTables,
  id: string,
  userId: string,
  starred: boolean,
): Promise<number> {
  // Row and counter change in one statement, so concurrent stars keep star_count exact.
  const sql = starred
    ? `with added as (insert into ${tables.stars} (${tables.column}, user_id, created_at) values (?, ?, now()) on conflict do nothing returning 1)
       update ${tables.items} set star_count = star_count + (select count(*) from added) where id = ? returning star_count`
    : `with removed as (delete from ${tables.stars} where ${tables.column} = ? and user_id = ? returning 1)
       update ${tables.items} set star_count = star_count - (select count(*) from removed) where id = ? returning star_count`;
  const [row] = await query<{ star_count: number }>(em, sql, [id, userId, id]);
  return row.star_count;
}

/** Which of `ids` the key's user has starred (none for anonymous callers). */
export async function starredAmong(
  em: EntityManager,
  tables: StarTables,
  actor: Actor,
  ids: string[],
): Promise<Set<string>> {
  if (actor.kind !== 'key' || ids.length === 0) return new Set();
  const rows = await query<{ id: string }>(
    em,
    `select ${tables.column} as id from ${tables.stars} where user_id = ? and ${tables.column} = any(?::text[])`,
    [actor.userId, pgArray(ids)],
  );
  return new Set(rows.map((row) => row.id));
}
