import { z } from 'zod';
import { Handle, Slug } from '../account/handle.ts';
import { ClassId } from '../datasets/class.schemas.ts';
import { SplitName } from '../datasets/dataset.schemas.ts';
import { ObjectId } from '../db/ids.ts';
import { ErrorBody } from '../http/openapi.ts';
import { offsetQuery } from '../http/pagination.ts';
import { MetadataObject } from '../validation/metadata.ts';
import { LabelInput } from './labels.ts';

export const IMAGE_SORTS = [
  'newest',
  'oldest',
  'name-asc',
  'name-desc',
  'height-asc',
  'height-desc',
  'width-asc',
  'width-desc',
  'size-asc',
  'size-desc',
  'labels-asc',
  'labels-desc',
] as const;
export type ImageSort = (typeof IMAGE_SORTS)[number];
/** Labels per image in list previews (includeLabels). */
export const LABEL_PREVIEW_CAP = 50;
export const MAX_SELECTED_IDS = 1000;
export const MAX_URL_IDS = 100;
/** At most this many look-alikes follow the text matches of q. */
export const LOOK_ALIKE_LIMIT = 1000;

const Timestamp = z.iso.datetime();
const Boolish = z.stringbool();
const ClassIdList = z
  .string()
  .regex(/^\d+(,\d+)*$/, 'must be comma-separated class indexes such as 0,3')
  .transform((list) => [...new Set(list.split(',').map(Number))])
  .pipe(z.array(ClassId));

export const ImagePath = z.object({ imageId: ObjectId });

/** An image's content hash (SHA-256 of its bytes). */
export const ImageHash = z.string().regex(/^[0-9a-f]{64}$/, 'must be an image hash (64 hexadecimal characters)');

/** Filters, order and extras of the dataset images list (GET query; the POST form takes them as query too). */
export const ImageListQuery = offsetQuery(50, 5000).extend({
  cursor: ObjectId.optional().meta({
    description: 'The last image ID of the previous page (nextCursor); pages by keyset in any sort',
  }),
  includeTotal: Boolish.default(true),
  split: SplitName.optional(),
  hasLabel: Boolish.optional(),
  hasError: Boolish.optional(),
  classIds: ClassIdList.optional().meta({ description: 'Comma-separated class indexes; images containing any' }),
  search: z
    .string()
    .trim()
    .min(1)
    .max(200)
    .optional()
    .meta({ description: 'Substring of the file name, a class name or custom metadata' }),
  q: z
    .string()
    .trim()
    .min(1)
    .max(200)
    .optional()
    .meta({
      description:
        'Ranks by relevance instead of sort: the text matches (an image ID or hash finds that image; text ranks exact and prefix file-name matches first, ' +
        `then by similarity), then up to ${LOOK_ALIKE_LIMIT.toLocaleString('en-US')} look-alikes: images of this dataset passing the other filters that ` +
        'look most like the top text matches, nearest first, each once, never a text match. Look-alikes need the dataset analysis (POST .../embeddings); without it, text ' +
        'matches only. total counts both; page with offset (not cursor)',
    }),
  sort: z.enum(IMAGE_SORTS, { error: `must be one of ${IMAGE_SORTS.join(', ')}` }).default('newest'),
  includeThumbnails: Boolish.default(true),
  includeImageUrls: Boolish.default(false),
  includeLabels: Boolish.default(false).meta({ description: `Up to ${LABEL_PREVIEW_CAP} labels per image` }),
});
export type ImageListOptions = z.output<typeof ImageListQuery>;

