import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import { requireKey } from '../auth/access.ts';
import type { Actor } from '../auth/actor.ts';
import { uploadPath, type UploadService } from '../uploads/upload.service.ts';
import { modelFor } from './run-identity.ts';
import type { CheckpointUploadAnswer, CheckpointUploadRequest } from './webhook.schemas.ts';

/**
 * POST /api/webhooks/models/upload: a signed PUT URL for a trainer's checkpoint. The file stays staged until
 * checkpoint_saved (or training_complete) names it, then becomes the model's weights.
 */
export class CheckpointService {
  private readonly em: EntityManager;
  private readonly uploads: UploadService;

  constructor(em: EntityManager, uploads: UploadService) {
    this.em = em;
    this.uploads = uploads;
  }

  async issue(
    actor: Actor,
    request: z.output<typeof CheckpointUploadRequest>,
  ): Promise<z.input<typeof CheckpointUploadAnswer>> {
    const key = requireKey(actor);
    const model = await modelFor(this.em, key, request);
    const { session, uploadUrl, expiresAt } = await this.uploads.open({
      workspaceId: model.workspace.id,
      assetType: 'models',
      assetId: model.id,
      filename: request.filename,
      contentType: 'application/octet-stream',
      totalBytes: null,
      createOnly: false,
      folder: 'checkpoints',
    });
    return {
      uploadUrl,
      gcsPath: session.id,
      uploadPath: uploadPath(session.id),
      modelId: model.id,
      expiresAt: expiresAt.toISOString(),
    };
  }
}
