import { defineEntity, p } from '@mikro-orm/core';
import { Workspace } from '../account/workspace.entity.ts';
import { BaseSchema } from '../db/base.entity.ts';
import { PROVIDERS } from './providers/provider.ts';

/** A connected storage account of one workspace: which provider, which buckets, and its sealed credentials. */
export const StorageIntegrationSchema = defineEntity({
  name: 'StorageIntegration',
  tableName: 'storage_integrations',
  extends: BaseSchema,
  properties: {
    workspace: () => p.manyToOne(Workspace).deleteRule('cascade').index(),
    provider: p.enum(PROVIDERS),
    /** Who the credentials say they are (an access key id), shown in place of the credentials. */
    credentialIdentity: p.string().length(300),
    /** Buckets (or containers) the credentials were checked to read when connected. */
    targets: p.json<string[]>(),
    /** AI features (annotation, analysis, training) may read this storage's images. */
    processing: p.boolean().default(true),
    /** Which key sealed `credentials` (see CredentialCipher): rows under a retired key are re-sealed after a rotation. */
    credentialsKeyId: p.string().length(16).index(),
    /** AES-256-GCM: iv ‖ tag ‖ ciphertext of the provider's credentials object; never the plain text. */
    credentials: p.blob(),
  },
});
export class StorageIntegration extends StorageIntegrationSchema.class {}
StorageIntegrationSchema.setClass(StorageIntegration);
