// Issue 35's rule: a table's SQL lives in its `*.store.ts` (or its lifecycle module, the one writer of its status),
// never in services, routes or jobs. Files that still hold SQL are listed below with how many statements they run;
// the list may only shrink: a new file with SQL fails, as does a count that grows, and a count that fell must be
// lowered here so that what was moved stays moved.
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

const NOT_YET_MOVED: Record<string, number> = {
  'auth/authenticator.ts': 1,
  'deployments/deployment-changes.ts': 1,
  'deployments/deployment.job.ts': 1,
  'deployments/deployment.service.ts': 1,
  'embeddings/chunk-output.ts': 1,
  'embeddings/embedding-chunk.job.ts': 1,
  'exports/export.service.ts': 1,
  'health/doctor-checks.ts': 3,
  'health/doctor.ts': 1,
  'health/health.routes.ts': 1,
  'hosts/host.service.ts': 1,
  'hosts/worker-key-lookup.ts': 2,
  'jobs/job-runner.ts': 1,
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

const found = new Map<string, number>();
for (const file of sourceFiles(ROOT)) {
  const name = relative(ROOT, file);
  if (SQL_HOMES.some((home) => home.test(name))) continue;
  const calls = readFileSync(file, 'utf8').match(SQL_CALL)?.length ?? 0;
  if (calls > 0) found.set(name, calls);
}

t.test('no SQL outside stores, lifecycle modules and db/, but for the files not yet moved', async (t) => {
  for (const [name, calls] of found) {
    const allowed = NOT_YET_MOVED[name];
    t.ok(allowed !== undefined, `${name} runs SQL (${calls} calls): move it into its table's store`);
    if (allowed !== undefined)
      t.ok(calls <= allowed, `${name}: ${calls} SQL calls, at most ${allowed} (move new SQL into a store)`);
  }
});

t.test('the list of files not yet moved is current', async (t) => {
  for (const [name, allowed] of Object.entries(NOT_YET_MOVED)) {
    const calls = found.get(name) ?? 0;
    t.equal(
      calls,
      allowed,
      `${name}: ${calls} SQL calls now; set its entry to ${calls}${calls === 0 ? ' (remove it)' : ''}`,
    );
  }
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
