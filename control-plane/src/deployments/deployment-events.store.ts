import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from '../db/sql.ts';

export const SEVERITIES = [
  'DEFAULT',
  'DEBUG',
  'INFO',
  'NOTICE',
  'WARNING',
  'ERROR',
  'CRITICAL',
  'ALERT',
  'EMERGENCY',
] as const;
export type Severity = (typeof SEVERITIES)[number];

/** Longest message kept per event (a server's log line is cut to this). */
const MAX_MESSAGE = 16 * 1024;

/** Adds to the deployment's log (GET .../logs): status changes, revisions, health failures, rollbacks, its servers' lines. */
export async function appendEvent(
  em: EntityManager,
  deploymentId: string,
  severity: Severity,
  message: string,
): Promise<void> {
  await query(em, 'insert into deployment_events (deployment_id, severity, message) values (?, ?, ?)', [
    deploymentId,
    severity,
    message.slice(0, MAX_MESSAGE),
  ]);
}
