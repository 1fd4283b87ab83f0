import type { Readable } from 'node:stream';
import type { EntityManager } from '@mikro-orm/postgresql';
import { Conflict } from '../http/errors.ts';
import { announcedSize } from '../storage/announced-size.ts';
import type { Storage } from '../storage/storage.ts';
import { recordUploadedObject } from '../storage/stored-object.store.ts';
import { newestRunOfJob, setResumeKey } from '../training/training-run.store.ts';
import { runningAttempt } from './worker-job-access.ts';

/**
 * PUT /api/workers/jobs/{id}/checkpoint: a worker host's upload of a running training's last.pt (worker-key auth;
 * only the host running that attempt). Kept under one key per job, replaced by each upload, and recorded on the
 * job's newest run: a requeued attempt resumes from it.
 */
export class JobCheckpointService {
  private readonly em: EntityManager;
  private readonly storage: Storage;

  constructor(em: EntityManager, storage: Storage) {
    this.em = em;
    this.storage = storage;
  }

  async receive(
    authorization: string | undefined,
    jobId: string,
    attempt: number,
    body: Readable,
    contentLength: string | undefined,
  ): Promise<{ success: true; size: number }> {
    const job = await runningAttempt(this.em, authorization, { id: jobId, attempt, kind: 'training' });
    const run = await newestRunOfJob(this.em, jobId);
    if (!run) throw Conflict('The trainer has not reported its start yet');
    const bytes = announcedSize(contentLength);
    const key = `ws/${job.workspaceId}/models/${job.subjectId}/checkpoints/job-${jobId}/last.pt`;
    const stored = await this.storage.store.put(key, body, {
      contentType: 'application/octet-stream',
      expectedBytes: bytes,
      createOnly: false,
    });
    await recordUploadedObject(this.em, job.workspaceId, 'modelFiles', key, stored.size);
    await setResumeKey(this.em, run.id, key);
    return { success: true, size: stored.size };
  }
}
