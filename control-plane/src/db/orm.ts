import { MikroORM, type Options } from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import { entities } from './entities.ts';
import { migrations } from './migrations/index.ts';

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
    await connection.execute('select pg_advisory_xact_lock(7311001)', [], 'all', trx);
    return (await orm.migrator.up({ transaction: trx })).map((migration) => migration.name);
  });
}
