import { MikroORM, type Options } from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import { entities } from './entities.ts';
import { Conflict, Invalid } from '../http/errors.ts';
import { migrations } from './migrations/index.ts';
import './rollback-on-lost-connection.ts';

/** Held while migrations run, by every replica and by vpctl: one migrator at a time. */
const MIGRATION_LOCK = 7311001;

export type Orm = MikroORM;

/** Opens the ORM on a database URL; schema changes come only from the checked-in migrations. */
export async function initORM(databaseUrl: string, overrides: Partial<Options> = {}): Promise<Orm> {
  return MikroORM.init({
    clientUrl: databaseUrl,
    entities,
    extensions: [Migrator],
    discovery: { warnWhenNoEntities: false },
    migrations: { migrationsList: migrations, tableName: 'schema_migrations', snapshot: false, silent: true },
    // Hand-written SQL (rate-limit counters and their function, the resource-count triggers) is not mirrored by entities.
    schemaGenerator: { ignoreRoutines: true, ignoreTriggers: true, skipTables: ['rate_limit_windows'] },
    pool: { min: 0, max: 10 },
    debug: false,
    ...overrides,
  });
}

/**
 * Applies pending migrations and returns the names of those it applied; safe to run from several
 * replicas at once (PostgreSQL advisory lock).
 */
export async function migrate(orm: Orm): Promise<string[]> {
  const connection = orm.em.getConnection();
  return connection.transactional(async (trx) => {
    await connection.execute('select pg_advisory_xact_lock(?)', [MIGRATION_LOCK], 'all', trx);
    return (await orm.migrator.up({ transaction: trx })).map((migration) => migration.name);
  });
}

/**
 * Reverts, newest first and in one transaction under the migrations' lock, every applied migration after `to`, which
 * stays applied: what a rollback to the release whose last migration is `to` needs. Returns the names it reverted.
 * Refuses a `to` that is not applied, and migrations this release does not know (their `down` is not here).
 */
export async function migrateDown(orm: Orm, to: string): Promise<string[]> {
  const connection = orm.em.getConnection();
  return connection.transactional(async (trx) => {
    await connection.execute('select pg_advisory_xact_lock(?)', [MIGRATION_LOCK], 'all', trx);
    const applied = (await orm.migrator.getExecuted()).map((row) => row.name);
    const at = applied.indexOf(to);
    if (at < 0)
      throw Invalid(`${to} is not an applied migration of this database (its last is ${applied.at(-1) ?? 'none'})`);
    const known = new Set(migrations.map((migration) => migration.name));
    const unknown = applied.slice(at + 1).filter((name) => !known.has(name));
    if (unknown.length > 0)
      throw Conflict(
        `this release does not know the applied migrations ${unknown.join(', ')}: migrate down with the release that applied them`,
      );
    return (await orm.migrator.down({ to, transaction: trx })).map((migration) => migration.name);
  });
}
