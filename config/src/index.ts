import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { isIP } from 'node:net';
import { availableParallelism, hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { writeFileOnce } from './file-once.ts';
import {
  defaults,
  EMBEDDING_PLACEMENTS,
  RATE_CATEGORIES,
  REGIONS,
  type EmbeddingPlacement,
  type RateCategory,
} from './defaults.ts';

export {
  defaults,
  EMBEDDING_PLACEMENTS,
  RATE_CATEGORIES,
  REGIONS,
  type EmbeddingPlacement,
  type RateCategory,
  type Region,
} from './defaults.ts';
export { writeFileOnce } from './file-once.ts';

const port = z.coerce.number({ error: 'must be an integer from 0 to 65535' }).int().min(0).max(65535);
const positiveInt = z.coerce.number({ error: 'must be a positive integer' }).int().min(1);
const flag = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');

const rateLimitEnv = Object.fromEntries(
  RATE_CATEGORIES.map((category) => [
    `RATE_LIMIT_${category.toUpperCase()}`,
    positiveInt.default(defaults.rateLimits[category]),
  ]),
) as Record<`RATE_LIMIT_${string}`, z.ZodDefault<typeof positiveInt>>;

const PRICE_TABLE_RULE =
  'must be a JSON object of GPU type ID to whole cents per GPU-hour, e.g. {"rtx-4090":69,"cpu":5}';
/** GPU_PRICES_CENTS_PER_HOUR: JSON, merged over the default price table. */
const gpuPrices = z
  .string()
  .transform((text, ctx) => {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      ctx.addIssue({ code: 'custom', message: `is not valid JSON; ${PRICE_TABLE_RULE}` });
      return z.NEVER;
    }
  })
  .pipe(
    z.record(
      z.string().regex(/^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$/),
      z
        .number({ error: 'must be a whole number of cents per GPU-hour' })
        .int('must be a whole number of cents per GPU-hour')
        .min(0, 'must not be negative')
        .max(10_000_000),
      {
        error: (issue) =>
          issue.code === 'invalid_key'
            ? 'is not a GPU type ID (1-64 lowercase letters, digits or hyphens)'
            : issue.code === 'invalid_type'
              ? PRICE_TABLE_RULE
              : undefined,
      },
    ),
  );

const HOST_NAME =
  /^(?=.{1,253}$)[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*\.?$/i;
/** One OUTBOUND_ALLOWED_NETWORKS entry: a CIDR, a single address or a host name. */
function isNetworkOrHost(entry: string): boolean {
  const [address, bits, extra] = entry.split('/');
  const family = isIP(address);
  if (bits === undefined) return family !== 0 || HOST_NAME.test(entry);
  return extra === undefined && family !== 0 && /^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128);
}
/** OUTBOUND_ALLOWED_NETWORKS: comma-separated CIDRs, addresses and host names. */
const outboundAllowed = z
  .string()
  .default(defaults.outboundAllowedNetworks)
  .transform((text) =>
    text
      .split(',')
      .map((entry) => entry.trim())
      .filter(Boolean),
  )
  .refine((entries) => entries.every(isNetworkOrHost), {
    error: (issue) =>
      `must be comma-separated CIDRs (10.20.0.0/16), addresses or host names; not: ${(issue.input as string[]).filter((entry) => !isNetworkOrHost(entry)).join(', ')}`,
  });

const MEAN_STD_RULE = 'must be three comma-separated numbers (R,G,B on a 0-1 scale), e.g. 0.485,0.456,0.406';
/** EMBEDDING_MODEL_MEAN / _STD: one number per RGB channel. */
const rgbTriple = z
  .string()
  .transform((text) => text.split(',').map((part) => Number(part.trim())))
  .refine((values) => values.length === 3 && values.every((value) => Number.isFinite(value)), MEAN_STD_RULE)
  .transform((values) => values as [number, number, number]);

