import type { EntityManager } from '@mikro-orm/postgresql';
import { resolveSigningSecret, type AppConfig } from '@vp/config';
import { AccountService } from './account/account.service.ts';
import type { SummaryFigures } from './account/summary-figures.ts';
import { WorkflowService } from './agents/workflow.service.ts';
import { AuditService } from './audit/audit.service.ts';
import type { AuditRecorder } from './audit/audit-recorder.ts';
import { ApiKeyService } from './auth/api-key.service.ts';
import { SessionService } from './auth/session.service.ts';
import { BillingService } from './billing/billing.service.ts';
import { AdoptService } from './datasets/adopt.service.ts';
import { ClassService } from './datasets/class.service.ts';
import { CloneService } from './datasets/clone.service.ts';
import { DatasetService } from './datasets/dataset.service.ts';
import { SplitService } from './datasets/split.service.ts';
import { VersionService } from './datasets/version.service.ts';
import { ImageIntake } from './images/image-intake.ts';
import { ImageService } from './images/image.service.ts';
import { EmbeddingService } from './embeddings/embedding.service.ts';
import type { ImageEmbedder } from './embeddings/image-embedder.ts';
import type { VectorIndex } from './embeddings/vector-index.ts';
import { SimilarImagesService } from './images/similar.service.ts';
import { ExploreService } from './explore/explore.service.ts';
import { DeploymentService } from './deployments/deployment.service.ts';
import type { DeploymentRouter } from './deployments/deployment-router.ts';
import type { DeploymentTraffic } from './deployments/deployment-traffic.ts';
import { DeploymentTrafficService } from './deployments/deployment-traffic.service.ts';
import type { ExportWaits } from './exports/export-waits.ts';
import { ExportService } from './exports/export.service.ts';
import { HealthCheckService } from './health/health-check.service.ts';
import { HostService } from './hosts/host.service.ts';
import { IntegrationAccess, type IntegrationDeps } from './integrations/integration-access.ts';
import { IntegrationService } from './integrations/integration.service.ts';
import type { HostFolders } from './workers/host-folders.ts';
import { IngestService } from './ingest/ingest.service.ts';
import { JobLifecycle } from './jobs/job-lifecycle.ts';
import { JobService } from './jobs/job.service.ts';
import { ModelSimilarService } from './models/model-similar.service.ts';
import { ModelService } from './models/model.service.ts';
import { ProjectService } from './projects/project.service.ts';
import type { RateLimiter } from './http/rate-limit.ts';
import { BatchPredictService } from './predict/batch-predict.service.ts';
import { ImagePredictService } from './predict/image-predict.service.ts';
import { ModelPredictService } from './predict/model-predict.service.ts';
import type { Predictor } from './predict/predictor.ts';
import { OutboundPolicy } from './net/outbound-policy.ts';
import { queueOnnxOnWeights, type WeightsArrived } from './predict/weights-arrived.ts';
import type { Storage } from './storage/storage.ts';
import { GpuAvailabilityService } from './training/gpu-availability.service.ts';
import { TrainingService } from './training/training.service.ts';
import { TrashService } from './trash/trash.service.ts';
import { UploadService } from './uploads/upload.service.ts';
import { CheckpointService } from './webhooks/checkpoint.service.ts';
import { TrainingEventsService } from './webhooks/training-events.service.ts';
import { JobCheckpointService } from './workers/job-checkpoint.service.ts';
import { JobOutputService } from './workers/job-output.service.ts';

export interface ServiceDeps {
  config: AppConfig;
  /** Absent where no file is touched (vpctl, first-start bootstrap). */
  storage?: Storage;
  /** The process's cache of the account summary's figures; absent outside the server (read uncached then). */
  summaryFigures?: SummaryFigures;
  /** For limits a service applies itself (version comparisons per user and dataset). */
  rateLimiter?: RateLimiter;
  /** Job status changes, settled with this process's host job kinds; absent (vpctl): a running control plane settles them. */
  lifecycle?: JobLifecycle;
  /** The process's inference (onnxruntime sessions); absent where nothing predicts (vpctl). */
  predictor?: Predictor;
  /** The image embedder dataset analysis runs (an onnxruntime session on its own thread); absent outside the server. */
  embedder?: ImageEmbedder;
  /** The process's nearest-neighbour index of image vectors (similar images); absent outside the server. */
  vectorIndex?: VectorIndex;
  /** Where deployments' requests go (their live servers, woken from zero); absent outside the server. */
  deploymentRouter?: DeploymentRouter;
  /** Deployments' requests (router, upstream connections, request records); absent outside the server. */
  deploymentTraffic?: DeploymentTraffic;
  /** Folder requests to the worker hosts connected to this process (local storage); absent outside the server. */
  hostFolders?: HostFolders;
  /** The process's outbound rules and their keep-alive agents, built once; absent (vpctl): built once per Services. */
  outbound?: OutboundPolicy;
  /** The appliance's signing secret, resolved once at start; absent (vpctl): resolved once per Services. */
  secret?: string;
  /** The process's access to saved integrations (credentials' cipher, providers), built once; absent (vpctl): once per Services. */
  integrationAccess?: IntegrationAccess;
  /** The process's audit log writer (the API's changes); absent (vpctl): the operator's changes are written at once. */
  audit?: AuditRecorder;
  /** Reads of exports waiting for them to end (GET …?wait=); absent outside the server (answered at once). */
  exportWaits?: ExportWaits;
}

