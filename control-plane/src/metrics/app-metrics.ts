// The control plane's Prometheus metrics: one registry per control plane (a test process may run several), the
// instruments the request path and the jobs count with, and the gauges a scrape fills from the database (figures.ts).
// Label values are bounded: route templates, methods, statuses, job kinds, GPU types, host names; never the id of a
// dataset, image, model or job.
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { collectProcessMetrics } from './process-metrics.ts';

/** The statuses counted as refused, by reason. */
export const REFUSED_REASONS: Record<number, string> = {
  401: 'unauthorized',
  403: 'forbidden',
  413: 'too_large',
  429: 'rate_limited',
};

const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export class AppMetrics {
  readonly registry = new Registry();
  readonly httpRequests: Counter<'method' | 'route' | 'status'>;
  readonly httpSeconds: Histogram<'method' | 'route'>;
  readonly refused: Counter<'reason'>;
  readonly trainingEpochs: Counter;
  readonly deploymentRequests: Counter<'status_class'>;
  readonly deploymentSeconds: Histogram;
  readonly ingestBytes: Counter;
  readonly uploadBytes: Counter;
  /** Filled at each scrape from the database and the process (figures.ts; the hosts' series: host-series.ts). */
  readonly gauges: ScrapeGauges;

  constructor(version: string) {
    const registers = [this.registry];
    collectProcessMetrics(this.registry, 'vp_');
    new Gauge({
      name: 'vp_build_info',
      help: 'The control plane release (always 1)',
      labelNames: ['version'],
      registers,
    }).set({ version }, 1);
    this.httpRequests = new Counter({
      name: 'vp_http_requests_total',
      help: 'API requests answered, by route template, method and status',
      labelNames: ['method', 'route', 'status'],
      registers,
    });
    this.httpSeconds = new Histogram({
      name: 'vp_http_request_duration_seconds',
      help: 'Time to answer API requests, by route template and method',
      labelNames: ['method', 'route'],
      buckets: SECONDS,
      registers,
    });
    this.refused = new Counter({
      name: 'vp_http_refused_total',
      help: 'Requests refused: rate_limited (429), unauthorized (401), forbidden (403), too_large (413)',
      labelNames: ['reason'],
      registers,
    });
    this.trainingEpochs = new Counter({
      name: 'vp_training_epochs_total',
      help: 'Epochs reported by trainers (epoch_end events accepted)',
      registers,
    });
    this.deploymentRequests = new Counter({
      name: 'vp_deployment_requests_total',
      help: 'Requests deployments answered through this control plane, by status class (2xx, 4xx, 5xx)',
      labelNames: ['status_class'],
      registers,
    });
    this.deploymentSeconds = new Histogram({
      name: 'vp_deployment_request_duration_seconds',
      help: "Deployments' request latency through this control plane, a wake from zero included",
      buckets: SECONDS,
      registers,
    });
    this.ingestBytes = new Counter({
      name: 'vp_ingest_bytes_total',
      help: 'Bytes of archives and NDJSON files ingest jobs read',
      registers,
    });
    this.uploadBytes = new Counter({
      name: 'vp_upload_bytes_total',
      help: 'Bytes of files uploaded through this control plane (signed-URL PUTs)',
      registers,
    });
    this.gauges = scrapeGauges(registers);
    // Every label value a rule or dashboard divides by or rates exists from the start, at 0.
    for (const reason of Object.values(REFUSED_REASONS)) this.refused.inc({ reason }, 0);
    for (const statusClass of ['2xx', '4xx', '5xx']) this.deploymentRequests.inc({ status_class: statusClass }, 0);
  }
}

export type ScrapeGauges = ReturnType<typeof scrapeGauges>;

function scrapeGauges(registers: Registry[]) {
  const gauge = <L extends string>(name: string, help: string, labelNames: readonly L[] = []) =>
    new Gauge<L>({ name, help, labelNames, registers });
  return {
    jobs: gauge('vp_jobs', 'Jobs queued or running, by kind and status', ['kind', 'status']),
    queued: gauge('vp_jobs_queued', 'Jobs waiting, by kind and GPU type (none: no GPU asked for)', [
      'kind',
      'gpu_type',
    ]),
    queuedSeconds: gauge(
      'vp_jobs_queued_oldest_seconds',
      'How long the oldest waiting job has waited, by kind and GPU type',
      ['kind', 'gpu_type'],
    ),
    deployments: gauge('vp_deployments', 'Deployments by status', ['status']),
    storedBytes: gauge('vp_storage_used_bytes', 'Bytes stored, by kind (images, models, exports, …), every workspace', [
      'kind',
    ]),
    diskFree: gauge(
      'vp_data_disk_free_bytes',
      "Free bytes on DATA_DIR's filesystem (uploads, outputs, the embedded database)",
    ),
    diskSize: gauge('vp_data_disk_bytes', "The size of DATA_DIR's filesystem"),
    backupAge: gauge(
      'vp_backup_last_success_timestamp_seconds',
      'When the last complete `vpctl backup` finished (Unix seconds); 0: never',
    ),
    dbPool: gauge('vp_db_pool_connections', "This process's database connections, by state (idle, busy, waiting)", [
      'state',
    ]),
  };
}
