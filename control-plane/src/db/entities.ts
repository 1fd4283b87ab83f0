import { Membership } from '../account/membership.entity.ts';
import { ResourceCount } from '../account/resource-count.entity.ts';
import { CreditBalance } from '../billing/credit-balance.entity.ts';
import { CreditTransaction } from '../billing/credit-transaction.entity.ts';
import { User } from '../account/user.entity.ts';
import { Workspace } from '../account/workspace.entity.ts';
import { ApiKey } from '../auth/api-key.entity.ts';
import { DatasetStar } from '../datasets/dataset-star.entity.ts';
import { Dataset } from '../datasets/dataset.entity.ts';
import { DatasetVersionImage } from '../datasets/dataset-version-image.entity.ts';
import { DatasetVersion } from '../datasets/dataset-version.entity.ts';
import { StorageIntegration } from '../integrations/integration.entity.ts';
import { StagedImage } from '../ingest/staged-image.entity.ts';
import { JobLogLine } from '../jobs/job-log.entity.ts';
import { ConsoleChunk, TrainingEpoch, TrainingRun } from '../training/training-run.entity.ts';
import { Job } from '../jobs/job.entity.ts';
import { Annotation } from '../images/annotation.entity.ts';
import { ImageClassSet } from '../images/image-class-set.entity.ts';
import { Image } from '../images/image.entity.ts';
import { Model } from '../models/model.entity.ts';
import { ProjectStar } from '../projects/project-star.entity.ts';
import { Project } from '../projects/project.entity.ts';
import { ModelStar } from '../models/model-star.entity.ts';
import { Workflow } from '../agents/workflow.entity.ts';
import { EnrollmentToken } from '../hosts/enrollment-token.entity.ts';
import { Host } from '../hosts/host.entity.ts';
import { WorkerKey } from '../hosts/worker-key.entity.ts';
import { StoredObject } from '../storage/stored-object.entity.ts';
import { UploadSession } from '../uploads/upload-session.entity.ts';
import { BaseSchema } from './base.entity.ts';
import { NamedResourceSchema } from './named-resource.entity.ts';

/** Every entity the ORM knows; a new domain adds its own here. */
export const entities = [
  BaseSchema,
  NamedResourceSchema,
  User,
  Workspace,
  Membership,
  ApiKey,
  StoredObject,
  Dataset,
  DatasetStar,
  DatasetVersion,
  DatasetVersionImage,
  Image,
  ImageClassSet,
  Annotation,
  Job,
  JobLogLine,
  StagedImage,
  Project,
  ProjectStar,
  Model,
  ModelStar,
  Workflow,
  UploadSession,
  Host,
  EnrollmentToken,
  WorkerKey,
  CreditTransaction,
  CreditBalance,
  ResourceCount,
  TrainingRun,
  TrainingEpoch,
  ConsoleChunk,
  StorageIntegration,
];
