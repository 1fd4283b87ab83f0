// The workflows table: the statements the Workflow entity does not make (the versioned save).
import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from '../db/sql.ts';

/**
 * Saves the workflow if it is still at `version`, one conditional statement: of two saves sent with the same
 * version, PostgreSQL lets exactly one match. The new version, or undefined when none matched.
 */
export async function saveWorkflowAtVersion(
  em: EntityManager,
  id: string,
  version: number,
  changes: { name: string; graph: unknown; updatedAt: Date },
): Promise<number | undefined> {
  const [updated] = await query<{ version: number }>(
    em,
    'update workflows set name = ?, graph = ?::jsonb, version = version + 1, updated_at = ? where id = ? and version = ? returning version',
    [changes.name, JSON.stringify(changes.graph), changes.updatedAt, id, version],
  );
  return updated?.version;
}

/** The workflow's current version, if it exists. */
export async function workflowVersion(em: EntityManager, id: string): Promise<number | undefined> {
  const [current] = await query<{ version: number }>(em, 'select version from workflows where id = ?', [id]);
  return current?.version;
}
