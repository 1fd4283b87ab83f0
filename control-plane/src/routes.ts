import { accountRoutes } from './account/account.routes.ts';
import { workflowRoutes } from './agents/workflow.routes.ts';
import { auditRoutes } from './audit/audit.routes.ts';
import { apiKeyRoutes } from './auth/api-key.routes.ts';
import { authSessionRoutes } from './auth/auth-session.routes.ts';
import { billingRoutes } from './billing/billing.routes.ts';
import { adoptRoutes } from './datasets/adopt.routes.ts';
import { classRoutes } from './datasets/class.routes.ts';
import { cloneRoutes } from './datasets/clone.routes.ts';
import { datasetRoutes } from './datasets/dataset.routes.ts';
import { embeddingRoutes } from './embeddings/embedding.routes.ts';
import { deploymentRoutes } from './deployments/deployment.routes.ts';
import { deploymentTrafficRoutes } from './deployments/deployment-traffic.routes.ts';
import { exploreRoutes } from './explore/explore.routes.ts';
import { exportRoutes } from './exports/export.routes.ts';
import { splitRoutes } from './datasets/split.routes.ts';
import { versionRoutes } from './datasets/version.routes.ts';
import { healthRoutes } from './health/health.routes.ts';
import { hostRoutes } from './hosts/host.routes.ts';
import type { RouteDefinition } from './http/define-route.ts';
import { imageRoutes } from './images/image.routes.ts';
import { similarRoutes } from './images/similar.routes.ts';
import { integrationRoutes } from './integrations/integration.routes.ts';
import { roboflowRoutes } from './integrations/roboflow/roboflow.routes.ts';
import { ingestRoutes } from './ingest/ingest.routes.ts';
import { jobRoutes } from './jobs/job.routes.ts';
import { modelRoutes } from './models/model.routes.ts';
import { batchPredictRoutes } from './predict/batch-predict.routes.ts';
import { imagePredictRoutes } from './predict/image-predict.routes.ts';
import { modelPredictRoutes } from './predict/model-predict.routes.ts';
import { projectRoutes } from './projects/project.routes.ts';
import { fileRoutes } from './storage/files.routes.ts';
import { referenceFileRoutes } from './images/reference-files.routes.ts';
import { trainingRoutes } from './training/training.routes.ts';
import { trashRoutes } from './trash/trash.routes.ts';
import { uploadRoutes } from './uploads/upload.routes.ts';
import { webhookRoutes } from './webhooks/webhook.routes.ts';
import { workerRoutes } from './workers/job-checkpoint.routes.ts';

/** Every API route; one list mounts them and documents them. */
export const routes: RouteDefinition[] = [
  ...healthRoutes,
  ...accountRoutes,
  ...apiKeyRoutes,
  ...auditRoutes,
  ...authSessionRoutes,
  ...uploadRoutes,
  ...fileRoutes,
  ...referenceFileRoutes,
  ...datasetRoutes,
  ...cloneRoutes,
  ...classRoutes,
  ...splitRoutes,
  ...versionRoutes,
  ...imageRoutes,
  ...similarRoutes,
  ...imagePredictRoutes,
  ...batchPredictRoutes,
  ...embeddingRoutes,
  ...adoptRoutes,
  ...ingestRoutes,
  ...jobRoutes,
  ...projectRoutes,
  ...modelRoutes,
  ...modelPredictRoutes,
  ...exportRoutes,
  ...deploymentRoutes,
  ...deploymentTrafficRoutes,
  ...trashRoutes,
  ...workflowRoutes,
  ...hostRoutes,
  ...trainingRoutes,
  ...billingRoutes,
  ...exploreRoutes,
  ...integrationRoutes,
  ...roboflowRoutes,
  ...webhookRoutes,
  ...workerRoutes,
];
