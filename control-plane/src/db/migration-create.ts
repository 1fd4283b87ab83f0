// `npm run migration:create -- NAME [--blank]`: diffs the entities against a scratch database migrated to the
// current head, writes the next migration beside the others and registers it in migrations/index.ts. With
// --blank it writes an empty one, for hand-written SQL the diff does not see (functions, triggers).
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import pg from 'pg';
import { initORM, migrate } from './orm.ts';

const blank = process.argv.includes('--blank');
const name = process.argv
  .slice(2)
  .find((arg) => arg !== '--blank')
  ?.replace(/[^A-Za-z0-9_]/g, '_');
if (!name) {
  console.error('usage: npm run migration:create -- NAME [--blank]');
  process.exit(2);
}
const serverUrl = process.env.TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const scratch = `vp_migration_${randomBytes(4).toString('hex')}`;
const admin = new pg.Client({ connectionString: serverUrl });
await admin.connect();
await admin.query(`create database ${scratch}`);
const dir = new URL('./migrations/', import.meta.url);
try {
  const url = new URL(serverUrl);
  url.pathname = `/${scratch}`;
  const orm = await initORM(url.toString());
  await migrate(orm);
  const result = await orm.migrator.create(new URL('.', dir).pathname, blank, false, name);
  await orm.close();
  if (!result.fileName) {
    console.log('entities match the migrations; nothing to write');
  } else {
    const className = result.fileName.replace(/\.ts$/, '');
    // The diff does not see the hand-written rate-limit function and would recreate it in every down().
    const file = new URL(result.fileName, dir);
    writeFileSync(
      file,
      readFileSync(file, 'utf8').replace(
        /\n\s*this\.addSql\(`create or replace function "rate_limit_take"[\s\S]*?`\);/,
        '',
      ),
    );
    const indexFile = new URL('index.ts', dir);
    const index = readFileSync(indexFile, 'utf8')
      .replace(
        /(\n\/\*\*[^\n]*\n)?(export const migrations)/,
        `import { ${className} } from './${className}.ts';\n$1$2`,
      )
      .replace(/\];\s*$/, `  { name: '${className}', class: ${className} },\n];\n`);
    writeFileSync(indexFile, index);
    console.log(`wrote control-plane/src/db/migrations/${result.fileName}; review it, then commit`);
  }
} finally {
  await admin.query(`drop database if exists ${scratch} with (force)`);
  await admin.end();
}
