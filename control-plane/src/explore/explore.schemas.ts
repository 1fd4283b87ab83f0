import { z } from 'zod';
import { Handle, Slug } from '../account/handle.ts';
import { SampleImage, Task, Timestamp, Visibility } from '../datasets/dataset.schemas.ts';
import { ObjectId } from '../db/ids.ts';
import { queryInt } from '../validation/integers.ts';

export const EXPLORE_SORTS = [
  'relevance',
  'stars',
  'newest',
  'oldest',
  'name-asc',
  'name-desc',
  'count-desc',
  'count-asc',
] as const;
const CommaList = z
  .string()
  .max(1000)
  .transform((list) =>
    list
      .split(',')
      .map((item) => item.trim())
      .filter(Boolean),
  );

export const ExploreQuery = z.object({
  q: z
    .string()
    .trim()
    .max(200)
    .optional()
    .meta({ description: 'Text in the name, URL name or description (case ignored)' }),
  type: z.enum(['all', 'projects', 'datasets', 'images']).default('all').meta({
    description:
      'images: searching images by what they show needs embeddings, not built on this appliance yet: answers empty lists',
  }),
  sort: z.enum(EXPLORE_SORTS).default('newest').meta({
    description:
      'relevance lists the newest first (no search ranking here); stars: most starred; count: images of a dataset, models of a project',
  }),
  offset: queryInt().min(0).default(0),
  limit: queryInt().min(1).max(100).default(20).meta({ description: 'Per resource type, 1-100' }),
  task: CommaList.optional().meta({
    description: 'Comma-separated tasks: datasets of them, projects with a model of them',
  }),
  license: CommaList.optional().meta({ description: 'Comma-separated licenses' }),
  author: Handle.optional().meta({ description: 'Only this workspace' }),
  starred: z
    .stringbool()
    .optional()
    .meta({ description: "true: only what the key's user starred (nothing without a key)" }),
  minImages: queryInt().min(0).optional().meta({ description: 'Datasets with at least this many images' }),
  maxImages: queryInt().min(0).optional().meta({ description: 'Datasets with at most this many images' }),
});

const Splits = z.object({
  train: z.number().int(),
  val: z.number().int(),
  test: z.number().int(),
  labeled: z.number().int(),
});

export const ExploreResult = z.object({
  projects: z.array(
    z.object({
      id: ObjectId,
      project: Slug,
      name: z.string(),
      description: z.string(),
      owner: Handle,
      visibility: Visibility,
      modelCount: z.number().int(),
      modelNames: z.array(z.string()),
      totalBytes: z.number().int().meta({ description: "The models' weights" }),
      starCount: z.number().int(),
      license: z.string().optional(),
      updatedAt: Timestamp,
    }),
  ),
  datasets: z.array(
    z.object({
      id: ObjectId,
      dataset: Slug,
      name: z.string(),
      description: z.string(),
      owner: Handle,
      visibility: Visibility,
      task: Task,
      imageCount: z.number().int(),
      classCount: z.number().int(),
      classNames: z.array(z.string()),
      tags: z.array(z.string()),
      splits: Splits,
      starCount: z.number().int(),
      license: z.string().optional(),
      sampleImages: z.array(SampleImage).meta({ description: 'Up to 4 recent images (thumbnail URLs)' }),
      updatedAt: Timestamp,
    }),
  ),
  images: z.array(z.unknown()).max(0).optional().meta({ description: 'With type images: empty (see type)' }),
  hasMore: z.boolean().meta({ description: 'A list holds more than limit past offset' }),
});
