/**
 * Built-in defaults. Every value can be overridden by the environment variable
 * named beside it (see `config/example.env`).
 */
export const defaults = {
  port: 3000, // PORT
  host: '0.0.0.0', // HOST
  dataDir: '.data', // DATA_DIR (relative paths resolve against the working directory)
  // STORAGE_URL has no default value: unset keeps blobs on disk under DATA_DIR/blobs.
  region: 'us', // REGION: us | eu | ap
  embeddedPostgresPort: 54329, // EMBEDDED_PG_PORT, used only without DATABASE_URL
  logLevel: 'info', // LOG_LEVEL
  jsonBodyLimitBytes: 2 * 1024 * 1024, // JSON_BODY_LIMIT_BYTES: metadata may be 500,000 characters
  trustProxy: false, // TRUST_PROXY: take the client address from X-Forwarded-For
  shutdownGraceSeconds: 10, // SHUTDOWN_GRACE_SECONDS
  rateLimitWindowSeconds: 60, // RATE_LIMIT_WINDOW_SECONDS
  jobConcurrency: 2, // JOB_CONCURRENCY: background jobs (ingest, exports) one control plane runs at once
  jobLeaseSeconds: 60, // JOB_LEASE_SECONDS: a job whose process stops renewing its lease this long is taken again
  workerHeartbeatSeconds: 10, // WORKER_HEARTBEAT_SECONDS: how often worker agents report in (sent to them in `welcome`)
  hostLostGraceSeconds: 120, // HOST_LOST_GRACE_SECONDS: a host silent this long loses its jobs (requeued or failed)
  /** Requests per window and per API key (RATE_LIMIT_<CATEGORY>, e.g. RATE_LIMIT_DEFAULT=100). */
  rateLimits: {
    default: 100,
    training: 10,
    upload: 10,
    predict: 20,
    export: 20,
    download: 30,
    mutation: 10,
    hydrate: 20,
    clustering: 10,
    /** Version comparisons without `hash`, per user and dataset (on top of Default). */
    compare: 10,
  },
} as const;

export type RateCategory = keyof typeof defaults.rateLimits;
export const RATE_CATEGORIES = Object.keys(defaults.rateLimits) as RateCategory[];
export const REGIONS = ['us', 'eu', 'ap'] as const;
export type Region = (typeof REGIONS)[number];
