import { createHash } from 'node:crypto';
import { Transform, pipeline, type Readable } from 'node:stream';
import type { EntityManager } from '@mikro-orm/postgresql';
import { Invalid } from '../http/errors.ts';
import { recordJobOutput } from '../jobs/job-output.store.ts';
import { announcedSize } from '../storage/announced-size.ts';
import { BlobLengthMismatch } from '../storage/blob-store.ts';
import type { Storage } from '../storage/storage.ts';
import { forgetObject, recordUploadedObject } from '../storage/stored-object.store.ts';
import { runningAttempt } from './worker-job-access.ts';

/**
 * PUT /api/workers/jobs/{id}/outputs/{name}: one of a host job's outputs (JobSpec.outputs), uploaded by the host
 * running that attempt after the job exited 0 and before it reports it completed. Stored under the job and attempt,
 * hashed while it streams, then recorded (job_outputs; stored_objects, so it counts towards the workspace's storage);
 * an earlier attempt's object of the same name is deleted once the new one is recorded.
 */
export class JobOutputService {
  private readonly em: EntityManager;
  private readonly storage: Storage;
  private readonly maxBytes: number;

  constructor(em: EntityManager, storage: Storage, maxBytes: number) {
    this.em = em;
    this.storage = storage;
    this.maxBytes = maxBytes;
  }

  async receive(
    authorization: string | undefined,
    upload: { jobId: string; name: string; attempt: number },
    body: Readable,
    contentLength: string | undefined,
  ): Promise<{ success: true; size: number; sha256: string }> {
    const { jobId, name, attempt } = upload;
    const { workspaceId } = await runningAttempt(this.em, authorization, { id: jobId, attempt });
    const bytes = announcedSize(contentLength, this.maxBytes, 'A job output');
    const sha256 = createHash('sha256');
    const hashing = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        sha256.update(chunk);
        done(null, chunk);
      },
    });
    // The store sees the body's errors (a dropped connection) through the hashing stream.
    const hashed = pipeline(body, hashing, () => {});
    // Per attempt: a later attempt's upload never overwrites the object an earlier one recorded, it replaces the record.
    const key = `ws/${workspaceId}/jobs/${jobId}/outputs/${attempt}/${name}`;
    const stored = await this.storage.store
      .put(key, hashed, { contentType: 'application/octet-stream', expectedBytes: bytes, createOnly: false })
      .catch((error: unknown) => {
        if (error instanceof BlobLengthMismatch) throw Invalid(`The upload ${error.message}`);
        throw error;
      });
    const output = { jobId, name, attempt, storageKey: key, size: stored.size, sha256: sha256.digest('hex') };
    let replaced: string | null;
    try {
      // Locked: a job that ended or moved to another attempt while the bytes streamed records nothing.
      replaced = await this.em.fork().transactional(async (tx) => {
        await runningAttempt(tx, authorization, { id: jobId, attempt }, true);
        await recordUploadedObject(tx, workspaceId, 'exports', key, stored.size);
        const previous = await recordJobOutput(tx, output);
        if (previous) await forgetObject(tx, previous);
        return previous;
      });
    } catch (error) {
      await this.storage.store.delete(key);
      throw error;
    }
    if (replaced) await this.storage.store.delete(replaced);
    return { success: true, size: output.size, sha256: output.sha256 };
  }
}