/** The services of one request (or job, or CLI command), all on the same EntityManager fork. */
export class Services {
  private readonly deps: ServiceDeps;
  private forked: EntityManager | undefined;
  private readonly fork: (() => EntityManager) | undefined;
  private ownOutbound: OutboundPolicy | undefined;
  private ownSecret: string | undefined;
  private ownIntegrationDeps: IntegrationDeps | undefined;
  private ownIntegrationAccess: IntegrationAccess | undefined;

  /** `em`, or a function that forks one on first use: a request that reads no entity pays nothing for it. */
  constructor(em: EntityManager | (() => EntityManager), deps: ServiceDeps) {
    if (typeof em === 'function') this.fork = em;
    else this.forked = em;
    this.deps = deps;
  }

  get lifecycle(): JobLifecycle {
    return this.deps.lifecycle ?? new JobLifecycle();
  }

  get predictor(): Predictor {
    if (!this.deps.predictor) throw new Error('no predictor in this process');
    return this.deps.predictor;
  }

  get em(): EntityManager {
    return (this.forked ??= this.fork!());
  }

  /** One policy for every request: a kept-alive connection is reused only through the agents that opened it. */
  private get outbound(): OutboundPolicy {
    return this.deps.outbound ?? (this.ownOutbound ??= new OutboundPolicy(this.deps.config.outboundAllowedNetworks));
  }

  get account(): AccountService {
    return new AccountService(() => this.em, this.deps.config.region, this.deps.summaryFigures);
  }

  get audit(): AuditService {
    return new AuditService(this.em, this.deps.audit);
  }

  get apiKeys(): ApiKeyService {
    return new ApiKeyService(this.em);
  }

  /** Console sign-in: where browsers reach the appliance (PORT=0 resolved in the server) and the OIDC provider. */
  get sessionSettings(): { baseUrl: string; oidc: AppConfig['oidc'] } {
    return {
      baseUrl: this.deps.storage?.signer.baseUrl() ?? this.deps.config.publicBaseUrl,
      oidc: this.deps.config.oidc,
    };
  }

  get sessions(): SessionService {
    const { config, rateLimiter } = this.deps;
    return new SessionService(this.em, {
      config,
      baseUrl: this.sessionSettings.baseUrl,
      failures: rateLimiter && {
        limiter: rateLimiter,
        perWindow: config.authFailureLimit,
        windowSeconds: config.rateLimitWindowSeconds,
      },
    });
  }

  get storage(): Storage {
    if (!this.deps.storage) throw new Error('no blob store in this process');
    return this.deps.storage;
  }

  get datasets(): DatasetService {
    return new DatasetService(this.em, this.deps.config.region, this.storage);
  }

  get clones(): CloneService {
    return new CloneService(this.em, this.deps.config.region, this.storage);
  }

  get adoptions(): AdoptService {
    return new AdoptService(this.em, this.storage);
  }

  get classes(): ClassService {
    return new ClassService(this.em);
  }

  get splits(): SplitService {
    return new SplitService(this.em);
  }

  get versions(): VersionService {
    return new VersionService(this.em, this.storage, this.deps.rateLimiter);
  }

  get imagePredict(): ImagePredictService {
    return new ImagePredictService(this.em, this.storage, this.predictor);
  }

  get batchPredict(): BatchPredictService {
    return new BatchPredictService(this.em, {
      config: this.deps.config,
      lifecycle: this.lifecycle,
      storage: this.storage,
      predictor: this.predictor,
    });
  }

  get embeddings(): EmbeddingService {
    if (!this.deps.embedder) throw new Error('no image embedder in this process');
    return new EmbeddingService(this.em, { lifecycle: this.lifecycle, embedder: this.deps.embedder });
  }

  get similarImages(): SimilarImagesService {
    if (!this.deps.embedder || !this.deps.vectorIndex) throw new Error('no image embedder in this process');
    return new SimilarImagesService(this.em, {
      storage: this.storage,
      embedder: this.deps.embedder,
      index: this.deps.vectorIndex,
    });
  }

  get modelSimilar(): ModelSimilarService {
    if (!this.deps.embedder || !this.deps.vectorIndex) throw new Error('no image embedder in this process');
    return new ModelSimilarService(this.em, {
      storage: this.storage,
      embedder: this.deps.embedder,
      index: this.deps.vectorIndex,
    });
  }

  get images(): ImageService {
    const { embedder, vectorIndex } = this.deps;
    return new ImageService(
      this.em,
      this.storage,
      embedder && vectorIndex ? { embedder, index: vectorIndex } : undefined,
    );
  }

  /** How images get into a dataset (ingest and tests). */
  get imageIntake(): ImageIntake {
    return new ImageIntake(this.em, this.storage);
  }

