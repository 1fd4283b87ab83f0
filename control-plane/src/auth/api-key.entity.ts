import { defineEntity, p } from '@mikro-orm/core';
import { User } from '../account/user.entity.ts';
import { Workspace } from '../account/workspace.entity.ts';
import { BaseSchema } from '../db/base.entity.ts';

/** What a job key may reach: its job, the model it trains, and the resources (ids) the trainer reads. */
export interface JobScope {
  jobId: string;
  modelId: string;
  /** Datasets, projects and models the trainer may read: the training dataset, the model and its project, base weights. */
  resourceIds: string[];
  /** With captureDatasetVersion: the saved version of its dataset the trainer reads instead of the live state. */
  datasetVersion?: number;
}

/** An API key; the key itself is never stored, only its SHA-256 and its display prefix. */
export const ApiKeySchema = defineEntity({
  name: 'ApiKey',
  tableName: 'api_keys',
  extends: BaseSchema,
  properties: {
    workspace: () => p.manyToOne(Workspace).deleteRule('cascade'),
    /** Whose permissions the key carries: the workspace owner, or a member it was issued for. */
    user: () => p.manyToOne(User).deleteRule('cascade'),
    name: p.string().length(100),
    keyHash: p.string().length(64).unique(),
    prefix: p.string().length(11).index(),
    lastUsedAt: p.datetime().nullable(),
    /** Set on a key minted for one training job: it reaches only that job's resources and webhooks. */
    jobScope: p.json<JobScope>().nullable(),
    /** Set on a deployment's own key (its apiKeyId): it reaches that deployment's predict and service URL only. */
    deploymentId: p.string().length(24).nullable(),
    /** Job keys stop working at this time even if their job never ends (a backstop; they are deleted when it does). */
    expiresAt: p.datetime().nullable(),
  },
});
export class ApiKey extends ApiKeySchema.class {}
ApiKeySchema.setClass(ApiKey);
