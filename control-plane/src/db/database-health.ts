// Reads of the database itself, not of any table's rows: whether it answers, its version, its clock, the migrations
// it has applied (for readiness and `vpctl doctor`).
import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from './sql.ts';

/** Throws when the database does not answer. */
export async function pingDatabase(em: EntityManager): Promise<void> {
  await query(em, 'select 1');
}

/** PostgreSQL's version line without its build platform ("PostgreSQL 17.2"). */
export async function databaseVersion(em: EntityManager): Promise<string> {
  const [{ version }] = await query<{ version: string }>(em, "select split_part(version(), ' on ', 1) as version");
  return version;
}

/** The database's clock now, in epoch milliseconds. */
export async function databaseClockMs(em: EntityManager): Promise<number> {
  const [{ ms }] = await query<{ ms: string }>(em, 'select extract(epoch from clock_timestamp()) * 1000 as ms');
  return Number(ms);
}

/** The names of the migrations applied to the database, in order; none where it was never migrated. */
export async function appliedMigrationNames(em: EntityManager): Promise<string[]> {
  const [{ present }] = await query<{ present: boolean }>(
    em,
    "select to_regclass('schema_migrations') is not null as present",
  );
  if (!present) return [];
  return (await query<{ name: string }>(em, 'select name from schema_migrations order by id')).map((row) => row.name);
}
