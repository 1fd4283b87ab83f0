import { REGIONS } from '@vp/config';
import { z } from 'zod';
import { Handle, Slug } from '../account/handle.ts';
import { ObjectId } from '../db/ids.ts';
import { pageQuery } from '../http/pagination.ts';
import { TRASH_TYPES } from './trash-erase.ts';

const Count = z.number().int().min(0);
const TrashType = z.enum(TRASH_TYPES, { error: `must be one of ${TRASH_TYPES.join(', ')}` });

export const TrashListQuery = pageQuery(50, 200)
  .extend({
    type: z.enum(['all', ...TRASH_TYPES], { error: `must be one of all, ${TRASH_TYPES.join(', ')}` }).default('all'),
    id: ObjectId.optional().meta({
      description: 'With type project or model: that item alone, with the resources its restore or deletion affects',
    }),
  })
  .refine((query) => !query.id || query.type === 'project' || query.type === 'model', {
    message: 'needs type project or model',
    path: ['id'],
  });

export const TrashItem = z.object({
  id: ObjectId,
  _id: ObjectId.meta({ description: 'id again, under the name the hosted service uses' }),
  type: TrashType,
  owner: Handle,
  slug: Slug,
  name: z.string(),
  project: Slug.optional().meta({ description: "Models: their project's URL name" }),
  parentProject: z
    .object({ _id: ObjectId, name: z.string(), slug: Slug })
    .optional()
    .meta({ description: 'Models: their project' }),
  modelCount: Count.optional().meta({
    description: 'Projects: their models, all deleted with the project when it is deleted permanently',
  }),
  cascadedCount: Count.optional().meta({
    description: 'Projects: modelCount again, under the name the hosted service uses',
  }),
  deletedAt: z.iso.datetime(),
  trashedAt: z.iso.datetime().meta({ description: 'deletedAt again, under the name the hosted service uses' }),
  daysRemaining: Count.meta({ description: 'Days until it is purged automatically' }),
});

export const TrashResources = z
  .array(
    z.object({
      id: ObjectId,
      type: z.enum(['project', 'model', 'deployment']),
      name: z.string(),
      slug: Slug,
      trashedWithProject: z.boolean().optional().meta({
        description: 'Models: restored when the project is; a model trashed on its own before stays in trash',
      }),
    }),
  )
  .meta({
    description:
      'The item and the models its restore or permanent deletion affects (no deployments: they were deleted when their model went to trash)',
  });

const TypeTotals = z.object({ count: Count, sizeBytes: Count });

export const TrashList = z.object({
  items: z.array(TrashItem),
  total: Count,
  page: z.number().int().min(1),
  limit: z.number().int().min(1),
  totalPages: z.number().int().min(1),
  summary: z
    .object({
      projects: Count,
      datasets: Count,
      models: Count,
      total: Count,
      totalItems: Count.meta({ description: 'total again, under the name the hosted service uses' }),
      totalSizeBytes: Count,
      byType: z
        .object({ projects: z.object({ count: Count }), datasets: TypeTotals, models: TypeTotals, exports: TypeTotals })
        .meta({
          description:
            "datasets: their images' bytes; models: their weights, those trashed with a project included; exports: none in trash",
        }),
    })
    .meta({ description: 'Items in trash by type, whatever the filter' }),
  resources: TrashResources.optional().meta({ description: 'With id' }),
  region: z.enum(REGIONS),
});

export const TrashTarget = z.strictObject({ id: ObjectId, type: TrashType });

export const TrashRestored = z.object({
  success: z.literal(true),
  id: ObjectId,
  type: TrashType,
  restoredModels: Count.optional().meta({ description: 'Projects: the models that went to trash with the project' }),
});

export const TrashDeleteBody = z.union([TrashTarget, z.strictObject({ all: z.literal(true) })], {
  error: 'send id and type, or all: true',
});

export const TrashDeleted = z.object({
  success: z.literal(true),
  deletedCount: Count.meta({ description: 'Trash items deleted' }),
  cascadedModels: Count.meta({ description: 'Models deleted with their projects' }),
  survivingDeployments: Count.meta({ description: 'Deployments left running: 0, deployments go with their models' }),
});
