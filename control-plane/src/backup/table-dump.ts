// The database part of a backup: every table's rows as PostgreSQL's own text values, read in one snapshot
// and written back with parameters cast to each column's type, so every type round-trips exactly. The schema
// is not dumped: it is what the backup's migrations make (schema changes only come from migrations).
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { Conflict, Invalid } from '../http/errors.ts';
import { FOLDER_MODE, TABLES_DIR, type SequenceState, type TableDump } from './backup-format.ts';
import { LineFile, readLines } from './hashed-files.ts';
import type { Progress } from './progress.ts';

/**
 * Tables of passing state, not data: a restore leaves them empty. (schema_migrations is the backup's
 * migration list instead; replicas record themselves when they start; rate-limit windows last a minute; relayed
 * folder messages, moments.)
 */
export const NOT_DUMPED = new Set([
  'schema_migrations',
  'control_plane_replicas',
  'rate_limit_windows',
  'host_folder_relay',
]);

const FETCH_ROWS = 1000;
/** Parameters per INSERT stay well under PostgreSQL's 65535, and statements under a few MB of text. */
const INSERT_PARAMETERS = 30_000;
const INSERT_TEXT_BYTES = 8 * 2 ** 20;

/** A client that hands every value back as PostgreSQL's text, unparsed. */
export function textClient(url: string): pg.Client {
  return new pg.Client({ connectionString: url, types: { getTypeParser: () => (value: string) => value } });
}

/** What text values are written and read under, as pg_dump sets it; for the current transaction. */
export async function useTextSettings(client: pg.Client): Promise<void> {
  await client.query(
    "set local datestyle = 'ISO'; set local intervalstyle = 'postgres'; set local extra_float_digits = 3; set local timezone = 'UTC'",
  );
}

/** The current schema's tables, by name, with their oids. */
export async function listTables(client: pg.Client): Promise<Array<{ oid: string; name: string }>> {
  const { rows } = await client.query<{ oid: string; name: string }>(
    `select c.oid, c.relname as name from pg_class c
     where c.relnamespace = current_schema()::regnamespace and c.relkind in ('r', 'p') and not c.relispartition order by c.relname`,
  );
  return rows;
}

/** Stored columns (generated ones are computed again) with their types, in table order. */
async function columnsOf(client: pg.Client, oid: string): Promise<Array<{ name: string; type: string }>> {
  const { rows } = await client.query<{ name: string; type: string }>(
    `select attname as name, format_type(atttypid, null) as type from pg_attribute
     where attrelid = $1 and attnum > 0 and not attisdropped and attgenerated = '' order by attnum`,
    [oid],
  );
  return rows;
}

/** Dumps every table but NOT_DUMPED into `<dir>/database/`; runs in the caller's snapshot transaction. */
export async function dumpTables(client: pg.Client, dir: string, progress: Progress): Promise<TableDump[]> {
  await mkdir(join(dir, TABLES_DIR), { mode: FOLDER_MODE });
  const dumps: TableDump[] = [];
  for (const table of await listTables(client)) {
    if (NOT_DUMPED.has(table.name)) continue;
    const columns = (await columnsOf(client, table.oid)).map((column) => column.name);
    const file = `${TABLES_DIR}/${table.name}.jsonl.gz`;
    const out = new LineFile(join(dir, file), { gzip: true });
    let rows = 0;
    await client.query(
      `declare dump_rows no scroll cursor for select ${columns.map((name) => client.escapeIdentifier(name)).join(', ')} from ${client.escapeIdentifier(table.name)}`,
    );
    for (;;) {
      const batch = await client.query<unknown[]>({ text: `fetch ${FETCH_ROWS} from dump_rows`, rowMode: 'array' });
      if (batch.rows.length === 0) break;
      await out.write(batch.rows.map((row) => `${JSON.stringify(row)}\n`).join(''));
      rows += batch.rows.length;
    }
    await client.query('close dump_rows');
    const { sha256 } = await out.close();
    dumps.push({ name: table.name, columns, rows, file, sha256 });
    if (rows > 0) progress(`database: ${table.name}, ${rows.toLocaleString('en-US')} rows`);
  }
  return dumps;
}

/** The sequences' positions (of the dumped tables), so ids issued after a restore follow on. */
export async function sequenceStates(client: pg.Client): Promise<SequenceState[]> {
  const { rows } = await client.query<{ name: string; owner: string | null }>(
    `select s.relname as name, t.relname as owner from pg_class s
     left join pg_depend d on d.classid = 'pg_class'::regclass and d.objid = s.oid and d.deptype in ('a', 'i')
     left join pg_class t on t.oid = d.refobjid
     where s.relkind = 'S' and s.relnamespace = current_schema()::regnamespace order by s.relname`,
  );
  const states: SequenceState[] = [];
  for (const { name, owner } of rows) {
    if (owner !== null && NOT_DUMPED.has(owner)) continue;
    const [state] = (
      await client.query<{ last_value: string; is_called: string }>(
        `select last_value, is_called from ${client.escapeIdentifier(name)}`,
      )
    ).rows;
    states.push({ name, lastValue: state.last_value, isCalled: state.is_called === 't' });
  }
  return states;
}

