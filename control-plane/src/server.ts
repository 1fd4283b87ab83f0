import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { resolveSigningSecret, type AppConfig } from '@vp/config';
import pino, { type DestinationStream, type Logger } from 'pino';
import { RELEASE_VERSION } from './release-version.ts';
import { createApp } from './app.ts';
import { AppMetrics } from './metrics/app-metrics.ts';
import { ScrapeFigures } from './metrics/figures.ts';
import { SummaryFigures } from './account/summary-figures.ts';
import { Authenticator } from './auth/authenticator.ts';
import { bootstrapFirstStart } from './bootstrap.ts';
import { recordReplica } from './health/replicas.ts';
import { startEmbeddedPostgres, type EmbeddedDatabase } from './db/embedded.ts';
import { Notifications } from './db/notifications.ts';
import { initORM, migrate, type Orm } from './db/orm.ts';
import { attachApplianceSecret } from './db/appliance-secret.ts';
import { answerClientError } from './http/client-error.ts';
import type { RouteDefinition } from './http/define-route.ts';
import { RateLimiter } from './http/rate-limit.ts';
import { FACE_BLUR_JOB, FaceBlurJob } from './faces/face-blur.job.ts';
import { FaceDetector } from './faces/face-detector.ts';
import { IntegrationAccess } from './integrations/integration-access.ts';
import { ReferencedImages } from './ingest/reference/referenced-bytes.ts';
import { IngestJob } from './ingest/ingest.job.ts';
import { INGEST_JOB } from './ingest/ingest-payload.ts';
import { JobLifecycle } from './jobs/job-lifecycle.ts';
import { JobRunner } from './jobs/job-runner.ts';
import { BatchPredictJob } from './predict/batch-predict.job.ts';
import { EMBEDDING_CHUNK_JOB, EmbeddingChunkJob } from './embeddings/embedding-chunk.job.ts';
import { EmbeddingJob } from './embeddings/embedding.job.ts';
import { EMBEDDINGS_JOB } from './embeddings/embeddings.store.ts';
import { HostEmbedding } from './embeddings/host-embedding.ts';
import { ImageEmbedder } from './embeddings/image-embedder.ts';
import { VectorIndex } from './embeddings/vector-index.ts';
import { BATCH_PREDICT_JOB } from './predict/batch-predict.store.ts';
import type { Predictor } from './predict/predictor.ts';
import { OutboundPolicy } from './net/outbound-policy.ts';
import { sweepOrphanImageBlobs } from './images/image-blobs.ts';
import { sweepOrphanFiles } from './storage/orphan-files.ts';
import type { EntityManager } from '@mikro-orm/postgresql';
import { FileUrls } from './storage/file-urls.ts';
import { UrlSigner } from './storage/signed-url.ts';
import type { Storage } from './storage/storage.ts';
import { openBlobStore } from './storage/store-from-config.ts';
import { scheduleTrashPurge } from './trash/trash-purge.ts';
import { scheduleAuditPurge } from './audit/audit-purge.ts';
import { AuditRecorder } from './audit/audit-recorder.ts';
import { UploadService } from './uploads/upload.service.ts';
import { HOST_COMMAND_JOB, hostCommandJob } from './scheduler/host-job-kinds.ts';
import { HostScheduler } from './scheduler/host-scheduler.ts';
import { scheduleRunExpiry } from './training/run-expiry.ts';
import { TRAINING_JOB } from './training/training-payload.ts';
import { TrainingJob } from './training/training.job.ts';
import { ExportWaits } from './exports/export-waits.ts';
import { EXPORT_JOB, ExportJob } from './exports/export.job.ts';
import { ExportService } from './exports/export.service.ts';
import { queueOnnxOnWeights } from './predict/weights-arrived.ts';
import { DeploymentJob } from './deployments/deployment.job.ts';
import { DEPLOYMENT_JOB } from './deployments/deployment-rollout.ts';
import { CameraSync } from './deployments/deployment-camera.ts';
import { scheduleDeploymentSweep } from './deployments/deployment-sweep.ts';
import { DeploymentUpstreams } from './deployments/deployment-upstreams.ts';
import { DeploymentTraffic } from './deployments/deployment-traffic.ts';
import type { DeploymentRouter } from './deployments/deployment-router.ts';
import { OnnxPredictor } from './predict/onnx-predictor.ts';
import { FolderRelay } from './workers/host-folder-relay.ts';
import { HostFolders } from './workers/host-folders.ts';
import { WorkerGateway } from './workers/worker-socket.ts';

