import type { Readable } from 'node:stream';
import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import { requireKey, requireRole } from '../auth/access.ts';
import type { Actor } from '../auth/actor.ts';
import { Dataset } from '../datasets/dataset.entity.ts';
import { Conflict, HttpError, Invalid, NotFound } from '../http/errors.ts';
import { Model } from '../models/model.entity.ts';
import { BlobExists, BlobLengthMismatch } from '../storage/blob-store.ts';
import { md5Of } from '../storage/md5-of.ts';
import type { WeightsArrived } from '../predict/weights-arrived.ts';
import type { Storage } from '../storage/storage.ts';
import { announcedSize } from '../storage/announced-size.ts';
import { StoredObject } from '../storage/stored-object.entity.ts';
import type {
  CompleteRequest,
  CompleteResponse,
  SignedUrlRequest,
  SignedUrlResponse,
  UploadReceipt,
} from './upload.schemas.ts';
import { UploadSession, type UploadAssetType } from './upload-session.entity.ts';

/** Spec: upload URLs are valid for 12 hours. */
export const UPLOAD_URL_HOURS = 12;
/** A file PUT but never completed is kept this long past the URL's expiry, then swept. */
const UNCOMPLETED_GRACE_HOURS = 24;

const STORED_KIND = { datasets: 'datasetArchives', models: 'modelFiles' } as const;

export const uploadPath = (sessionId: string) => `/api/upload/sessions/${sessionId}/file`;

/** Media type without parameters, lower-cased: `Application/Zip; charset=x` → `application/zip`. */
const mediaType = (header: string | undefined) => (header ?? '').split(';')[0].trim().toLowerCase();

/**
 * Signed-URL uploads: a session names what may be PUT (asset, file name, type, exact size) until when;
 * the PUT streams into the blob store (create-only for dataset archives); completion checks the digest
 * and hands the file to its asset.
 */
export class UploadService {
  private readonly em: EntityManager;
  private readonly storage: Storage;
  private readonly weightsArrived: WeightsArrived | undefined;

  /** `weightsArrived`: told when a completed upload gave a model weights (its automatic ONNX export is queued). */
  constructor(em: EntityManager, storage: Storage, weightsArrived?: WeightsArrived) {
    this.em = em;
    this.storage = storage;
    this.weightsArrived = weightsArrived;
  }

  async issue(actor: Actor, request: z.output<typeof SignedUrlRequest>): Promise<z.input<typeof SignedUrlResponse>> {
    const key = requireKey(actor);
    const workspaceId = await this.assetWorkspace(key.workspaceId, request.assetType, request.assetId);
    requireRole(actor, workspaceId, 'editor');
    const createOnly = request.assetType === 'datasets';
    const { session, uploadUrl, expiresAt } = await this.open({
      workspaceId,
      assetType: request.assetType,
      assetId: request.assetId,
      filename: request.filename,
      contentType: request.contentType.toLowerCase(),
      totalBytes: request.totalBytes,
      createOnly,
      folder: 'uploads',
    });
    return {
      sessionId: session.id,
      uploadUrl,
      expiresAt: expiresAt.toISOString(),
      headers: { 'Content-Type': session.contentType, ...(createOnly ? { 'If-None-Match': '*' } : {}) },
    };
  }

  /**
   * A new session and its signed PUT URL. The file goes under `ws/<workspace>/<assetType>/<asset>/<folder>/<session>/`:
   * `uploads` for the API's uploads, `checkpoints` for a trainer's.
   */
  async open(input: {
    workspaceId: string;
    assetType: UploadAssetType;
    assetId: string;
    filename: string;
    contentType: string;
    /** Null: the PUT's Content-Length decides (a trainer's checkpoint). */
    totalBytes: number | null;
    createOnly: boolean;
    folder: 'uploads' | 'checkpoints';
  }): Promise<{ session: UploadSession; uploadUrl: string; expiresAt: Date }> {
    const expiresAt = new Date(Date.now() + UPLOAD_URL_HOURS * 3600_000);
    const { workspaceId, folder, ...fields } = input;
    const session = this.em.create(UploadSession, { ...fields, workspace: workspaceId, objectKey: '', expiresAt });
    session.objectKey = `ws/${workspaceId}/${input.assetType}/${input.assetId}/${folder}/${session.id}/${input.filename}`;
    await this.em.flush();
    return { session, uploadUrl: this.storage.urls.own('PUT', uploadPath(session.id), expiresAt), expiresAt };
  }

