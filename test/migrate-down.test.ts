// `vpctl migrate --down-to <migration>`, what `vision-appliance rollback` runs with the newer release before it starts
// the older one: the migrations applied after <migration> are reverted with their own `down`, and applying them again
// gives the same schema.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { migrations } from '../control-plane/src/db/migrations/index.ts';
import { adminQuery, createTestDatabase } from './helpers/db.ts';
import { runNode } from './helpers/run-node.ts';

const [previous, last] = migrations.slice(-2).map((migration) => migration.name);

t.test('down to the previous release, then up again', async (t) => {
  const db = await createTestDatabase();
  t.teardown(db.drop);
  const dataDir = mkdtempSync(join(tmpdir(), 'vp-migrate-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const vpctl = (...args: string[]) =>
    runNode(['installer/src/vpctl.ts', 'migrate', ...args], { DATABASE_URL: db.url, DATA_DIR: dataDir });
  // Columns, constraints and indexes: a migration may change any alone (a check constraint's list of values, an index).
  const columns = async () =>
    (
      (
        await adminQuery(
          `select table_name || '.' || column_name as c from information_schema.columns where table_schema = 'public'
         union all select conrelid::regclass || ' ' || conname || ' ' || pg_get_constraintdef(oid) from pg_constraint where connamespace = 'public'::regnamespace
         union all select indexdef from pg_indexes where schemaname = 'public'
         order by 1`,
          [],
          db.url,
        )
      ).rows as { c: string }[]
    ).map((row) => row.c);
  const applied = async () =>
    ((await adminQuery('select name from schema_migrations order by id', [], db.url)).rows as { name: string }[]).map(
      (row) => row.name,
    );
  const schema = await columns();

  const unknown = await vpctl('--down-to', 'Migration20990101000000_future');
  t.equal(unknown.code, 1);
  t.equal(
    unknown.stderr,
    `vpctl: Migration20990101000000_future is not an applied migration of this database (its last is ${last})\n`,
  );
  t.equal((await applied()).at(-1), last, 'nothing is reverted for a name not applied');

  const down = await vpctl('--down-to', previous);
  t.equal(down.code, 0, down.stderr);
  t.equal(down.stdout, `Reverted 1 migration:\n  ${last}\n`);
  t.equal((await applied()).at(-1), previous, 'the last migration is unlogged');
  t.notSame(await columns(), schema, "the last migration's down ran");

  const up = await vpctl();
  t.equal(up.stdout, `Applied 1 migration:\n  ${last}\n`);
  t.same(await columns(), schema, 'the same schema as before');
});
