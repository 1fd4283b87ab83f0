// The credit ledger: the credit_transactions table (append-only) and its running sum per workspace, the
// credit_balances table. Every movement appends its row and adds it to the balance in one statement.
import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from '../db/sql.ts';
import type { CreditKind } from './credit-transaction.entity.ts';

export interface TransactionRow {
  id: string;
  kind: CreditKind;
  amount_cents: string;
  balance_after: string;
  description: string;
  job_id: string | null;
  metadata: Record<string, unknown>;
  created_at: string | Date;
}

/** A date range of the ledger: from (inclusive), before (exclusive). */
export interface LedgerRange {
  from?: Date;
  before?: Date;
}

/** A workspace's balance row, if it has one (none before its first transaction). */
export async function balanceRow(
  em: EntityManager,
  workspaceId: string,
): Promise<{ balance_cents: string } | undefined> {
  const [row] = await query<{ balance_cents: string }>(
    em,
    'select balance_cents from credit_balances where workspace_id = ?',
    [workspaceId],
  );
  return row;
}

/**
 * Seconds and epochs summed over the type's `limit` most recent charges that ran both: the workspace's (null:
 * every workspace's).
 */
export async function recentChargeTimes(
  em: EntityManager,
  gpuType: string,
  workspaceId: string | null,
  limit: number,
): Promise<{ seconds: number | null; epochs: number | null } | undefined> {
  const [row] = await query<{ seconds: number | null; epochs: number | null }>(
    em,
    `select sum(seconds) as seconds, sum(epochs) as epochs from (
           select (metadata->>'seconds')::float8 as seconds, (metadata->>'epochs')::float8 as epochs
             from credit_transactions
            where kind = 'charge' and metadata->>'gpuType' = ? and (?::varchar is null or workspace_id = ?)
              and (metadata->>'seconds')::float8 > 0 and (metadata->>'epochs')::float8 > 0
            order by created_at desc limit ${limit}) recent`,
    [gpuType, workspaceId, workspaceId],
  );
  return row;
}

/** The amount of the job's charge in the workspace, if it was charged. */
export async function jobChargeCents(
  em: EntityManager,
  jobId: string,
  workspaceId: string,
): Promise<string | undefined> {
  const [charge] = await query<{ amount_cents: string }>(
    em,
    "select amount_cents from credit_transactions where job_id = ? and kind = 'charge' and workspace_id = ?",
    [jobId, workspaceId],
  );
  return charge?.amount_cents;
}

/**
 * Appends one ledger row and adds it to the balance, in one statement; the new balance, or undefined when the job
 * already has a row of this kind.
 */
export async function appendTransaction(
  em: EntityManager,
  row: {
    id: string;
    workspaceId: string;
    kind: CreditKind;
    amountCents: number;
    description: string;
    jobId: string | null;
    metadata: string;
  },
): Promise<string | undefined> {
  const [balance] = await query<{ balance_cents: string }>(
    em,
    `with tx as (
         insert into credit_transactions (id, workspace_id, kind, amount_cents, description, job_id, metadata, created_at)
         values (?, ?, ?, ?, ?, ?, ?::jsonb, clock_timestamp())
         on conflict (job_id, kind) where job_id is not null do nothing
         returning workspace_id, amount_cents)
       insert into credit_balances (workspace_id, balance_cents, updated_at)
       select workspace_id, amount_cents, clock_timestamp() from tx
       on conflict (workspace_id) do update
         set balance_cents = credit_balances.balance_cents + excluded.balance_cents, updated_at = excluded.updated_at
       returning balance_cents`,
    [row.id, row.workspaceId, row.kind, row.amountCents, row.description, row.jobId, row.metadata],
  );
  return balance?.balance_cents;
}

/** Whether the transaction is the workspace's. */
export async function isWorkspaceTransaction(em: EntityManager, id: string, workspaceId: string): Promise<boolean> {
  const [known] = await query(em, 'select 1 from credit_transactions where id = ? and workspace_id = ?', [
    id,
    workspaceId,
  ]);
  return known !== undefined;
}

function rangeSql(range: LedgerRange): { sql: string; params: unknown[] } {
  let sql = '';
  const params: unknown[] = [];
  if (range.from) {
    sql += ' and created_at >= ?';
    params.push(range.from);
  }
  if (range.before) {
    sql += ' and created_at < ?';
    params.push(range.before);
  }
  return { sql, params };
}

/**
 * The workspace's transactions in the range, newest first, each with the balance after it: after the cursor
 * transaction (keyset on created_at, id) when given, skipping `offset`, at most `limit`.
 */
export async function ledgerPage(
  em: EntityManager,
  workspaceId: string,
  range: LedgerRange,
  cursor: string | undefined,
  limit: number,
  offset: number,
): Promise<TransactionRow[]> {
  const { sql, params } = rangeSql(range);
  const after = cursor ? 'and (created_at, id) < (select created_at, id from credit_transactions where id = ?)' : '';
  return query<TransactionRow>(
    em,
    `with ledger as (
         select id, kind, amount_cents, description, job_id, metadata, created_at,
                sum(amount_cents) over (order by created_at, id) as balance_after
           from credit_transactions where workspace_id = ?)
       select * from ledger where true ${sql} ${after} order by created_at desc, id desc limit ? offset ?`,
    [workspaceId, ...params, ...(cursor ? [cursor] : []), limit, offset],
  );
}

/** How many transactions the workspace has in the range. */
export async function ledgerCount(em: EntityManager, workspaceId: string, range: LedgerRange): Promise<number> {
  const { sql, params } = rangeSql(range);
  const [count] = await query<{ count: string }>(
    em,
    `select count(*) as count from credit_transactions where workspace_id = ? ${sql}`,
    [workspaceId, ...params],
  );
  return Number(count!.count);
}