  /** The asset's workspace; another workspace's asset is reported missing, never forbidden. */
  private async assetWorkspace(keyWorkspaceId: string, assetType: UploadAssetType, assetId: string): Promise<string> {
    const found =
      assetType === 'datasets'
        ? await this.em.count(Dataset, { id: assetId, workspace: keyWorkspaceId, deletedAt: null })
        : await this.em.count(Model, { id: assetId, workspace: keyWorkspaceId, deletedAt: null });
    if (!found) throw NotFound(`${assetType === 'datasets' ? 'Dataset' : 'Model'} ${assetId} not found`);
    return keyWorkspaceId;
  }

  /** The PUT to a signed upload URL (the signature was checked by the route). */
  async receive(
    sessionId: string,
    body: Readable,
    headers: { contentType?: string; ifNoneMatch?: string; contentLength?: string },
  ): Promise<z.input<typeof UploadReceipt>> {
    const session = await this.em.findOne(UploadSession, sessionId);
    if (!session) throw NotFound('Upload session not found');
    if (session.createOnly && session.status !== 'pending') throw createOnlyRefusal();
    if (session.status === 'completed') throw Conflict('This upload session is already completed');
    if (mediaType(headers.contentType) !== session.contentType) {
      throw Invalid(`Content-Type must be ${session.contentType}, as declared for this upload`);
    }
    if (session.createOnly && headers.ifNoneMatch?.trim() !== '*')
      throw Invalid('Missing header If-None-Match: * (returned with the upload URL)');
    const expectedBytes = session.totalBytes ?? announcedSize(headers.contentLength);
    if (headers.contentLength !== undefined && Number(headers.contentLength) !== expectedBytes) {
      throw Invalid(
        `Content-Length ${headers.contentLength} differs from the declared totalBytes ${session.totalBytes}`,
      );
    }
    const stored = await this.storage.store
      .put(session.objectKey, body, {
        contentType: session.contentType,
        expectedBytes,
        createOnly: session.createOnly,
        ownedChunks: true,
      })
      .catch((error: unknown) => {
        if (error instanceof BlobExists) throw createOnlyRefusal();
        if (error instanceof BlobLengthMismatch) {
          throw Invalid(
            `The body has ${error.received > error.expected ? 'more' : 'fewer'} bytes than the declared totalBytes ${error.expected}`,
          );
        }
        throw error;
      });
    session.status = 'uploaded';
    session.storedMd5 = stored.md5 ?? null;
    await this.recordStoredObject(session, stored.size);
    await this.em.flush();
    return { success: true, size: stored.size, ...(stored.md5 ? { md5: stored.md5 } : {}) };
  }

  private async recordStoredObject(session: UploadSession, bytes: number): Promise<void> {
    const existing = await this.em.findOne(StoredObject, { key: session.objectKey });
    if (existing) existing.bytes = bytes;
    else
      this.em.create(StoredObject, {
        workspace: session.workspace,
        kind: STORED_KIND[session.assetType],
        key: session.objectKey,
        bytes,
      });
  }

