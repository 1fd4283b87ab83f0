import { defineEntity, p } from '@mikro-orm/core';
import { NamedResourceSchema } from '../db/named-resource.entity.ts';
import { TASKS } from '../images/labels.ts';

export const DATASET_FORMATS = ['yolo', 'coco', 'raw', 'ndjson'] as const;
export const VISIBILITIES = ['public', 'private'] as const;
export const SPLITS = ['train', 'val', 'test'] as const;
export type Split = (typeof SPLITS)[number];

/** Where a connected dataset's files are: the `reference` of the ingest that indexed it. */
export type DatasetReference =
  | { provider: 'cloud'; integrationId: string; target: string; prefix: string }
  | { provider: 'local'; keyId: string; root: string; prefix: string };

/**
 * A labeled image collection, addressed as /api/datasets/{owner}/{slug}. The counters are kept by the
 * image writers in the same transaction as the rows they count (see dataset-counters.ts); `revision`
 * moves on every content change so caches (class-stats) know when they are stale.
 */
export const DatasetSchema = defineEntity({
  name: 'Dataset',
  tableName: 'datasets',
  extends: NamedResourceSchema,
  uniques: [{ properties: ['workspace', 'slug'] }],
  indexes: [{ properties: ['visibility'] }],
  properties: {
    description: p.text().default(''),
    task: p.enum(TASKS).default('detect'),
    format: p.enum(DATASET_FORMATS).default('yolo'),
    visibility: p.enum(VISIBILITIES).default('private'),
    blurFaces: p.boolean().default(false),
    tags: p.json<string[]>().default('[]'),
    license: p.string().length(64).nullable(),
    metadata: p.json<Record<string, unknown>>().default('{}'),
    classNames: p.json<string[]>().default('[]'),
    /** Hex colours aligned with classNames; filled with a palette colour where unset. */
    classColors: p.json<string[]>().default('[]'),
    iconColor: p.string().length(32).nullable(),
    iconLetter: p.string().length(2).nullable(),
    kptSkeletonId: p.string().length(64).nullable(),
    /** Pose datasets: [keypoints, dims] (dims 2 or 3), as in a YOLO data.yaml kpt_shape. */
    kptShape: p.json<[number, number]>().nullable(),
    status: p.string().length(32).default('ready'),
    /** Where the images came from (ingest fills it). */
    source: p.json<Record<string, unknown>>().nullable(),
    imageCount: p.integer().default(0),
    annotationCount: p.integer().default(0),
    trainCount: p.integer().default(0),
    valCount: p.integer().default(0),
    testCount: p.integer().default(0),
    labeledCount: p.integer().default(0),
    errorCount: p.integer().default(0),
    starCount: p.integer().default(0),
    revision: p.integer().default(0),
    statsCache: p.json<Record<string, unknown>>().nullable().lazy(),
    statsRevision: p.integer().nullable(),
    /** The NDJSON export of the current state, and the revision it was written at (reused while unchanged). */
    exportKey: p.string().length(1024).nullable(),
    exportRevision: p.integer().nullable(),
    /**
     * Set on a connected dataset: its images are indexed in place in a storage integration's bucket or a worker
     * host's folder and read from there on demand; such a dataset is read-only where the spec says so.
     */
    reference: p.json<DatasetReference>().nullable(),
    /** Set while the dataset is in trash; its slug stays taken. */
    deletedAt: p.datetime().nullable(),
  },
});
export class Dataset extends DatasetSchema.class {}
DatasetSchema.setClass(Dataset);
