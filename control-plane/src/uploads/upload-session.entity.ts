import { defineEntity, p } from '@mikro-orm/core';
import { Workspace } from '../account/workspace.entity.ts';
import { BaseSchema } from '../db/base.entity.ts';

export const UPLOAD_ASSET_TYPES = ['datasets', 'models'] as const;
export type UploadAssetType = (typeof UPLOAD_ASSET_TYPES)[number];

/** pending: URL issued, no file yet · uploaded: the PUT stored the file · completed: the client confirmed it. */
export const UPLOAD_STATUSES = ['pending', 'uploaded', 'completed'] as const;

/** One signed-URL upload: what may be PUT where, until when, and what arrived. */
export const UploadSessionSchema = defineEntity({
  name: 'UploadSession',
  tableName: 'upload_sessions',
  extends: BaseSchema,
  indexes: [{ properties: ['workspace', 'status'] }, { properties: ['expiresAt'] }],
  properties: {
    workspace: () => p.manyToOne(Workspace).deleteRule('cascade'),
    assetType: p.enum(UPLOAD_ASSET_TYPES),
    assetId: p.string().length(24),
    filename: p.string().length(256),
    contentType: p.string().length(255),
    /** Null for a training checkpoint, whose size the trainer does not announce: the PUT's Content-Length decides. */
    totalBytes: p.bigint('number').nullable(),
    objectKey: p.string().length(1024),
    /** A second PUT is refused with 412 (dataset archives). */
    createOnly: p.boolean(),
    status: p.enum(UPLOAD_STATUSES).default('pending'),
    expiresAt: p.datetime(),
    /** Hex MD5 of what the PUT stored: from the store while streaming, or read back once a completion asks. */
    storedMd5: p.string().length(32).nullable(),
    /** The md5 the completing client supplied, so a competing completion with another digest is a conflict. */
    completedMd5: p.string().length(32).nullable(),
    completedAt: p.datetime().nullable(),
  },
});
export class UploadSession extends UploadSessionSchema.class {}
UploadSessionSchema.setClass(UploadSession);