/**
 * Loads the dumped rows into the (empty) tables and sets the sequences, in one transaction. Triggers and
 * foreign-key checks are off while it runs (session_replication_role = replica): the rows are consistent
 * already, and the counting triggers must not count them again.
 */
export async function loadTables(
  client: pg.Client,
  dir: string,
  dump: { tables: TableDump[]; sequences: SequenceState[] },
  progress: Progress,
): Promise<number> {
  const present = new Map((await listTables(client)).map((table) => [table.name, table.oid]));
  let total = 0;
  await client.query('begin');
  try {
    await client.query('set local session_replication_role = replica').catch((error: unknown) => {
      throw Conflict(
        `restoring needs a database role that may set session_replication_role (a superuser, or on PostgreSQL 15+: GRANT SET ON PARAMETER session_replication_role TO <role>): ${(error as Error).message}`,
      );
    });
    await useTextSettings(client);
    for (const table of dump.tables) {
      const oid = present.get(table.name);
      if (!oid) throw Invalid(`the backup has a table "${table.name}" that its migrations do not create here`);
      const types = new Map((await columnsOf(client, oid)).map((column) => [column.name, column.type]));
      const missing = table.columns.find((column) => !types.has(column));
      if (missing)
        throw Invalid(
          `the backup's table "${table.name}" has a column "${missing}" that its migrations do not create here`,
        );
      const insert = new BatchInsert(
        client,
        table.name,
        table.columns.map((name) => ({ name, type: types.get(name)! })),
      );
      for await (const line of readLines(join(dir, table.file), { gzip: true })) {
        const row = JSON.parse(line) as Array<string | null>;
        if (row.length !== table.columns.length)
          throw Invalid(`${table.file}: a row has ${row.length} values for ${table.columns.length} columns`);
        await insert.add(row);
      }
      await insert.flush();
      if (insert.rows !== table.rows)
        throw Invalid(`${table.file}: ${insert.rows} rows where the manifest says ${table.rows}`);
      total += insert.rows;
      if (insert.rows > 0) progress(`database: ${table.name}, ${insert.rows.toLocaleString('en-US')} rows`);
    }
    for (const sequence of dump.sequences) {
      await client.query('select setval($1::regclass, $2::bigint, $3::boolean)', [
        client.escapeIdentifier(sequence.name),
        sequence.lastValue,
        sequence.isCalled,
      ]);
    }
    await client.query('commit');
  } catch (error) {
    await client.query('rollback').catch(() => undefined);
    throw error;
  }
  return total;
}

/** Multi-row INSERTs of text values, each cast to its column's type (its input function parses it as it was written). */
class BatchInsert {
  private readonly client: pg.Client;
  private readonly prefix: string;
  private readonly casts: string[];
  private readonly rowsPerInsert: number;
  private pending: Array<string | null> = [];
  private pendingRows = 0;
  private pendingBytes = 0;
  rows = 0;

  constructor(client: pg.Client, table: string, columns: Array<{ name: string; type: string }>) {
    this.client = client;
    this.prefix = `insert into ${client.escapeIdentifier(table)} (${columns.map((column) => client.escapeIdentifier(column.name)).join(', ')}) values `;
    this.casts = columns.map((column) => column.type);
    this.rowsPerInsert = Math.max(1, Math.floor(INSERT_PARAMETERS / columns.length));
  }

  async add(row: Array<string | null>): Promise<void> {
    this.pending.push(...row);
    this.pendingRows++;
    this.pendingBytes += row.reduce((sum, value) => sum + (value?.length ?? 0), 0);
    if (this.pendingRows >= this.rowsPerInsert || this.pendingBytes >= INSERT_TEXT_BYTES) await this.flush();
  }

  async flush(): Promise<void> {
    if (this.pendingRows === 0) return;
    const width = this.casts.length;
    const tuples = Array.from(
      { length: this.pendingRows },
      (_, row) => `(${this.casts.map((type, column) => `$${row * width + column + 1}::${type}`).join(', ')})`,
    );
    await this.client.query(this.prefix + tuples.join(', '), this.pending);
    this.rows += this.pendingRows;
    this.pending = [];
    this.pendingRows = 0;
    this.pendingBytes = 0;
  }
}
