import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import { requireKey } from '../auth/access.ts';
import type { Actor } from '../auth/actor.ts';
import type { Storage } from '../storage/storage.ts';
import { UPLOAD_URL_HOURS, uploadPath } from '../uploads/upload.service.ts';
import { UploadSession } from '../uploads/upload-session.entity.ts';
import { modelFor } from './run-identity.ts';
import type { CheckpointUploadAnswer, CheckpointUploadRequest } from './webhook.schemas.ts';

/**
 * POST /api/webhooks/models/upload: a signed PUT URL for a trainer's checkpoint. The file stays staged until
 * checkpoint_saved (or training_complete) names it, then becomes the model's weights.
 */
export class CheckpointService {
  private readonly em: EntityManager;
  private readonly storage: Storage;

  constructor(em: EntityManager, storage: Storage) {
    this.em = em;
    this.storage = storage;
  }

  async issue(actor: Actor, request: z.output<typeof CheckpointUploadRequest>): Promise<z.input<typeof CheckpointUploadAnswer>> {
    const key = requireKey(actor);
    const model = await modelFor(this.em, key, request);
    const expiresAt = new Date(Date.now() + UPLOAD_URL_HOURS * 3600_000);
    const session = this.em.create(UploadSession, {
      workspace: model.workspace.id,
      assetType: 'models',
      assetId: model.id,
      filename: request.filename,
      contentType: 'application/octet-stream',
      totalBytes: null,
      objectKey: '',
      createOnly: false,
      expiresAt,
    });
    session.objectKey = `ws/${model.workspace.id}/models/${model.id}/checkpoints/${session.id}/${request.filename}`;
    await this.em.flush();
    const path = uploadPath(session.id);
    return { uploadUrl: this.storage.urls.own('PUT', path, expiresAt), gcsPath: session.id, uploadPath: path, expiresAt: expiresAt.toISOString() };
  }
}