export const ImageListItem = z.object({
  id: ObjectId,
  hash: z.string(),
  ext: z.string(),
  name: z.string(),
  thumbnailUrl: z
    .string()
    .optional()
    .meta({ description: 'With includeThumbnails; absent for an image that could not be processed' }),
  imageUrl: z.string().optional(),
  width: z.number().int(),
  height: z.number().int(),
  split: SplitName,
  labelCount: z.number().int(),
  classIds: z.array(z.number().int()),
  bytes: z.number().int(),
  error: z.string().nullable(),
  labels: z.array(LabelInput).optional(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

export const ImageList = z.object({
  images: z.array(ImageListItem),
  total: z
    .number()
    .int()
    .optional()
    .meta({ description: 'Images matching the filters; absent with includeTotal=false' }),
  hasMore: z.boolean(),
  classes: z
    .array(z.string())
    .meta({ description: "The dataset's class names in index order (a label's classId indexes it)" }),
  classColors: z.record(z.string(), z.string()).meta({ description: 'Class index → hex colour, for every class' }),
  errorCount: z.number().int().meta({ description: 'Images of the dataset that could not be processed' }),
  nextCursor: ObjectId.optional().meta({
    description: 'The last image ID of this page, when there are more (not with q)',
  }),
});

export const SelectedImagesBody = z.object({ imageIds: z.array(ObjectId).min(1).max(MAX_SELECTED_IDS) });

export const ImageDetail = z.object({
  id: ObjectId,
  dataset: z.object({ id: ObjectId, owner: Handle, dataset: Slug, task: z.string() }),
  metadata: z.record(z.string(), z.unknown()),
  properties: z.object({
    id: ObjectId,
    datasetId: ObjectId,
    filename: z.string(),
    hash: z.string(),
    ext: z.string(),
    extension: z.string().meta({ description: 'ext again, under the name the hosted service uses' }),
    annotationCount: z.number().int().meta({ description: 'labelCount again, under the name the hosted service uses' }),
    classIds: z.array(z.number().int()).meta({ description: 'The classes its labels use' }),
    retainedByVersion: z
      .boolean()
      .meta({ description: 'A saved version of the dataset holds this file, so its bytes outlive the image' }),
    width: z.number().int(),
    height: z.number().int(),
    channels: z.number().int(),
    split: SplitName,
    labelCount: z.number().int(),
    bytes: z.number().int(),
    error: z.string().nullable(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  }),
  labels: z.array(LabelInput),
  classNames: z.array(z.string()),
  imageUrl: z.string(),
  thumbnailUrl: z.string().optional().meta({ description: 'Absent for an image that could not be processed' }),
});

export const ImagePatch = z
  .strictObject({
    labels: z.array(LabelInput).meta({ description: 'Replaces every label of the image' }),
    metadata: MetadataObject.meta({ description: 'Replaces the custom metadata; {} clears it' }),
  })
  .partial()
  .refine(
    (body) => (body.labels === undefined) !== (body.metadata === undefined),
    'send either labels or metadata, not both',
  );
export const ImagePatched = z
  .object({
    success: z.literal(true),
    id: ObjectId,
    labelCount: z.number().int(),
    labels: z.array(LabelInput).optional().meta({ description: 'A labels update: the labels saved' }),
    metadata: z
      .record(z.string(), z.unknown())
      .optional()
      .meta({ description: 'A metadata update: the metadata saved' }),
    updatedAt: Timestamp.optional().meta({ description: 'A metadata update: when it was saved' }),
  })
  .meta({
    description:
      'A labels update answers success, labels, labelCount; a metadata update answers metadata and updatedAt too',
  });
export const ImageDeleted = z.object({
  success: z.literal(true),
  id: ObjectId,
  deletedImageId: ObjectId.meta({ description: 'id again, under the name the hosted service uses' }),
  deletedCount: z.literal(1),
});

export const BulkMoveBody = SelectedImagesBody.extend({
  split: SplitName,
  conflictPolicy: z
    .enum(['skip', 'keep_both', 'replace'], { error: 'must be skip, keep_both or replace' })
    .optional()
    .meta({
      description:
        'What to do with images whose file (same hash) is already in the target split: required once there is such a conflict (else 409)',
    }),
});
export const BulkMoved = z.object({
  success: z.literal(true),
  modifiedCount: z.number().int(),
  skippedCount: z.number().int(),
  targetSplit: SplitName,
});
export const BulkMoveConflict = ErrorBody.extend({
  conflictCount: z
    .number()
    .int()
    .optional()
    .meta({ description: 'Images whose file is already in the target split; absent for other conflicts' }),
});
export const BulkDeleteBody = SelectedImagesBody;
export const BulkDeleted = z.object({
  success: z.literal(true),
  deletedCount: z.number().int(),
  deletedImageIds: z.array(ObjectId),
});

export const ImageUrlsBody = z.object({ imageIds: z.array(ObjectId).min(1).max(MAX_URL_IDS) });
export const ImageUrlsResult = z.object({
  urls: z.record(z.string(), z.string()),
  thumbnails: z.record(z.string(), z.string()).meta({ description: 'Absent for an image that could not be processed' }),
  depths: z
    .record(z.string(), z.object({ previewUrl: z.string() }))
    .meta({ description: 'Depth map previews (depth datasets), only for images that have one: the others are absent' }),
});
