// Aggregates of a deployment's recorded requests (deployment_requests) and of its revisions' live periods, for
// GET .../metrics. Latency percentiles are PostgreSQL's percentile_cont over the recorded latencies.
import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from '../db/sql.ts';

/** Status codes counted as errors: the server's failures and the platform's 502, 503 and 504 (not the caller's 4xx). */
const ERROR = 'status >= 500';

export interface RequestSummary {
  total: number;
  errors: number;
  /** Null without requests. */
  avg: number | null;
  p50: number | null;
  p95: number | null;
  p99: number | null;
}

export async function requestSummary(
  em: EntityManager,
  deploymentId: string,
  from: Date,
  to: Date,
): Promise<RequestSummary> {
  const [row] = await query<RequestSummary>(
    em,
    `select count(*)::int as total, (count(*) filter (where ${ERROR}))::int as errors, avg(latency_ms) as avg,
            percentile_cont(0.5) within group (order by latency_ms) as p50,
            percentile_cont(0.95) within group (order by latency_ms) as p95,
            percentile_cont(0.99) within group (order by latency_ms) as p99
     from deployment_requests where deployment_id = ? and at > ? and at <= ?`,
    [deploymentId, from, to],
  );
  return row!;
}

export interface Bucket {
  start: Date;
  requests: number;
  errors: number;
  p50: number | null;
  p95: number | null;
  /** Revisions that took traffic at some point of the bucket. */
  instances: number;
}

/** Every bucket of `stepSeconds` (aligned to the epoch) from the one holding `from` to the one holding `to`. */
export async function requestBuckets(
  em: EntityManager,
  deploymentId: string,
  from: Date,
  to: Date,
  stepSeconds: number,
): Promise<Bucket[]> {
  return query<Bucket>(
    em,
    `with buckets as (
       select start, start + make_interval(secs => ?) as finish
       from generate_series(date_bin(make_interval(secs => ?), ?::timestamptz, 'epoch'), ?::timestamptz, make_interval(secs => ?)) as start)
     select b.start, count(r.id)::int as requests, (count(r.id) filter (where r.${ERROR}))::int as errors,
            percentile_cont(0.5) within group (order by r.latency_ms) as p50,
            percentile_cont(0.95) within group (order by r.latency_ms) as p95,
            (select count(*)::int from deployment_revisions v
             where v.deployment_id = ? and v.live_at < b.finish
               and coalesce(v.retired_at, case when v.state = 'live' then 'infinity'::timestamptz else v.live_at end) >= b.start) as instances
     from buckets b left join deployment_requests r on r.deployment_id = ? and r.at >= b.start and r.at < b.finish and r.at > ? and r.at <= ?
     group by b.start, b.finish order by b.start`,
    [stepSeconds, stepSeconds, from, to, stepSeconds, deploymentId, deploymentId, from, to],
  );
}

export interface HourRow {
  requests: number;
  errors: number;
  p95: number;
}

/** Hours of the last day with requests, oldest first. */
export async function requestHours(em: EntityManager, deploymentId: string, to: Date): Promise<HourRow[]> {
  return query<HourRow>(
    em,
    `select count(*)::int as requests, (count(*) filter (where ${ERROR}))::int as errors, percentile_cont(0.95) within group (order by latency_ms) as p95
     from deployment_requests where deployment_id = ? and at > ?::timestamptz - interval '24 hours' and at <= ?
     group by date_trunc('hour', at) order by date_trunc('hour', at)`,
    [deploymentId, to, to],
  );
}
