// Issue 35's rule: a table's SQL lives in its `*.store.ts` (or its lifecycle module, the one writer of its status),
// never in services, routes or jobs. Every file elsewhere that calls query() or execute() fails, named with its count.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import t from 'tap';

const ROOT = join(import.meta.dirname, '..', 'control-plane', 'src');
/**
 * Where SQL belongs besides stores: the lifecycle modules (a training run's is run-status.ts), the query helper,
 * migrations and the database's own set-up, and the backup, whose dump and load read and write every table by name
 * in one snapshot on a connection of its own (no one table's SQL).
 */
const SQL_HOMES = [/\.store\.ts$/, /-lifecycle\.ts$/, /^training\/run-status\.ts$/, /^db\//, /^backup\//];
/** A call of db/sql.ts's query() or of a connection's execute(). */
const SQL_CALL = /\bquery(?:<(?:[^<>()]|<[^<>()]*>)*>)?\(|\.execute(?:<(?:[^<>()]|<[^<>()]*>)*>)?\(/g;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

const found = new Map<string, number>();
let callsInHomes = 0;
for (const file of sourceFiles(ROOT)) {
  const name = relative(ROOT, file);
  const calls = readFileSync(file, 'utf8').match(SQL_CALL)?.length ?? 0;
  if (SQL_HOMES.some((home) => home.test(name))) callsInHomes += calls;
  else if (calls > 0) found.set(name, calls);
}

t.test('no SQL outside stores, lifecycle modules, db/ and backup/', async (t) => {
  t.ok(callsInHomes > 100, `the scan reads the sources: ${callsInHomes} SQL calls in stores and the other homes`);
  t.same(Object.fromEntries(found), {}, "files that run SQL (calls each): move it into its table's store");
});

t.test('the rule sees SQL where it is', async (t) => {
  // The pattern itself: what it must catch and what it must not.
  for (const text of [
    "query(em, 'select 1')",
    'query<Row>(em, `update jobs`)',
    'query<Array<{ id: string }>>(em, `select id from jobs`)',
    "em.getConnection().execute('select 1')",
  ])
    t.match(text, new RegExp(SQL_CALL.source), text);
  for (const text of ['request.query', 'ctx.query.limit', 'queryString('])
    t.notMatch(text, new RegExp(SQL_CALL.source), text);
});
