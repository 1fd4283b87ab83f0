// Requests and responses of a deployment's traffic: predict, health, metrics and logs (the SDK's Deployments* types).
import { z } from 'zod';
import { tokenQuery } from '../http/pagination.ts';
import { SEVERITIES } from './deployment-events.store.ts';

export const DeploymentHealth = z.object({
  healthy: z.boolean(),
  status: z
    .number()
    .int()
    .optional()
    .meta({ description: "The status code of the server's GET /health (200 once its model is loaded)" }),
  latencyMs: z.number().meta({ description: 'Milliseconds the health call took, a wake from zero included' }),
  error: z.string().optional().meta({ description: 'Why it is not healthy' }),
});

export const METRIC_RANGES = ['1h', '6h', '24h', '7d', '30d'] as const;
export type MetricRange = (typeof METRIC_RANGES)[number];

export const MetricsQuery = z.object({
  range: z.enum(METRIC_RANGES).default('24h'),
  sparkline: z
    .stringbool()
    .default(false)
    .meta({ description: 'true: the compact dashboard summary of the last 24 hours (range and view ignored)' }),
  view: z.enum(['overview']).optional().meta({ description: 'overview: only requests, errors and P95 latency' }),
});

const Point = z.object({ timestamp: z.iso.datetime().meta({ description: 'Start of the bucket' }), value: z.number() });
const Series = z.array(Point);
const TimeRange = z.object({ start: z.iso.datetime(), end: z.iso.datetime() });
const ErrorRate = z
  .number()
  .meta({ description: 'Server errors (status 500 and above, 502/503/504 of the platform included) per request, 0-1' });

export const MetricsFull = z.object({
  deploymentId: z.string(),
  region: z.string(),
  timeRange: TimeRange,
  summary: z.object({
    totalRequests: z.number().int(),
    errorCount: z.number().int(),
    errorRate: ErrorRate,
    avgLatencyMs: z.number(),
    p50LatencyMs: z.number(),
    p95LatencyMs: z.number(),
    p99LatencyMs: z.number(),
  }),
  timeSeries: z.object({
    requests: Series,
    errors: Series,
    latencyP50: Series.meta({ description: 'Buckets with requests only' }),
    latencyP95: Series.meta({ description: 'Buckets with requests only' }),
    cpuUtilization: Series.meta({ description: 'Empty: worker agents do not report a server’s CPU use yet' }),
    memoryUtilization: Series.meta({ description: 'Empty: worker agents do not report a server’s memory use yet' }),
    instanceCount: Series.meta({
      description: 'Servers that took traffic during the bucket (2 while a replace switches over, 0 scaled to zero)',
    }),
  }),
});

export const MetricsOverview = z.object({
  deploymentId: z.string(),
  region: z.string(),
  timeRange: TimeRange,
  summary: z.object({ totalRequests: z.number().int(), errorRate: ErrorRate, p95LatencyMs: z.number() }),
  timeSeries: z.object({ requests: Series, errors: Series, latencyP95: Series }),
});

export const MetricsSparkline = z.object({
  requests24h: z
    .array(z.number().int())
    .meta({ description: 'Requests per hour over the last 24 hours, oldest first, hours without requests omitted' }),
  totalRequests: z.number().int(),
  errorRate: ErrorRate,
  avgLatencyMs: z.number().meta({ description: 'The average of the hourly P95 latencies' }),
});

export const DeploymentMetrics = z.union([MetricsFull, MetricsOverview, MetricsSparkline]);

export const LOG_SEVERITIES = SEVERITIES;
export const LogsQuery = tokenQuery(50, 200).extend({
  severity: z
    .string()
    .max(200)
    .optional()
    .transform((text, context) => {
      if (text === undefined || text.trim() === '') return undefined;
      const wanted = text.split(',').map((part) => part.trim().toUpperCase());
      const unknown = wanted.filter((part) => !(LOG_SEVERITIES as readonly string[]).includes(part));
      if (unknown.length > 0)
        context.addIssue({
          code: 'custom',
          message: `unknown severity ${unknown.join(', ')}; use ${LOG_SEVERITIES.join(', ')}`,
        });
      return wanted as Array<(typeof LOG_SEVERITIES)[number]>;
    })
    .meta({ description: `Comma-separated, any of ${LOG_SEVERITIES.join(', ')}; default all` }),

  search: z
    .string()
    .max(200)
    .optional()
    .transform((text) => (text?.trim() ? text.trim() : undefined))
    .meta({
      description:
        "Only entries whose text holds this, any case (an event's message; a request's method, path and status as in its message)",
    }),
});

export const LogEntry = z.object({
  timestamp: z.iso.datetime(),
  severity: z.enum(LOG_SEVERITIES),
  message: z.string(),
  httpRequest: z
    .object({
      method: z.string(),
      url: z.string(),
      status: z.number().int(),
      latencyMs: z.number(),
      userAgent: z.string().optional(),
    })
    .optional()
    .meta({ description: 'Set on the entry of a request the deployment answered' }),
});

export const DeploymentLogs = z.object({
  entries: z.array(LogEntry),
  nextPageToken: z
    .string()
    .optional()
    .meta({ description: 'Pass as pageToken for older entries; absent on the last page' }),
});
