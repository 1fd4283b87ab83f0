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
  authFailureLimit: 20, // AUTH_FAILURE_LIMIT: invalid API keys and wrong passwords per window, per client address (passwords: and per user), before 429
  sessionHours: 12, // SESSION_HOURS: a console session ends this long after sign-in (fixed expiry, not extended by use)
  // OIDC_ISSUER, OIDC_CLIENT_ID, OIDC_CLIENT_SECRET have no default: unset, the console signs in with passwords only
  oidcName: 'Single sign-on', // OIDC_NAME: what the sign-in page calls the OIDC provider
  auditRetentionDays: 400, // AUDIT_RETENTION_DAYS: audit log entries older than this are purged (hourly)
  jobConcurrency: 2, // JOB_CONCURRENCY: background jobs (ingest, exports) one control plane runs at once
  jobLeaseSeconds: 60, // JOB_LEASE_SECONDS: a job whose process stops renewing its lease this long is taken again
  workerHeartbeatSeconds: 10, // WORKER_HEARTBEAT_SECONDS: how often worker agents report in (sent to them in `welcome`)
  hostLostGraceSeconds: 120, // HOST_LOST_GRACE_SECONDS: a host silent this long loses its jobs (requeued or failed)
  trainingCheckpointSeconds: 300, // TRAINING_CHECKPOINT_SECONDS: how often a host uploads a training's last.pt (what a requeued job resumes from)
  jobOutputMaxBytes: 8 * 2 ** 30, // JOB_OUTPUT_MAX_BYTES: the largest output (an exported model, zipped) a host may upload for a job
  // TRAINING_CANCEL_GRACE_SECONDS: a cancelled trainer has this long to stop by itself before its host stops it; a cancelled
  // run on a user's own machine that reports nothing this long ends cancelled (a live trainer posts within 5 s of a batch)
  trainingCancelGraceSeconds: 60,
  // TRAINING_RUN_SILENCE_SECONDS: a run on a user's own machine that reports nothing this long is failed (its machine
  // stopped). 24 h: ultralytics 8.4 posts a console chunk within 5 s of every batch, so it is silent at most one batch
  // (~10 s for 16 images at 640 px on 2 CPU cores), but a client that reports only at epoch ends is silent a whole
  // epoch: yolo11n at 640 px trains ~0.6 s per image on 2 CPU cores, so 24 h holds an epoch of ~140,000 images (more
  // than COCO's 118,000). A user who knows a run is dead cancels it, which ends it within the cancel grace.
  trainingRunSilenceSeconds: 86_400,
  // OUTBOUND_ALLOWED_NETWORKS: comma-separated CIDRs, addresses or host names that downloads from user-given URLs
  // (sourceUrl, NDJSON image URLs) may reach although not public, e.g. an on-premises file server. Empty: public only.
  outboundAllowedNetworks: '',
  // PREDICT_WORKERS has no fixed default: one inference worker process per 8 cores (at least 1) for each workspace. A model's session lives
  // in one worker and runs with cores / workers onnxruntime threads, off that worker's JS thread: on 2 cores one worker
  // with 2 threads measured 35 ms p50 and 30 images/s for 4 clients (yolo11n, 640), two workers of 1 thread 57 ms and 17/s.
  predictCacheBytes: 2 * 2 ** 30, // PREDICT_CACHE_BYTES: loaded ONNX sessions, as measured at load, evicted least recently used first
  predictDiskCacheBytes: 4 * 2 ** 30, // PREDICT_DISK_CACHE_BYTES: ONNX files fetched from an S3 store to DATA_DIR/cache/onnx
  predictMaxBytes: 20 * 2 ** 20, // PREDICT_MAX_BYTES: the largest image a predict takes (file, URL or base64); larger: 413
  predictExportWaitSeconds: 50, // PREDICT_EXPORT_WAIT_SECONDS: how long a predict waits for its model's ONNX export before 503 (under the SDK's 60 s timeout)
  deploymentIdleSeconds: 900, // DEPLOYMENT_IDLE_SECONDS: a default-size deployment with no request for this long scales to zero
  deploymentWakeSeconds: 120, // DEPLOYMENT_WAKE_SECONDS: how long a request to a deployment scaled to zero (or still deploying) waits for it
  deploymentTimeoutSeconds: 55, // DEPLOYMENT_TIMEOUT_SECONDS: how long the control plane waits for a deployment's server to answer a request before 504 (under the SDK's 60 s timeout)
  billingEnabled: true, // BILLING_ENABLED: false still shows estimates, but refuses nothing and records charges at 0
  // BILLING_ENFORCED: off, a fresh appliance trains at once: jobs are charged and balances reported, nothing refused (402 only when on)
  billingEnforced: false,
  trainingSecondsPerEpochEstimate: 60, // TRAINING_SECONDS_PER_EPOCH_ESTIMATE: until a GPU type has measured charges
  batchPredictCentsPerImage: 0.1, // BATCH_PREDICT_CENTS_PER_IMAGE: batch auto-annotation's price per processed image
  // EMBEDDING_MODEL_MEAN / EMBEDDING_MODEL_STD: the image embedder's input normalisation (ImageNet's, what the
  // built MobileNetV2 embedder was trained with; a CLIP export wants 0.4815,0.4578,0.4082 / 0.2686,0.2613,0.2758)
  embeddingMean: [0.485, 0.456, 0.406],
  embeddingStd: [0.229, 0.224, 0.225],
  embeddingPlacement: 'auto' as EmbeddingPlacement, // EMBEDDING_PLACEMENT: auto | control-plane | hosts, where dataset analysis embeds
  // EMBEDDING_LAYOUT_SAMPLE: the most images an analysis lays out with UMAP itself (about 5 minutes and 5 GB on one core
  // at 50,000); a larger dataset's other images are placed beside their nearest sampled neighbours
  embeddingLayoutSample: 50_000,
  /**
   * Cents per GPU-hour by GPU type ID (`cpu`: a job without GPUs, per job-hour). GPU_PRICES_CENTS_PER_HOUR,
   * a JSON object such as '{"rtx-4090":69,"my-gpu":40}', is merged over this table.
   */
  gpuPricesCentsPerHour: {
    b300: 599,
    b200: 499,
    'h200-nvl': 349,
    'h200-sxm': 399,
    'h100-nvl': 299,
    'h100-pcie': 239,
    'h100-sxm': 269,
    'a100-80gb-pcie': 139,
    'a100-40gb-pcie': 119,
    'a100-80gb-sxm': 149,
    'a100-40gb-sxm': 129,
    'v100-32gb': 49,
    'v100-16gb': 39,
    a40: 44,
    a30: 39,
    a10g: 49,
    a10: 45,
    l40s: 86,
    l40: 79,
    l4: 44,
    t4: 29,
    'rtx-pro-6000': 179,
    'rtx-pro-4000': 39,
    'rtx-6000-ada': 77,
    'rtx-5000-ada': 59,
    'rtx-4500-ada': 34,
    'rtx-4000-ada': 26,
    'rtx-2000-ada': 24,
    'rtx-a6000': 49,
    'rtx-a5000': 27,
    'rtx-a4000': 25,
    'rtx-5090': 89,
    'rtx-4090': 59,
    'rtx-3090': 43,
    cpu: 5,
  } as Readonly<Record<string, number>>,
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
    /** Trainer events (POST /api/webhooks/training/metrics): about two per epoch and one per 5 s of console. */
    metrics: 600,
  },
} as const;

export type RateCategory = keyof typeof defaults.rateLimits;
export const RATE_CATEGORIES = Object.keys(defaults.rateLimits) as RateCategory[];
export const REGIONS = ['us', 'eu', 'ap'] as const;

export const EMBEDDING_PLACEMENTS = ['auto', 'control-plane', 'hosts'] as const;
export type EmbeddingPlacement = (typeof EMBEDDING_PLACEMENTS)[number];
export type Region = (typeof REGIONS)[number];