  get hosts(): HostService {
    // In the server the address it serves at (PORT=0 resolved); vpctl has the configured one only.
    return new HostService(
      this.em,
      this.deps.storage?.signer.baseUrl() ?? this.deps.config.publicBaseUrl,
      this.lifecycle,
    );
  }

  /** The checks of `vpctl doctor`, run by this process on its own store (GET /api/health/checks). */
  get healthChecks(): HealthCheckService {
    return new HealthCheckService(this.em, {
      config: this.deps.config,
      store: this.storage.store,
      baseUrl: this.storage.signer.baseUrl(),
    });
  }

  get ingest(): IngestService {
    return new IngestService(this.em, this.integrationAccess);
  }

  /** The secret the server resolved at start (read from the data dir at most once per Services otherwise). */
  private get secret(): string {
    return this.deps.secret ?? (this.ownSecret ??= resolveSigningSecret(this.deps.config));
  }

  private get integrationDeps(): IntegrationDeps {
    return (this.ownIntegrationDeps ??= {
      secret: this.secret,
      outbound: this.outbound,
      hostFolders: this.deps.hostFolders,
    });
  }

  /** The process's integration access (the server's, also behind ingest and images read in place), or one per Services. */
  get integrationAccess(): IntegrationAccess {
    return this.deps.integrationAccess ?? (this.ownIntegrationAccess ??= new IntegrationAccess(this.integrationDeps));
  }

  get integrations(): IntegrationService {
    return new IntegrationService(this.em, this.integrationDeps);
  }

  get jobs(): JobService {
    return new JobService(this.em, this.lifecycle);
  }

  get uploads(): UploadService {
    return new UploadService(this.em, this.storage, this.weightsArrived);
  }

  /** A model got weights: its automatic ONNX export (what predict runs) is queued, not waited for. */
  private get weightsArrived(): WeightsArrived | undefined {
    return this.deps.storage && this.deps.lifecycle ? queueOnnxOnWeights(this.em, () => this.exports) : undefined;
  }

  get projects(): ProjectService {
    return new ProjectService(this.em, this.deps.config.region, this.lifecycle, this.weightsArrived);
  }

  get models(): ModelService {
    return new ModelService(this.em, this.deps.config.region, this.storage, this.lifecycle, this.weightsArrived);
  }

  get modelPredict(): ModelPredictService {
    return new ModelPredictService(this.em, this.predictor, {
      outbound: this.outbound,
      maxBytes: this.deps.config.predictMaxBytes,
    });
  }

  get exports(): ExportService {
    return new ExportService(this.em, {
      config: this.deps.config,
      storage: this.storage,
      lifecycle: this.lifecycle,
      waits: this.deps.exportWaits,
    });
  }

  get deployments(): DeploymentService {
    return new DeploymentService(this.em, {
      region: this.deps.config.region,
      lifecycle: this.lifecycle,
      exports: this.exports,
      baseUrl: this.storage.signer.baseUrl(),
      graceSeconds: this.deps.config.hostLostGraceSeconds,
    });
  }

  get deploymentRouter(): DeploymentRouter {
    if (!this.deps.deploymentRouter) throw new Error('no deployment router in this process');
    return this.deps.deploymentRouter;
  }

  get deploymentTraffic(): DeploymentTrafficService {
    if (!this.deps.deploymentTraffic) throw new Error('no deployment traffic in this process');
    return new DeploymentTrafficService(this.em, {
      traffic: this.deps.deploymentTraffic,
      outbound: this.outbound,
      maxBytes: this.deps.config.predictMaxBytes,
    });
  }

  get gpuAvailability(): GpuAvailabilityService {
    return new GpuAvailabilityService(this.em, this.deps.config.region, this.deps.config.hostLostGraceSeconds);
  }

  get explore(): ExploreService {
    return new ExploreService(this.em, this.storage);
  }

  get trash(): TrashService {
    return new TrashService(this.em, this.deps.config.region, this.storage);
  }

  get billing(): BillingService {
    return new BillingService(this.em, this.deps.config);
  }

  get training(): TrainingService {
    return new TrainingService(this.em, this.billing, this.versions, {
      graceSeconds: this.deps.config.hostLostGraceSeconds,
      cancelGraceSeconds: this.deps.config.trainingCancelGraceSeconds,
      lifecycle: this.lifecycle,
    });
  }

  get trainingEvents(): TrainingEventsService {
    return new TrainingEventsService(this.em, this.uploads, this.storage.signer.baseUrl(), this.weightsArrived);
  }

  get jobCheckpoints(): JobCheckpointService {
    return new JobCheckpointService(this.em, this.storage);
  }

  get jobOutputs(): JobOutputService {
    return new JobOutputService(this.em, this.storage, this.deps.config.jobOutputMaxBytes);
  }

  get checkpoints(): CheckpointService {
    return new CheckpointService(this.em, this.uploads);
  }

  get workflows(): WorkflowService {
    return new WorkflowService(this.em, this.deps.config.region);
  }
}

// The HTTP layer's context names no domain (http/app-context.ts); the handlers of a request reach every service.
declare module './http/app-context.ts' {
  interface RequestServices extends Services {}
}