/** The environment variables the appliance reads, with their rules. */
const EnvSchema = z.object({
  PORT: port.default(defaults.port),
  HOST: z.string().min(1).default(defaults.host),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
    .optional(),
  DATA_DIR: z.string().min(1).default(defaults.dataDir),
  PUBLIC_BASE_URL: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional(),
  REGION: z.enum(REGIONS, { error: `must be one of ${REGIONS.join(', ')}` }).default(defaults.region),
  EMBEDDED_PG_PORT: port.default(defaults.embeddedPostgresPort),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default(defaults.logLevel),
  JSON_BODY_LIMIT_BYTES: positiveInt.default(defaults.jsonBodyLimitBytes),
  TRUST_PROXY: flag.default(defaults.trustProxy),
  SHUTDOWN_GRACE_SECONDS: positiveInt.default(defaults.shutdownGraceSeconds),
  RATE_LIMIT_WINDOW_SECONDS: positiveInt.default(defaults.rateLimitWindowSeconds),
  AUTH_FAILURE_LIMIT: positiveInt.default(defaults.authFailureLimit),
  JOB_CONCURRENCY: positiveInt.default(defaults.jobConcurrency),
  JOB_LEASE_SECONDS: positiveInt.default(defaults.jobLeaseSeconds),
  WORKER_HEARTBEAT_SECONDS: positiveInt.max(3600).default(defaults.workerHeartbeatSeconds),
  HOST_LOST_GRACE_SECONDS: positiveInt.default(defaults.hostLostGraceSeconds),
  TRAINING_CANCEL_GRACE_SECONDS: positiveInt.default(defaults.trainingCancelGraceSeconds),
  TRAINING_CHECKPOINT_SECONDS: positiveInt.max(86_400).default(defaults.trainingCheckpointSeconds),
  JOB_OUTPUT_MAX_BYTES: positiveInt.max(Number.MAX_SAFE_INTEGER).default(defaults.jobOutputMaxBytes),
  TRAINING_RUN_SILENCE_SECONDS: positiveInt.default(defaults.trainingRunSilenceSeconds),
  BILLING_ENABLED: flag.default(defaults.billingEnabled),
  BILLING_ENFORCED: flag.default(defaults.billingEnforced),
  GPU_PRICES_CENTS_PER_HOUR: gpuPrices.optional(),
  TRAINING_SECONDS_PER_EPOCH_ESTIMATE: positiveInt.default(defaults.trainingSecondsPerEpochEstimate),
  BATCH_PREDICT_CENTS_PER_IMAGE: z.coerce
    .number({ error: 'must be a number of cents, 0 or more' })
    .min(0)
    .max(100_000)
    .default(defaults.batchPredictCentsPerImage),
  SIGNING_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
  METRICS_TOKEN: z
    .string()
    .min(32, 'must be at least 32 characters')
    .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces')
    .optional(),
  STORAGE_URL: z
    .string()
    .regex(/^(file|s3):\/\//, 'must be a file:// or s3:// URL (s3://bucket?endpoint=http://host:9000)')
    .optional(),
  OUTBOUND_ALLOWED_NETWORKS: outboundAllowed,
  PREDICT_WORKERS: positiveInt.max(64).optional(),
  PREDICT_CACHE_BYTES: positiveInt.max(Number.MAX_SAFE_INTEGER).default(defaults.predictCacheBytes),
  PREDICT_DISK_CACHE_BYTES: positiveInt.max(Number.MAX_SAFE_INTEGER).default(defaults.predictDiskCacheBytes),
  PREDICT_MAX_BYTES: positiveInt.max(2 ** 31).default(defaults.predictMaxBytes),
  PREDICT_EXPORT_WAIT_SECONDS: z.coerce
    .number({ error: 'must be a whole number of seconds' })
    .int()
    .min(0)
    .max(3600)
    .default(defaults.predictExportWaitSeconds),
  DEPLOYMENT_IDLE_SECONDS: positiveInt.max(30 * 86_400).default(defaults.deploymentIdleSeconds),
  DEPLOYMENT_WAKE_SECONDS: positiveInt.max(3600).default(defaults.deploymentWakeSeconds),
  DEPLOYMENT_TIMEOUT_SECONDS: positiveInt.max(3600).default(defaults.deploymentTimeoutSeconds),
  FACE_DETECTOR_PATH: z.string().min(1).optional(),
  EMBEDDING_MODEL_PATH: z.string().min(1).optional(),
  EMBEDDING_MODEL_MEAN: rgbTriple
    .refine((values) => values.every((value) => value >= 0 && value <= 1), MEAN_STD_RULE)
    .optional(),
  EMBEDDING_MODEL_STD: rgbTriple
    .refine((values) => values.every((value) => value > 0), 'must be three comma-separated positive numbers')
    .optional(),
  EMBEDDING_PLACEMENT: z
    .enum(EMBEDDING_PLACEMENTS, { error: `must be one of ${EMBEDDING_PLACEMENTS.join(', ')}` })
    .default(defaults.embeddingPlacement),
  EMBEDDING_LAYOUT_SAMPLE: positiveInt.max(1_000_000).default(defaults.embeddingLayoutSample),
  SESSION_HOURS: positiveInt.max(24 * 30).default(defaults.sessionHours),
  AUDIT_RETENTION_DAYS: positiveInt.max(36_500).default(defaults.auditRetentionDays),
  OIDC_ISSUER: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional(),
  OIDC_CLIENT_ID: z.string().min(1).max(255).optional(),
  OIDC_CLIENT_SECRET: z.string().min(1).max(1024).optional(),
  OIDC_NAME: z.string().min(1).max(60).default(defaults.oidcName),
  ...rateLimitEnv,
});

/** OIDC_ISSUER, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET together, or none of them. */
function oidcSettings(e: z.output<typeof EnvSchema>): OidcSettings | null {
  const given = [e.OIDC_ISSUER, e.OIDC_CLIENT_ID, e.OIDC_CLIENT_SECRET];
  if (given.every((value) => value === undefined)) return null;
  if (given.some((value) => value === undefined))
    throw new ConfigError(
      'Invalid configuration: OIDC_ISSUER, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET are set together or not at all',
    );
  return {
    issuer: e.OIDC_ISSUER!,
    clientId: e.OIDC_CLIENT_ID!,
    clientSecret: e.OIDC_CLIENT_SECRET!,
    name: e.OIDC_NAME,
  };
}

/** Console sign-in through the company's OpenID Connect provider (authorization code flow, confidential client). */
export interface OidcSettings {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** What the sign-in page calls the provider. */
  name: string;
}

export interface AppConfig {
  port: number;
  host: string;
  /** Unset: the control plane runs its own embedded PostgreSQL under `dataDir`. */
  databaseUrl: string | undefined;
  dataDir: string;
  /** Where hosts and clients reach the appliance: PUBLIC_BASE_URL, else this machine's address (defaultBaseUrl). */
  publicBaseUrl: string;
  region: (typeof REGIONS)[number];
  embeddedPostgresPort: number;
  logLevel: string;
  jsonBodyLimitBytes: number;
  trustProxy: boolean;
  shutdownGraceSeconds: number;
  rateLimitWindowSeconds: number;
  rateLimits: Record<RateCategory, number>;
  /** Invalid API keys a client address may present per rate-limit window; then 429 for keys not verified recently. */
  authFailureLimit: number;
  /** How long a console session lasts from sign-in (fixed, not extended by use). */
  sessionHours: number;
  /** Console sign-in through an OIDC provider; null when not configured. */
  oidc: OidcSettings | null;
  /** Audit log entries older than this are purged (hourly). */
  auditRetentionDays: number;
  jobConcurrency: number;
  jobLeaseSeconds: number;
  workerHeartbeatSeconds: number;
  /** A worker host silent this long (no heartbeat) loses its jobs: requeued when restartable, else failed. */
  hostLostGraceSeconds: number;
  /**
   * A cancelled training's trainer stops at its next epoch end; after this many seconds its host stops it. A cancelled
   * run on a user's own machine that reports nothing for this long ends cancelled (nobody is listening).
   */
  trainingCancelGraceSeconds: number;
  /** A run on a user's own machine that reports nothing for this long is failed: its trainer or machine stopped. */
  trainingRunSilenceSeconds: number;
  /** How often a worker host uploads a running training's last.pt; a job requeued after a lost host resumes from it. */
  trainingCheckpointSeconds: number;
  /** The largest file a worker host may upload as one of a job's outputs (an exported model). */
  jobOutputMaxBytes: number;
  /** Credits are checked before training and jobs charged to the workspace; false: estimates only, nothing refused, charges recorded at 0. */
  billingEnabled: boolean;
  /** With billing on: refuse (402) what the balance cannot cover. Off: charges still recorded, the balance may go negative, nothing refused. */
  billingEnforced: boolean;
  /** Cents per GPU-hour by GPU type ID (`cpu` for jobs without GPUs): the defaults with GPU_PRICES_CENTS_PER_HOUR merged over them. */
  gpuPricesCentsPerHour: Record<string, number>;
  /** Seconds one epoch is estimated to take until charges of the GPU type give a measured average. */
  trainingSecondsPerEpochEstimate: number;
  /** What batch auto-annotation charges per image it processed, in cents (fractions add up; the run's total is rounded up). */
  batchPredictCentsPerImage: number;
  /** From SIGNING_SECRET, else generated once and kept in `<dataDir>/signing-secret`. */
  signingSecret: string | undefined;
  /** The bearer token Prometheus scrapes `/metrics` with; unset: `/metrics` answers 404 (API keys never reach it). */
  metricsToken: string | undefined;
  /** Where blobs live: unset → `<dataDir>/blobs` on disk; `file:///path`; `s3://bucket?endpoint=...`. */
  storageUrl: string | undefined;
  /**
   * Networks (CIDRs, addresses) and host names that downloads from user-given URLs may reach although they
   * are not public (loopback, private, link-local, ...): sources on the premises. Empty: public addresses only.
   */
  outboundAllowedNetworks: string[];
  /** Inference worker processes per workspace (PREDICT_WORKERS, else one per 8 cores, at least 1). */
  predictWorkers: number;
  /** Memory the loaded ONNX sessions may take, as their loads measured it; least recently used ones are released first. A worker process past this plus 256 MiB is killed. */
  predictCacheBytes: number;
  /** Disk the local copies of ONNX files fetched from an S3 store may take (DATA_DIR/cache/onnx). */
  predictDiskCacheBytes: number;
  /** The largest image one predict takes (uploaded, fetched from a URL or base64); larger is 413. */
  predictMaxBytes: number;
  /** How long a predict waits for its model's ONNX export to complete before answering 503. */
  predictExportWaitSeconds: number;
  /** A default-size deployment (1 CPU, 2 GiB) with no request for this long stops its server (scaled to zero). */
  deploymentIdleSeconds: number;
  /** How long a request to a deployment scaled to zero (or still deploying) waits for its server before 503. */
  deploymentWakeSeconds: number;
  /** How long the control plane waits for a deployment's server to answer (predict, health) before 504. */
  deploymentTimeoutSeconds: number;
  /**
   * CenterFace's ONNX file, which blurs faces in datasets with blurFaces: FACE_DETECTOR_PATH, else the release's
   * models/ or the newest build of installer/models/build-models.sh under the checkout's .cache/models; undefined when
   * there is none.
   */
  faceDetectorPath: string | undefined;
  /**
   * The ONNX image embedder dataset analysis runs: EMBEDDING_MODEL_PATH, else the release's models/ (an install from
   * the offline bundle) or the newest build of installer/models/build-models.sh under the checkout's .cache/models;
   * undefined when there is none.
   */
  embeddingModelPath: string | undefined;
  /** The embedder's input normalisation, (x/255 - mean) / std per RGB channel; ImageNet's by default. */
  embeddingMean: [number, number, number];
  embeddingStd: [number, number, number];
  /**
   * Where dataset analysis embeds: auto, on a connected worker host with a free GPU when there is one (else, or when
   * that fails, on this control plane's CPU); control-plane, always here; hosts, always on worker hosts (a GPU when one
   * is connected, else a host's CPU slot), failing the analysis when they cannot.
   */
  embeddingPlacement: EmbeddingPlacement;
  embeddingLayoutSample: number;
}

export class ConfigError extends Error {}

/** HOST values that listen on every interface, and so name no address a client could use. */
const WILDCARD_HOSTS = new Set(['0.0.0.0', '::', '[::]']);

/**
 * The appliance's address when PUBLIC_BASE_URL is unset: the address it listens on (HOST, PORT), or this machine's
 * hostname when HOST is a wildcard. Never "localhost", which on a worker host or a client's machine is that machine.
 */
function defaultBaseUrl(host: string, port: number): string {
  const name = WILDCARD_HOSTS.has(host) ? hostname() : host;
  return `http://${isIP(name) === 6 ? `[${name}]` : name}:${port}`;
}

/** Parses the environment once; every problem is reported together on one line. */
export function loadConfig(env: Record<string, string | undefined> = process.env): AppConfig {
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined && value !== ''));
  const parsed = EnvSchema.safeParse(present);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join('.')} ${issue.message}`);
    throw new ConfigError(`Invalid configuration: ${problems.join('; ')}`);
  }
  const e = parsed.data;
  return {
    port: e.PORT,
    host: e.HOST,
    databaseUrl: e.DATABASE_URL,
    dataDir: resolve(e.DATA_DIR),
    publicBaseUrl: (e.PUBLIC_BASE_URL ?? defaultBaseUrl(e.HOST, e.PORT)).replace(/\/+$/, ''),
    region: e.REGION,
    embeddedPostgresPort: e.EMBEDDED_PG_PORT,
    logLevel: e.LOG_LEVEL,
    jsonBodyLimitBytes: e.JSON_BODY_LIMIT_BYTES,
    trustProxy: e.TRUST_PROXY,
    shutdownGraceSeconds: e.SHUTDOWN_GRACE_SECONDS,
    rateLimitWindowSeconds: e.RATE_LIMIT_WINDOW_SECONDS,
    rateLimits: Object.fromEntries(
      RATE_CATEGORIES.map((category) => [
        category,
        (e as Record<string, unknown>)[`RATE_LIMIT_${category.toUpperCase()}`] as number,
      ]),
    ) as Record<RateCategory, number>,
    authFailureLimit: e.AUTH_FAILURE_LIMIT,
    sessionHours: e.SESSION_HOURS,
    oidc: oidcSettings(e),
    auditRetentionDays: e.AUDIT_RETENTION_DAYS,
    jobConcurrency: e.JOB_CONCURRENCY,
    jobLeaseSeconds: e.JOB_LEASE_SECONDS,
    workerHeartbeatSeconds: e.WORKER_HEARTBEAT_SECONDS,
    hostLostGraceSeconds: e.HOST_LOST_GRACE_SECONDS,
    trainingCancelGraceSeconds: e.TRAINING_CANCEL_GRACE_SECONDS,
    trainingCheckpointSeconds: e.TRAINING_CHECKPOINT_SECONDS,
    jobOutputMaxBytes: e.JOB_OUTPUT_MAX_BYTES,
    trainingRunSilenceSeconds: e.TRAINING_RUN_SILENCE_SECONDS,
    billingEnabled: e.BILLING_ENABLED,
    billingEnforced: e.BILLING_ENFORCED,
    gpuPricesCentsPerHour: { ...defaults.gpuPricesCentsPerHour, ...e.GPU_PRICES_CENTS_PER_HOUR },
    trainingSecondsPerEpochEstimate: e.TRAINING_SECONDS_PER_EPOCH_ESTIMATE,
    batchPredictCentsPerImage: e.BATCH_PREDICT_CENTS_PER_IMAGE,
    signingSecret: e.SIGNING_SECRET,
    metricsToken: e.METRICS_TOKEN,
    storageUrl: e.STORAGE_URL,
    outboundAllowedNetworks: e.OUTBOUND_ALLOWED_NETWORKS,
    predictWorkers: e.PREDICT_WORKERS ?? Math.max(1, Math.floor(availableParallelism() / 8)),
    predictCacheBytes: e.PREDICT_CACHE_BYTES,
    predictDiskCacheBytes: e.PREDICT_DISK_CACHE_BYTES,
    predictMaxBytes: e.PREDICT_MAX_BYTES,
    predictExportWaitSeconds: e.PREDICT_EXPORT_WAIT_SECONDS,
    deploymentIdleSeconds: e.DEPLOYMENT_IDLE_SECONDS,
    deploymentWakeSeconds: e.DEPLOYMENT_WAKE_SECONDS,
    deploymentTimeoutSeconds: e.DEPLOYMENT_TIMEOUT_SECONDS,
    faceDetectorPath:
      e.FACE_DETECTOR_PATH === undefined ? builtModel('face-detector.onnx') : resolve(e.FACE_DETECTOR_PATH),
    embeddingModelPath:
      e.EMBEDDING_MODEL_PATH === undefined ? builtModel('image-embedder.onnx') : resolve(e.EMBEDDING_MODEL_PATH),
    embeddingMean: e.EMBEDDING_MODEL_MEAN ?? [...defaults.embeddingMean],
    embeddingStd: e.EMBEDDING_MODEL_STD ?? [...defaults.embeddingStd],
    embeddingPlacement: e.EMBEDDING_PLACEMENT,
    embeddingLayoutSample: e.EMBEDDING_LAYOUT_SAMPLE,
  };
}

/** The models an installed release ships (the offline bundle's app.tar holds them). */
const RELEASE_MODELS = fileURLToPath(new URL('../../models/', import.meta.url));
/** Where installer/models/build-models.sh keeps its builds in a checkout, one folder per content digest. */
const MODELS_CACHE = fileURLToPath(new URL('../../.cache/models/', import.meta.url));

/**
 * The release's `file`, else the newest build holding it (older recipes leave theirs; dot folders are builds under
 * way), or undefined.
 */
function builtModel(file: string): string | undefined {
  if (existsSync(join(RELEASE_MODELS, file))) return join(RELEASE_MODELS, file);
  if (!existsSync(MODELS_CACHE)) return undefined;
  const builds = readdirSync(MODELS_CACHE, { withFileTypes: true })
    .filter(
      (entry) => entry.isDirectory() && !entry.name.startsWith('.') && existsSync(join(MODELS_CACHE, entry.name, file)),
    )
    .map((entry) => join(MODELS_CACHE, entry.name, file));
  return builds.sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0];
}

/** Where the generated signing secret is kept when SIGNING_SECRET is unset. */
export const signingSecretFile = (config: Pick<AppConfig, 'dataDir'>) => join(config.dataDir, 'signing-secret');

/**
 * The secret that signs URLs and tokens: SIGNING_SECRET when set (replicas must share one),
 * else generated on first start and kept in the data dir, readable by its owner only.
 */
export function resolveSigningSecret(config: Pick<AppConfig, 'dataDir' | 'signingSecret'>): string {
  if (config.signingSecret) return config.signingSecret;
  const file = signingSecretFile(config);
  if (!existsSync(file)) writeFileOnce(file, randomBytes(32).toString('hex'));
  return readFileSync(file, 'utf8').trim();
}
