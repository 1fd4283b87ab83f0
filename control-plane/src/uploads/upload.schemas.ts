import { z } from 'zod';
import { ObjectId } from '../db/ids.ts';
import { UPLOAD_ASSET_TYPES } from './upload-session.entity.ts';

export const DATASET_ARCHIVE_SUFFIXES = ['.zip', '.tar', '.tar.gz', '.tgz', '.ndjson'] as const;
/** 1 TiB: far above any archive or checkpoint, low enough to catch a wrong number. */
export const MAX_UPLOAD_BYTES = 2 ** 40;
const Md5 = z
  .string()
  .regex(/^[0-9a-fA-F]{32}$/, 'must be 32 hexadecimal digits')
  .transform((hex) => hex.toLowerCase());

export const SignedUrlRequest = z
  .object({
    assetType: z.enum(UPLOAD_ASSET_TYPES, { error: 'must be datasets or models' }),
    assetId: ObjectId.meta({ description: 'Id of a dataset or model the key may edit' }),
    filename: z
      .string()
      .min(1)
      .max(256)
      // oxlint-disable-next-line no-control-regex -- control characters are what a plain file name must not hold
      .refine((name) => !/[/\\\x00-\x1f\x7f]/.test(name) && name !== '.' && name !== '..', 'must be a plain file name'),
    contentType: z
      .string()
      .max(255)
      .regex(/^[\w.+-]+\/[\w.+-]+$/, 'must be a media type such as application/zip'),
    totalBytes: z.number().int().min(1).max(MAX_UPLOAD_BYTES),
  })
  .refine(
    (body) =>
      body.assetType !== 'datasets' ||
      DATASET_ARCHIVE_SUFFIXES.some((suffix) => body.filename.toLowerCase().endsWith(suffix)),
    { path: ['filename'], message: `dataset uploads must end in ${DATASET_ARCHIVE_SUFFIXES.join(', ')}` },
  );

export const SignedUrlResponse = z.object({
  sessionId: ObjectId,
  uploadUrl: z.url().meta({ description: 'PUT the file here, with exactly the returned headers; no API key' }),
  expiresAt: z.iso.datetime(),
  headers: z
    .record(z.string(), z.string())
    .meta({ description: 'Headers the PUT must carry (Content-Type; If-None-Match: * for create-only dataset URLs)' }),
});

export const UploadPath = z.object({ sessionId: ObjectId });
export const UploadReceipt = z.object({
  success: z.literal(true),
  size: z.number().int(),
  md5: z.string().optional().meta({ description: 'Hex MD5, where the store computes it while streaming (S3)' }),
});

export const CompleteRequest = z.object({
  sessionId: ObjectId,
  md5: Md5.optional().meta({ description: 'Hex MD5 of the file; compared with what was stored' }),
  checksum: z
    .string()
    .max(128)
    .optional()
    .meta({ description: 'Model sessions: kept as model file metadata, not verified' }),
});

export const CompleteResponse = z.object({
  success: z.literal(true),
  file: z.object({ size: z.number().int(), contentType: z.string() }),
});
