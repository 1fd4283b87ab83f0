import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import pg from 'pg';

/** The PostgreSQL server the tests use (the machine's own; `.ci/run` makes sure it runs). */
export const TEST_PG_URL = process.env.TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const migrationsDir = new URL('../../control-plane/src/db/migrations/', import.meta.url);

/** Named after a digest of the migrations, so a template is built once per schema and reused. */
export const TEMPLATE_DB = `vp_tpl_${createHash('sha256')
  .update(
    readdirSync(migrationsDir)
      .sort()
      .map((file) => readFileSync(new URL(file, migrationsDir), 'utf8'))
      .join('\0'),
  )
  .digest('hex')
  .slice(0, 12)}`;

export function databaseUrl(name: string): string {
  const url = new URL(TEST_PG_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

/** One statement on the test server's default database, or on the database at `url`. */
export async function adminQuery(sql: string, params: unknown[] = [], url = TEST_PG_URL): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await client.query(sql, params);
  } finally {
    await client.end();
  }
}

/** A fresh database cloned from the migrated template; dropped again by the returned function. */
export async function createTestDatabase(): Promise<{ name: string; url: string; drop: () => Promise<void> }> {
  const name = `vp_t_${process.pid}_${randomBytes(4).toString('hex')}`;
  await adminQuery(`create database ${name} template ${TEMPLATE_DB}`);
  return {
    name,
    url: databaseUrl(name),
    drop: async () => void (await adminQuery(`drop database if exists ${name} with (force)`)),
  };
}

/** An empty database with no schema at all, for first-start tests. */
export async function createEmptyDatabase(): Promise<{ name: string; url: string; drop: () => Promise<void> }> {
  const name = `vp_e_${process.pid}_${randomBytes(4).toString('hex')}`;
  await adminQuery(`create database ${name}`);
  return {
    name,
    url: databaseUrl(name),
    drop: async () => void (await adminQuery(`drop database if exists ${name} with (force)`)),
  };
}
