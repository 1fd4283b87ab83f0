import type { EntityManager } from '@mikro-orm/postgresql';

/** Runs hand-written SQL (`?` placeholders) on the EntityManager's connection, inside its transaction if any. */
export function query<T = Record<string, unknown>>(
  em: EntityManager,
  text: string,
  params: unknown[] = [],
): Promise<T[]> {
  return em.getConnection().execute<T[]>(text, params, 'all', em.getTransactionContext());
}

/**
 * A PostgreSQL array literal for one `?::text[]` / `?::int[]` placeholder: the driver would spread a JS
 * array into several placeholders.
 */
export function pgArray(values: ReadonlyArray<string | number>): string {
  return `{${values.map((value) => `"${String(value).replace(/["\\]/g, '\\$&')}"`).join(',')}}`;
}