export interface RunningServer {
  url: string;
  server: Server;
  orm: Orm;
  log: Logger;
  storage: Storage;
  /** Where deployments' requests go (their live servers; a deployment scaled to zero is woken). */
  deploymentRouter: DeploymentRouter;
  /** Folder requests to the worker hosts connected to this process (local storage). */
  hostFolders: HostFolders;
  /** Drains requests, closes the pool and stops the embedded database. */
  close(): Promise<void>;
}

/** The secret fields of each storage provider's credentials. */
const SECRET_FIELDS = [
  'secretAccessKey',
  'sessionToken',
  'accountKey',
  'sasToken',
  'hmacSecret',
  'serviceAccountKey',
  'private_key',
];
/** Storage credentials are redacted wherever an object carrying them is logged (a request body, an error's details). */
const REDACTED = [
  'req.headers.authorization',
  'key',
  'secret',
  'credentials',
  '*.credentials',
  ...SECRET_FIELDS.flatMap((field) => [field, `*.${field}`]),
];

/** `destination`: where the JSON lines go (standard output by default). */
export function createLogger(config: Pick<AppConfig, 'logLevel'>, destination?: DestinationStream): Logger {
  const options = { level: config.logLevel, base: { service: 'control-plane' }, redact: REDACTED };
  return destination ? pino(options, destination) : pino(options);
}

/**
 * Opens the database (embedded unless DATABASE_URL is set) and applies migrations (`applied`: their names), unless
 * `migrations: 'leave'` (an operator's check or backup looks at the database as it is).
 */
export async function openDatabase(
  config: AppConfig,
  log: Logger,
  options: { migrations?: 'apply' | 'leave' } = {},
): Promise<{ orm: Orm; url: string; embedded?: EmbeddedDatabase; applied: string[] }> {
  const embedded = config.databaseUrl
    ? undefined
    : await startEmbeddedPostgres(config.dataDir, config.embeddedPostgresPort, log);
  const url = config.databaseUrl ?? embedded!.url;
  let orm: Orm | undefined;
  try {
    orm = await initORM(url);
    attachApplianceSecret(orm, () => resolveSigningSecret(config));
    const applied = options.migrations === 'leave' ? [] : await migrate(orm);
    return { orm, url, embedded, applied };
  } catch (error) {
    // Leave nothing running behind a failed start (a temporarily started embedded server included).
    await orm?.close();
    await embedded?.stop();
    throw error;
  }
}

/**
 * load config → database → migrate → first-start bootstrap → listen. `predictor` replaces the process's inference
 * (tests of what is built on predictions pass one over their own exports).
 */
