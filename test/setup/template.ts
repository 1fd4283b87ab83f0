// tap `before` step: migrate one template database per schema version; every test file clones it.
import { initORM, migrate } from '../../control-plane/src/db/orm.ts';
import { adminQuery, databaseUrl, TEMPLATE_DB } from '../helpers/db.ts';

const exists = await adminQuery('select 1 from pg_database where datname = $1', [TEMPLATE_DB]);
if (exists.rowCount === 0) {
  const building = `${TEMPLATE_DB}_build_${process.pid}`;
  await adminQuery(`create database ${building}`);
  const orm = await initORM(databaseUrl(building));
  await migrate(orm);
  await orm.close();
  // Renamed into place only when complete, so a concurrent run never clones a half-built template.
  await adminQuery(`alter database ${building} rename to ${TEMPLATE_DB}`).catch(() =>
    adminQuery(`drop database ${building}`),
  );
}
