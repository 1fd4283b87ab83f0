// GET .../metrics: the recorded requests of a range as the SDK's three answers (full, overview, sparkline).
import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import { requestBuckets, requestHours, requestSummary, type Bucket } from './deployment-metrics.store.ts';
import type { DeploymentMetrics, MetricRange, MetricsQuery } from './deployment-traffic.schemas.ts';

/** Each range's length and bucket size in seconds: 60 buckets for an hour, 72 for 6 h, 96 for a day, 168 for 7 d, 120 for 30 d. */
const RANGES: Record<MetricRange, { seconds: number; step: number }> = {
  '1h': { seconds: 3600, step: 60 },
  '6h': { seconds: 6 * 3600, step: 300 },
  '24h': { seconds: 86_400, step: 900 },
  '7d': { seconds: 7 * 86_400, step: 3600 },
  '30d': { seconds: 30 * 86_400, step: 6 * 3600 },
};

type Answer = z.input<typeof DeploymentMetrics>;
type Point = { timestamp: string; value: number };

const rate = (errors: number, total: number) => (total === 0 ? 0 : Math.round((errors / total) * 10_000) / 10_000);
const ms = (value: number | null) => (value === null ? 0 : Math.round(value * 100) / 100);
const series = (buckets: Bucket[], value: (bucket: Bucket) => number | null): Point[] =>
  buckets.flatMap((bucket) => {
    const v = value(bucket);
    return v === null ? [] : [{ timestamp: new Date(bucket.start).toISOString(), value: v }];
  });

export async function deploymentMetrics(
  em: EntityManager,
  deployment: { id: string; region: string },
  options: z.output<typeof MetricsQuery>,
): Promise<Answer> {
  const to = new Date();
  if (options.sparkline) {
    const hours = await requestHours(em, deployment.id, to);
    const total = hours.reduce((sum, hour) => sum + hour.requests, 0);
    const errors = hours.reduce((sum, hour) => sum + hour.errors, 0);
    const p95s = hours.map((hour) => hour.p95);
    return {
      requests24h: hours.map((hour) => hour.requests),
      totalRequests: total,
      errorRate: rate(errors, total),
      avgLatencyMs: ms(p95s.length === 0 ? null : p95s.reduce((sum, p95) => sum + p95, 0) / p95s.length),
    };
  }
  const range = RANGES[options.range];
  const from = new Date(to.getTime() - range.seconds * 1000);
  const [summary, buckets] = await Promise.all([
    requestSummary(em, deployment.id, from, to),
    requestBuckets(em, deployment.id, from, to, range.step),
  ]);
  const head = {
    deploymentId: deployment.id,
    region: deployment.region,
    timeRange: { start: from.toISOString(), end: to.toISOString() },
  };
  const requests = series(buckets, (bucket) => bucket.requests);
  const errors = series(buckets, (bucket) => bucket.errors);
  const latencyP95 = series(buckets, (bucket) => (bucket.p95 === null ? null : ms(bucket.p95)));
  const errorRate = rate(summary.errors, summary.total);
  if (options.view === 'overview') {
    return {
      ...head,
      summary: { totalRequests: summary.total, errorRate, p95LatencyMs: ms(summary.p95) },
      timeSeries: { requests, errors, latencyP95 },
    };
  }
  return {
    ...head,
    summary: {
      totalRequests: summary.total,
      errorCount: summary.errors,
      errorRate,
      avgLatencyMs: ms(summary.avg),
      p50LatencyMs: ms(summary.p50),
      p95LatencyMs: ms(summary.p95),
      p99LatencyMs: ms(summary.p99),
    },
    timeSeries: {
      requests,
      errors,
      latencyP50: series(buckets, (bucket) => (bucket.p50 === null ? null : ms(bucket.p50))),
      latencyP95,
      cpuUtilization: [],
      memoryUtilization: [],
      instanceCount: series(buckets, (bucket) => bucket.instances),
    },
  };
}