export async function startServer(
  config: AppConfig,
  options: { log?: Logger; routes?: RouteDefinition[]; predictor?: Predictor } = {},
): Promise<RunningServer> {
  const log = options.log ?? createLogger(config);
  mkdirSync(config.dataDir, { recursive: true, mode: 0o755 });
  const secret = resolveSigningSecret(config);
  const { orm, url: databaseUrl, embedded } = await openDatabase(config, log);
  await bootstrapFirstStart(orm, config, log);

  const notifications = new Notifications(databaseUrl, log);
  const rateLimiter = new RateLimiter(orm.em, {
    windowSeconds: config.rateLimitWindowSeconds,
    limits: config.rateLimits,
  });
  const authenticator = new Authenticator(orm.em, log, {
    failures: {
      limiter: rateLimiter,
      perWindow: config.authFailureLimit,
      windowSeconds: config.rateLimitWindowSeconds,
    },
  });
  authenticator.listen(notifications);
  const summaryFigures = new SummaryFigures(orm.em);
  summaryFigures.listen(notifications);
  const exportWaits = new ExportWaits();
  exportWaits.listen(notifications);
  const pruneTimer = setInterval(
    () => void rateLimiter.prune().catch((error) => log.warn({ err: error }, 'rate-limit prune failed')),
    60_000,
  );
  pruneTimer.unref();

  let baseUrl = config.publicBaseUrl;
  const store = await openBlobStore(config.storageUrl, config.dataDir);
  const signer = new UrlSigner(secret, () => baseUrl);
  const outbound = new OutboundPolicy(config.outboundAllowedNetworks);
  // Folder requests to worker hosts (local storage), through their sockets on this replica or another.
  const hostFolders = new HostFolders(() => orm.em.fork() as EntityManager);
  const integrations = new IntegrationAccess({ secret, outbound, hostFolders });
  const storage: Storage = {
    store,
    signer,
    urls: new FileUrls(store, signer),
    references: new ReferencedImages(() => orm.em.fork() as EntityManager, integrations),
  };
  const faces = new FaceDetector(config.faceDetectorPath);
  // Counted only where something scrapes them (METRICS_TOKEN set): otherwise no request pays for them.
  const metrics = config.metricsToken ? new AppMetrics(RELEASE_VERSION) : undefined;
  const ingest = new IngestJob(storage, outbound, faces, integrations, (bytes) => metrics?.ingestBytes.inc(bytes));
  // What a process killed mid-ingest or mid-upload left on disk: at start (most likely after such a crash) and hourly.
  const sweepLeftovers = () =>
    Promise.all([
      ingest
        .sweepWorkDirs(orm.em.fork() as EntityManager)
        .catch((error) => log.warn({ err: error }, 'ingest work folder sweep failed')),
      store.sweepInterrupted().catch((error) => log.warn({ err: error }, 'temp file sweep failed')),
    ]);
  await sweepLeftovers();
  const sweepTimer = setInterval(() => {
    new UploadService(orm.em.fork(), storage)
      .sweepExpired()
      .catch((error) => log.warn({ err: error }, 'upload sweep failed'));
    sweepOrphanImageBlobs(orm.em.fork() as EntityManager, storage).catch((error) =>
      log.warn({ err: error }, 'image sweep failed'),
    );
    sweepOrphanFiles(orm.em.fork() as EntityManager, storage).catch((error) =>
      log.warn({ err: error }, 'file sweep failed'),
    );
    void sweepLeftovers();
  }, 3600_000);
  sweepTimer.unref();
  const purgeTask = scheduleTrashPurge(() => orm.em.fork() as EntityManager, storage, log);
  const audit = new AuditRecorder(() => orm.em.fork() as EntityManager, log);
  const auditPurge = scheduleAuditPurge(() => orm.em.fork() as EntityManager, config.auditRetentionDays, log);
  const runExpiry = scheduleRunExpiry(
    () => orm.em.fork() as EntityManager,
    { silenceSeconds: config.trainingRunSilenceSeconds, cancelGraceSeconds: config.trainingCancelGraceSeconds },
    log,
  );
  const exportsIn = (em: EntityManager) => new ExportService(em, { config, storage, lifecycle });
  const hostJobs = {
    [HOST_COMMAND_JOB]: hostCommandJob,
    [TRAINING_JOB]: new TrainingJob(config, storage, (em) => queueOnnxOnWeights(em, () => exportsIn(em))),
    [EXPORT_JOB]: new ExportJob(storage),
    [DEPLOYMENT_JOB]: new DeploymentJob(storage, config),
    [EMBEDDING_CHUNK_JOB]: new EmbeddingChunkJob(storage),
  };
  const lifecycle = new JobLifecycle(hostJobs, log);
  const fork = () => orm.em.fork() as EntityManager;
  const deploymentSweep = scheduleDeploymentSweep(
    fork,
    { lifecycle, idleSeconds: config.deploymentIdleSeconds, cameras: new CameraSync() },
    log,
  );
  const deploymentRouter = new DeploymentUpstreams(fork, exportsIn, { wakeSeconds: config.deploymentWakeSeconds, log });
  deploymentRouter.listen(notifications);
  const deploymentTraffic = new DeploymentTraffic(deploymentRouter, {
    fork,
    timeoutSeconds: config.deploymentTimeoutSeconds,
    secret,
    log,
    metrics,
  });
  const predictor = options.predictor ?? new OnnxPredictor({ config, storage, lifecycle });
  const embedder = new ImageEmbedder({
    modelPath: config.embeddingModelPath,
    mean: config.embeddingMean,
    std: config.embeddingStd,
  });
  const vectorIndex = new VectorIndex(fork, { dir: join(config.dataDir, 'vector-index') });
  const controlPlaneJobs = {
    [INGEST_JOB]: ingest,
    [BATCH_PREDICT_JOB]: new BatchPredictJob(storage, predictor, config, faces),
    [EMBEDDINGS_JOB]: new EmbeddingJob(
      storage,
      embedder,
      new HostEmbedding(storage, lifecycle, {
        placement: config.embeddingPlacement,
        graceSeconds: config.hostLostGraceSeconds,
      }),
      { layoutSample: config.embeddingLayoutSample },
    ),
    [FACE_BLUR_JOB]: new FaceBlurJob(storage, faces),
  };
  const jobs = new JobRunner(orm, controlPlaneJobs, {
    log,
    concurrency: config.jobConcurrency,
    leaseSeconds: config.jobLeaseSeconds,
    lifecycle,
  });
  jobs.listen(notifications);
  const scheduler = new HostScheduler(orm, hostJobs, { log, graceSeconds: config.hostLostGraceSeconds, lifecycle });
  scheduler.listen(notifications);
  const workers = new WorkerGateway(orm, log, {
    heartbeatSeconds: config.workerHeartbeatSeconds,
    scheduler,
    folders: hostFolders,
    trustProxy: config.trustProxy,
  });
  workers.listen(notifications);
  hostFolders.listen(notifications, (local) => new FolderRelay(fork, workers.replica, local, log));
  await notifications.start();

  // Process-wide objects (outbound policy and its agents, the secret, integration access) are built once above and shared by every request.
  const app = createApp({
    config,
    orm,
    log,
    authenticator,
    rateLimiter,
    summaryFigures,
    storage,
    lifecycle,
    predictor,
    embedder,
    vectorIndex,
    deploymentRouter,
    deploymentTraffic,
    hostFolders,
    outbound,
    secret,
    integrationAccess: integrations,
    audit,
    exportWaits,
    routes: options.routes,
    metrics,
    scrapeFigures:
      metrics &&
      new ScrapeFigures(metrics.gauges, {
        graceSeconds: config.hostLostGraceSeconds,
        dataDir: config.dataDir,
        pool: () => orm.em.getConnection().getNativeClient(),
      }),
  });
  // Handlers of requests whose client went away keep running; shutdown waits for them before closing the pool.
  const handle = app.callback();
  const inFlight = new Set<Promise<void>>();
  const server = createServer((req, res) => {
    const handled = handle(req, res).finally(() => inFlight.delete(handled));
    inFlight.add(handled);
  });
  server.keepAliveTimeout = 65_000;
  server.on('clientError', answerClientError);
  workers.attach(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, resolve);
  });
  const { port } = server.address() as AddressInfo;
  const url = config.port === 0 ? `http://127.0.0.1:${port}` : config.publicBaseUrl;
  baseUrl = url;
  const replica = await recordReplica(fork, secret, log);
  jobs.start();
  scheduler.start();

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      clearInterval(pruneTimer);
      clearInterval(sweepTimer);
      await purgeTask.destroy();
      await auditPurge.destroy();
      await runExpiry.stop();
      await deploymentSweep.stop();
      await scheduler.stop();
      // Upgraded sockets would hold server.close() open, and their hosts' last writes need the pool.
      await workers.close();
      exportWaits.close();
      const drained = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const grace = setTimeout(() => server.closeAllConnections(), config.shutdownGraceSeconds * 1000);
      await drained;
      await Promise.allSettled(inFlight);
      clearTimeout(grace);
      // Running jobs stop and go back to the queue, for this process after a restart or another replica; then the
      // inference they use (a batch auto-annotation, an analysis) closes.
      await jobs.stop();
      await predictor.close();
      await faces.close();
      await embedder.close();
      // The requests answered so far are recorded before the pool closes.
      await deploymentTraffic.close();
      await audit.close();
      await deploymentRouter.close();
      await replica.stop();
      authenticator.close();
      await notifications.stop();
      await orm.close();
      await store.close();
      await embedded?.stop();
    })());
  return { url, server, orm, log, storage, deploymentRouter, hostFolders, close };
}
