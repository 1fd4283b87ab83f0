import { defineEntity, p } from '@mikro-orm/core';
import { Job } from '../jobs/job.entity.ts';

/**
 * An image an ingest job has decoded and stored but not yet added: the dataset changes only in the job's
 * final transaction, which moves every staged image in at once. A restarted job skips what is staged.
 */
export const StagedImageSchema = defineEntity({
  name: 'StagedImage',
  tableName: 'ingest_staged_images',
  properties: {
    job: () => p.manyToOne(Job).primary().deleteRule('cascade'),
    /** The normalized archive-relative path (or NDJSON file value): the item's identity within the job. */
    entryPath: p.string().length(1024).primary(),
    position: p.integer(),
    hash: p.string().length(64),
    ext: p.string().length(16),
    name: p.string().length(256),
    width: p.integer(),
    height: p.integer(),
    channels: p.integer(),
    bytes: p.bigint('number'),
    error: p.text().nullable(),
    split: p.string().length(8),
    /** Stored with its faces blurred (the dataset had blurFaces when the image was staged). */
    facesBlurred: p.boolean().default(false),
    /** Indexed in place: the version of the object the image was read from (see images.reference_version). */
    referenceVersion: p.string().length(300).nullable(),
    /** Labels with source class indexes (mapped to the dataset's classes at commit). */
    labels: p.json<unknown[]>(),
    metadata: p.json<Record<string, unknown>>(),
  },
});
export class StagedImage extends StagedImageSchema.class {}
StagedImageSchema.setClass(StagedImage);
