import { REGIONS } from '@vp/config';
import { z } from 'zod';
import { Handle, Slug } from '../account/handle.ts';
import { ObjectId } from '../db/ids.ts';
import { limitQuery } from '../http/pagination.ts';
import { TASKS } from '../images/labels.ts';
import { MetadataObject } from '../validation/metadata.ts';
import { StarChange } from '../validation/star-change.ts';
import { DATASET_FORMATS, SPLITS, VISIBILITIES } from './dataset.entity.ts';

export const MAX_CLASS_NAMES = 25_000;
export const MAX_CLASS_NAME = 256;
export const MAX_KEYPOINTS = 1000;
export const Region = z.enum(REGIONS);
export const Timestamp = z.iso.datetime();
export const Task = z.enum(TASKS, { error: `must be one of ${TASKS.join(', ')}` });
export const Visibility = z.enum(VISIBILITIES, { error: 'must be public or private' });
const Format = z.enum(DATASET_FORMATS, { error: `must be one of ${DATASET_FORMATS.join(', ')}` });
export const Tags = z
  .array(z.string().trim().min(1).max(50))
  .max(50)
  .meta({ description: 'Up to 50 tags of up to 50 characters' });
const ClassNames = z.array(z.string().trim().min(1).max(MAX_CLASS_NAME)).max(MAX_CLASS_NAMES).meta({
  description: 'Class names in index order; duplicates refused (case ignored for names longer than 2 characters)',
});
const BlurFaces = z.boolean().meta({
  description:
    'Faces found by the offline face detector (CenterFace) are blurred in the stored images and thumbnails: on ingest, and for the images already there ' +
    'by a background job when turned on. Originals are not kept: turning it off does not un-blur; re-ingest the originals (with it off) to undo. ' +
    'Versions saved before it was turned on keep their images as saved. Images whose faces cannot be checked (undecodable, over 50 megapixels) are not ingested.',
});
const HexColor = z.string().regex(/^#[0-9a-fA-F]{6}$/, 'must be a colour like #ff8800');
const Boolish = z.stringbool();

export const OwnerPath = z.object({ owner: Handle });
export const DatasetPath = OwnerPath.extend({ dataset: Slug });

export const Splits = z.object({
  train: z.number().int(),
  val: z.number().int(),
  test: z.number().int(),
  labeled: z.number().int(),
});

export const Sample = z.object({
  id: ObjectId,
  thumbnailUrl: z.string().nullable(),
  imageUrl: z.string().optional().meta({ description: 'With includeImageUrls' }),
  width: z.number().int(),
  height: z.number().int(),
});
/** A sample as the hosted service's client reads it (sampleImages): url is the thumbnail. */
export const SampleImage = z.object({
  url: z.string().meta({ description: 'Thumbnail URL' }),
  imageUrl: z.string().optional().meta({ description: 'With includeImageUrls' }),
  width: z.number().int(),
  height: z.number().int(),
});

export const DatasetListItem = z.object({
  id: ObjectId,
  owner: Handle,
  dataset: Slug,
  name: z.string(),
  description: z.string(),
  task: Task,
  visibility: Visibility,
  imageCount: z.number().int(),
  classCount: z.number().int(),
  classNames: z.array(z.string()),
  splits: Splits,
  annotationCount: z.number().int(),
  starCount: z.number().int(),
  isStarred: z.boolean(),
  status: z.string().meta({ description: 'ready; processing while an ingest runs' }),
  tags: z.array(z.string()),
  license: z.string().optional().meta({ description: 'Absent when none is set' }),
  iconColor: z.string().optional().meta({ description: 'Absent when none is set' }),
  iconLetter: z.string().optional().meta({ description: 'Absent when none is set' }),
  samples: z.array(Sample).optional().meta({ description: 'Up to 4 recent images, with includeSamples' }),
  sampleImages: z.array(SampleImage).optional().meta({
    description:
      'The same samples as the hosted service names them (images that could not be processed left out), with includeSamples',
  }),
  integrationProvider: z
    .enum(['gcs', 's3', 'azure', 'on-premise'])
    .optional()
    .meta({ description: 'Connected datasets: the storage their files are read from in place' }),
  integrationStatus: z
    .enum(['online', 'offline', 'disconnected'])
    .optional()
    .meta({ description: 'Connected datasets: disconnected once their storage integration is removed' }),
  integrationProcessing: z.boolean().optional().meta({
    description: "Connected datasets: whether AI features may read their files (the integration's processing)",
  }),
  integrationWritable: z
    .boolean()
    .optional()
    .meta({ description: 'Connected datasets: always false (their storage is never written)' }),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

export const DatasetListQuery = limitQuery(1000, 1000).extend({
  includeSamples: Boolish.default(true),
  includeImageUrls: Boolish.default(false),
});
export const DatasetList = z.object({ datasets: z.array(DatasetListItem), total: z.number().int(), region: Region });

export const ProcessingProgress = z.object({
  stage: z.string(),
  percent: z.number(),
  processed: z.number().int().optional(),
  total: z.number().int().optional(),
  objects: z.number().int().optional(),
});

const VersionSplits = z.object({
  train: z.number().int(),
  val: z.number().int(),
  test: z.number().int(),
  labeled: z.number().int(),
});
export const VersionEntry = z.object({
  version: z.number().int(),
  description: z.string().optional().meta({ description: 'Absent when none was given' }),
  imageCount: z.number().int(),
  classCount: z.number().int(),
  annotationCount: z.number().int(),
  splits: VersionSplits.meta({
    description: 'Images per split in the version; labeled: images with at least one label',
  }),
  createdAt: Timestamp,
});

export const DatasetDetail = DatasetListItem.omit({ samples: true, sampleImages: true }).extend({
  classColors: z.record(z.string(), z.string()).meta({ description: 'Class index → hex colour, for every class' }),
  format: Format,
  blurFaces: z.boolean(),
  kptSkeletonId: z.string().nullable(),
  // An array of length 2 rather than a tuple, whose prefixItems schemathesis misreads in responses.
  kptShape: z
    .array(z.number().int())
    .length(2)
    .optional()
    .meta({ description: '[keypoints per label, values per keypoint (2 or 3)]; pose datasets only' }),
  metadata: z.record(z.string(), z.unknown()),
  source: z
    .object({ provider: z.enum(['local', 'cloud']), keyId: z.string().optional() })
    .catchall(z.unknown())
    .optional()
    .meta({
      description:
        'Where the images came from, with format, filename, jobId, ingestedAt: provider cloud (indexed in place from a storage integration), ' +
        "local with keyId (a worker host's folder), or local (uploaded or fetched by this appliance); absent before the first ingest",
    }),
  versions: z.array(VersionEntry).meta({ description: 'Saved versions, oldest first, with their counts' }),
  errorCount: z.number().int(),
  region: Region,
  isOwner: z.boolean().meta({ description: 'The key belongs to the owning workspace' }),
  canEdit: z.boolean(),
  processingProgress: ProcessingProgress.optional().meta({
    description: 'Editors, while an import of 10,000 or more images runs',
  }),
});
export const DatasetRead = z.object({ dataset: DatasetDetail });

export const DatasetCreate = z.object({
  dataset: Slug,
  name: z.string().trim().min(1).max(100),
  description: z.string().max(1000).optional(),
  task: Task.default('detect'),
  classNames: ClassNames.optional(),
  format: Format.default('yolo'),
  visibility: Visibility.default('private'),
  blurFaces: BlurFaces.default(false),
  tags: Tags.optional(),
  license: z.string().max(64).optional(),
  metadata: MetadataObject.optional(),
  owner: Handle.optional().meta({ description: "Team handle; must be the key's own workspace (the default)" }),
});
export const DatasetCreated = z.object({ id: ObjectId, owner: Handle, dataset: Slug, region: Region });

export const DatasetPatch = z
  .object({
    name: z.string().trim().min(1).max(100),
    description: z.string().max(1000),
    visibility: Visibility,
    metadata: MetadataObject.meta({ description: 'Replaces the metadata object; {} clears it' }),
    tags: Tags,
    classNames: ClassNames.meta({
      description:
        'The current names in index order (renamed as needed) followed by any new classes; fewer names than now is 400',
    }),
    classColors: z
      .union([
        z.array(HexColor).max(MAX_CLASS_NAMES),
        z.record(z.string().regex(/^\d+$/, 'keys must be class indexes'), HexColor),
      ])
      .meta({ description: 'Colours in class order, or class index → colour for just the classes to change' }),
    format: Format,
    task: Task,
    license: z.string().max(64).nullable(),
    iconColor: z.string().max(32).nullable(),
    iconLetter: z.string().max(2).nullable(),
    starred: z.boolean().meta({ description: "Stars or unstars for the key's user; needs only read access" }),
    blurFaces: BlurFaces,
    kptSkeletonId: z.string().max(64).nullable(),
    kptShape: z.tuple([z.number().int().min(1).max(MAX_KEYPOINTS), z.union([z.literal(2), z.literal(3)])]).nullable(),
    initializeClassNames: ClassNames.meta({
      description: 'Sets the class list of a dataset with no classes or annotations (else 409)',
    }),
  })
  .partial()
  .strict();
export const DatasetPatched = z.object({
  success: z.literal(true),
  dataset: Slug.meta({ description: 'The current URL name' }),
  faceBlurJobId: ObjectId.optional().meta({
    description: 'blurFaces turned on for a dataset with images: the job blurring them (GET /api/jobs/{jobId})',
  }),
  ...StarChange,
});
export const DatasetDeleted = z.object({
  success: z.literal(true),
  dataset: Slug,
  deletedAt: Timestamp,
  daysRemaining: z.number().int(),
});

export const DatasetModels = z.object({
  models: z.array(
    z.object({
      id: ObjectId,
      owner: Handle,
      project: Slug,
      model: Slug,
      name: z.string(),
      status: z.string(),
      task: Task,
      epochs: z.number().int().nullable(),
      bestEpoch: z.number().int().nullable(),
      metrics: z.record(z.string(), z.number()).nullable(),
      startedAt: Timestamp.nullable(),
      completedAt: Timestamp.nullable(),
      createdAt: Timestamp,
    }),
  ),
  count: z.number().int(),
});

export const SplitName = z.enum(SPLITS, { error: 'must be train, val or test' });
