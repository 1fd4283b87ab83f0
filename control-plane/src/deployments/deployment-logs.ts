// GET .../logs: a page of the deployment's log and the opaque token of the next one.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import { Invalid } from '../http/errors.ts';
import type { PageTokens } from '../http/pagination.ts';
import { logPage, type LogPosition, type LogRow } from './deployment-logs.store.ts';
import { LOG_SEVERITIES, type DeploymentLogs, type LogsQuery } from './deployment-traffic.schemas.ts';

type Answer = z.input<typeof DeploymentLogs>;

export async function deploymentLogs(
  em: EntityManager,
  deploymentId: string,
  tokens: PageTokens,
  options: z.output<typeof LogsQuery>,
): Promise<Answer> {
  const after = options.pageToken === undefined ? undefined : position(tokens, deploymentId, options.pageToken);
  const rows = await logPage(em, deploymentId, {
    severities: options.severity ?? LOG_SEVERITIES,
    search: options.search,
    after,
    limit: options.limit + 1,
  });
  const page = rows.slice(0, options.limit);
  const last = page.at(-1);
  return {
    entries: page.map(entry),
    ...(rows.length > options.limit &&
      last && { nextPageToken: tokens.encode({ d: deploymentId, at: last.at, s: last.source, id: last.id }) }),
  };
}

/** The position a token names; 400 for a token of another deployment or not issued here. */
function position(tokens: PageTokens, deploymentId: string, token: string): LogPosition {
  const { d, at, s, id } = tokens.decode(token);
  if (
    d !== deploymentId ||
    typeof at !== 'string' ||
    (s !== 'e' && s !== 'r') ||
    typeof id !== 'string' ||
    !/^\d+$/.test(id)
  ) {
    throw Invalid("pageToken: is not a token of this deployment's logs");
  }
  return { at, source: s, id };
}

function entry(row: LogRow): Answer['entries'][number] {
  const timestamp = new Date(row.time).toISOString();
  if (row.source === 'e') return { timestamp, severity: row.severity, message: row.message };
  const latencyMs = Math.round(row.latencyMs! * 100) / 100;
  return {
    timestamp,
    severity: row.severity,
    message: `${row.method} ${row.path} ${row.status} ${Math.round(latencyMs)} ms`,
    httpRequest: {
      method: row.method!,
      url: row.path!,
      status: row.status!,
      latencyMs,
      ...(row.userAgent && { userAgent: row.userAgent }),
    },
  };
}
