// The backup_runs table: each `vpctl backup` that finished, for the metrics' age of the last complete one.
import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from '../db/sql.ts';

export async function recordBackupRun(em: EntityManager, run: { complete: boolean; dir: string }): Promise<void> {
  await query(em, 'insert into backup_runs (complete, dir) values (?, ?)', [run.complete, run.dir]);
}

/** When the last complete backup finished; null: none yet. */
export async function lastCompleteBackup(em: EntityManager): Promise<Date | null> {
  const [row] = await query<{ at: Date | null }>(em, 'select max(finished_at) as at from backup_runs where complete');
  return row?.at ?? null;
}
