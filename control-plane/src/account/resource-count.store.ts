// The workspace_resource_counts table (kept by triggers, see ResourceCount), read with each workspace's
// credit_balances row for the account summary.
import type { EntityManager } from '@mikro-orm/postgresql';
import { pgArray } from '../db/sql.ts';
import type { COUNTED_RESOURCES } from './account.schemas.ts';

export interface FigureRow {
  workspace_id: string;
  kind: (typeof COUNTED_RESOURCES)[number] | null;
  total: number | null;
  balance_cents: string | null;
}

/** One row per kept count (or one with kind null), each with the workspace's balance (null: no credit row, 0). */
const FIGURES_SQL = `
  select w.id as workspace_id, c.kind, c.total, b.balance_cents
  from unnest(?::text[]) as w(id)
  left join workspace_resource_counts c on c.workspace_id = w.id
  left join credit_balances b on b.workspace_id = w.id`;

/** The kept counts and the credit balance of these workspaces (each once), outside any transaction. */
export async function figureRows(em: EntityManager, workspaceIds: string[]): Promise<FigureRow[]> {
  return em.getConnection().execute<FigureRow[]>(FIGURES_SQL, [pgArray(workspaceIds)]);
}
