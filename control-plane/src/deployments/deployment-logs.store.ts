// A deployment's log, newest first: its events (deployment_events) and the requests it answered (deployment_requests)
// as one list, paged by position (time, source, id) so rows inserted meanwhile never shift a page.
import type { EntityManager } from '@mikro-orm/postgresql';
import { pgArray, query } from '../db/sql.ts';
import type { Severity } from './deployment-events.store.ts';

/** Where a page ends: the last row's exact time (PostgreSQL's text, microseconds kept), source and id. */
export interface LogPosition {
  at: string;
  source: 'e' | 'r';
  id: string;
}

export interface LogRow extends LogPosition {
  time: Date;
  severity: Severity;
  message: string;
  method: string | null;
  path: string | null;
  status: number | null;
  latencyMs: number | null;
  userAgent: string | null;
}

/** A request's severity: the server failing is an error, the caller's mistake a warning. */
const REQUEST_SEVERITY = `case when status >= 500 then 'ERROR' when status >= 400 then 'WARNING' else 'INFO' end`;

export async function logPage(
  em: EntityManager,
  deploymentId: string,
  options: { severities: readonly Severity[]; search?: string; after?: LogPosition; limit: number },
): Promise<LogRow[]> {
  const severities = pgArray(options.severities);
  const after = options.after;
  // Each side filters by the position itself, so both walk their (deployment_id, at) index; the table aliases keep
  // ORDER BY on the columns, not on the text of `at` selected under the same name.
  const before = (source: 'e' | 'r') =>
    after ? `and (${source}.at, '${source}'::text, ${source}.id) < (?::timestamptz, ?::text, ?::bigint)` : '';
  const position = after ? [after.at, after.source, after.id] : [];
  // A search is a case-insensitive substring of the entry's text (a request's is "METHOD path status"): strpos, so
  // the user's % and _ are plain characters.
  const search = options.search?.toLowerCase();
  const matches = (text: string) => (search === undefined ? '' : `and strpos(lower(${text}), ?) > 0`);
  const searched = search === undefined ? [] : [search];
  return query<LogRow>(
    em,
    `select * from (
       (select at::text as at, 'e' as source, id::text as id, at as time, severity, message,
               null::varchar as method, null::varchar as path, null::int as status, null::real as "latencyMs", null::varchar as "userAgent"
        from deployment_events e where deployment_id = ? and severity = any(?::text[]) ${matches('e.message')} ${before('e')}
        order by e.at desc, e.id desc limit ?)
       union all
       (select at::text, 'r', id::text, at, ${REQUEST_SEVERITY}, '', method, path, status, latency_ms, user_agent
        from deployment_requests r where deployment_id = ? and ${REQUEST_SEVERITY} = any(?::text[])
          ${matches(`r.method || ' ' || r.path || ' ' || r.status`)} ${before('r')}
        order by r.at desc, r.id desc limit ?)
     ) entries order by time desc, source desc, id::bigint desc limit ?`,
    [
      deploymentId,
      severities,
      ...searched,
      ...position,
      options.limit,
      deploymentId,
      severities,
      ...searched,
      ...position,
      options.limit,
      options.limit,
    ],
  );
}
