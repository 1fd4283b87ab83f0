// The deployment_requests table's writes: every request a deployment answered, through the platform's predict or its
// service URL. Rows are queued in memory and inserted in batches, off the requests' path; close() writes what is left.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import { BatchWriter } from '../db/batch-writer.ts';
import { query } from '../db/sql.ts';

export interface RecordedRequest {
  deploymentId: string;
  at: Date;
  method: string;
  path: string;
  status: number;
  latencyMs: number;
  requestBytes: number;
  responseBytes: number;
  userAgent: string | null;
  /** proxy: POST /api/deployments/{owner}/{deployment}/predict; service: the deployment's service URL. */
  via: 'proxy' | 'service';
}

/** The columns and their types (the VALUES list of an INSERT … SELECT is typed by them, not by the table). */
const COLUMNS = {
  deployment_id: 'varchar',
  at: 'timestamptz',
  method: 'varchar',
  path: 'varchar',
  status: 'smallint',
  latency_ms: 'real',
  request_bytes: 'bigint',
  response_bytes: 'bigint',
  user_agent: 'varchar',
  via: 'varchar',
};
const NAMES = Object.keys(COLUMNS).join(', ');
const TUPLE = `(${Object.values(COLUMNS)
  .map((type) => `?::${type}`)
  .join(', ')})`;
/** Rows per INSERT (10 parameters each, far under PostgreSQL's 65,535). */
const BATCH_ROWS = 500;
/** Past this many queued rows (the database down for long), the oldest are dropped and counted in the log. */
const MAX_QUEUED = 100_000;

export class RequestRecorder extends BatchWriter<RecordedRequest> {
  constructor(fork: () => EntityManager, log: Logger) {
    super({
      fork,
      log,
      insert: insertRequests,
      batchRows: BATCH_ROWS,
      maxQueued: MAX_QUEUED,
      what: 'deployment request records',
    });
  }

  override record(request: RecordedRequest): void {
    super.record({
      ...request,
      path: request.path.slice(0, 512),
      userAgent: request.userAgent?.slice(0, 512) ?? null,
    });
  }
}

async function insertRequests(em: EntityManager, rows: RecordedRequest[]): Promise<void> {
  const values = rows.flatMap((row) => [
    row.deploymentId,
    row.at,
    row.method,
    row.path,
    row.status,
    row.latencyMs,
    row.requestBytes,
    row.responseBytes,
    row.userAgent,
    row.via,
  ]);
  // A deployment deleted meanwhile has no rows to keep: its requests are skipped, not an error.
  await query(
    em,
    `insert into deployment_requests (${NAMES})
     select v.* from (values ${rows.map(() => TUPLE).join(', ')}) as v(${NAMES})
     where exists (select 1 from deployments d where d.id = v.deployment_id)`,
    values,
  );
}