  async complete(actor: Actor, request: z.output<typeof CompleteRequest>): Promise<z.input<typeof CompleteResponse>> {
    const key = requireKey(actor);
    // Under a row lock, so competing completions are decided one after the other.
    const outcome = await this.em.transactional(async (em) => {
      const session = await em.findOne(
        UploadSession,
        { id: request.sessionId, workspace: key.workspaceId },
        { lockMode: LockMode.PESSIMISTIC_WRITE },
      );
      if (!session) throw NotFound('Upload session not found');
      requireRole(actor, key.workspaceId, 'editor');
      if (session.status === 'pending') throw Conflict('No file has been uploaded for this session yet');
      if (
        session.status === 'completed' &&
        request.md5 &&
        session.completedMd5 &&
        request.md5 !== session.completedMd5
      ) {
        throw Conflict('This upload was already completed with a different md5');
      }
      const head = await this.storage.store.head(session.objectKey);
      if (!head) throw Conflict('The uploaded file no longer exists; request a new upload URL');
      if (request.md5 && !session.storedMd5)
        session.storedMd5 = (await md5Of(this.storage.store, session.objectKey)) ?? null;
      if (request.md5 && request.md5 !== session.storedMd5) {
        if (session.status === 'completed') return { mismatch: true as const };
        // Not complete yet: drop the file so the same URL can take a correct one.
        session.status = 'pending';
        session.storedMd5 = null;
        await em.nativeDelete(StoredObject, { key: session.objectKey });
        return { mismatch: true as const, discard: session.objectKey };
      }
      const file = { size: head.size, contentType: head.contentType };
      if (session.assetType === 'datasets') {
        session.status = 'completed';
        session.completedMd5 = request.md5 ?? session.completedMd5 ?? null;
        session.completedAt ??= new Date();
        return { mismatch: false as const, file };
      }
      await this.attachToModel(em, session, head.size, request.checksum);
      em.remove(session);
      return { mismatch: false as const, file, modelId: session.assetId };
    });
    // Files are deleted only once the database no longer points at them.
    if (outcome.discard) await this.storage.store.delete(outcome.discard);
    if (outcome.mismatch) throw Invalid('md5 does not match the uploaded file');
    if (outcome.modelId) await this.weightsArrived?.([outcome.modelId]);
    return { success: true, file: outcome.file };
  }

  /**
   * The model's weights become this file. The file it had before is left to the hourly sweep of
   * unreferenced files: clones may share it, and the sweep deletes it only once no model refers to it.
   */
  /**
   * A training checkpoint PUT to its URL becomes the model's weights (checkpoint_saved, training_complete).
   * Returns the file's key, or null when no file arrived for that session.
   */
  async promoteCheckpoint(em: EntityManager, sessionId: string, modelId: string): Promise<string | null> {
    const session = await em.findOne(
      UploadSession,
      { id: sessionId, assetType: 'models', assetId: modelId },
      { lockMode: LockMode.PESSIMISTIC_WRITE },
    );
    if (!session || session.status !== 'uploaded') return null;
    const head = await this.storage.store.head(session.objectKey);
    if (!head) return null;
    await this.attachToModel(em, session, head.size, undefined);
    em.remove(session);
    return session.objectKey;
  }

  private async attachToModel(
    em: EntityManager,
    session: UploadSession,
    bytes: number,
    checksum: string | undefined,
  ): Promise<void> {
    const model = await em.findOne(Model, { id: session.assetId, workspace: session.workspace });
    if (!model) throw NotFound(`Model ${session.assetId} not found`);
    Object.assign(model, {
      fileKey: session.objectKey,
      fileBytes: bytes,
      fileContentType: session.contentType,
      fileMd5: session.storedMd5,
      fileChecksum: checksum ?? null,
    });
  }

  /**
   * Drops sessions whose URL expired without a file, and files PUT but never completed once a grace
   * period has passed; returns how many sessions went.
   */
  async sweepExpired(now = new Date()): Promise<number> {
    const graceCutoff = new Date(now.getTime() - UNCOMPLETED_GRACE_HOURS * 3600_000);
    const stale = await this.em.find(UploadSession, {
      $or: [
        { status: 'pending', expiresAt: { $lt: now } },
        { status: 'uploaded', expiresAt: { $lt: graceCutoff } },
      ],
    });
    for (const session of stale) {
      if (session.status === 'uploaded') {
        await this.storage.store.delete(session.objectKey);
        await this.em.nativeDelete(StoredObject, { key: session.objectKey });
      }
      this.em.remove(session);
    }
    await this.em.flush();
    return stale.length;
  }
}

function createOnlyRefusal(): HttpError {
  return new HttpError(412, 'This upload URL is create-only and a file was already uploaded to it');
}
