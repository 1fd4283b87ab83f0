import { z } from 'zod';
import { Handle, Slug } from '../account/handle.ts';
import { OwnerPath, Region, Tags, Timestamp, Visibility } from '../datasets/dataset.schemas.ts';
import { ObjectId } from '../db/ids.ts';
import { limitQuery } from '../http/pagination.ts';
import { ModelEntry } from '../models/model.schemas.ts';
import { MetadataObject } from '../validation/metadata.ts';
import { StarChange } from '../validation/star-change.ts';

const Name = z.string().trim().min(1).max(100);

export const ProjectPath = OwnerPath.extend({ project: Slug });

export const ProjectListItem = z.object({
  id: ObjectId,
  owner: Handle,
  project: Slug,
  name: z.string(),
  description: z.string(),
  visibility: Visibility,
  tags: z.array(z.string()),
  license: z.string().optional().meta({ description: 'Absent when none is set' }),
  archived: z.boolean(),
  iconColor: z.string().optional().meta({ description: 'Absent when none is set' }),
  iconLetter: z.string().optional().meta({ description: 'Absent when none is set' }),
  modelCount: z.number().int(),
  starCount: z.number().int(),
  starred: z.boolean().meta({ description: "Whether the key's user starred it" }),
  isStarred: z.boolean().meta({ description: 'starred again, under the name the hosted service uses' }),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

export const ProjectListQuery = limitQuery(20, 500);
export const ProjectList = z.object({ projects: z.array(ProjectListItem), total: z.number().int(), region: Region });

export const ProjectReadQuery = z.object({
  search: z
    .string()
    .trim()
    .max(200)
    .optional()
    .meta({ description: 'Keeps models whose name or metadata contains this text (case ignored)' }),
});
export const ProjectRead = z.object({
  project: ProjectListItem.extend({
    metadata: z.record(z.string(), z.unknown()),
    viewPreferences: z.record(z.string(), z.unknown()),
    region: Region,
  }),
  models: z.array(
    ModelEntry.extend({ epochCount: z.number().int().meta({ description: 'Epochs that training has reported' }) }),
  ),
  isOwner: z.boolean().meta({ description: 'The key belongs to the owning workspace' }),
});

export const ProjectCreate = z.object({
  project: Slug,
  name: Name,
  description: z.string().max(1000).optional(),
  visibility: Visibility.default('private'),
  tags: Tags.optional(),
  license: z.string().max(64).optional(),
  metadata: MetadataObject.optional(),
  owner: Handle.optional().meta({ description: "Team handle; must be the key's own workspace (the default)" }),
});
export const ProjectCreated = z.object({ id: ObjectId, owner: Handle, project: Slug, region: Region });

export const ProjectPatch = z
  .object({
    name: Name,
    description: z.string().max(1000),
    visibility: Visibility,
    metadata: MetadataObject.meta({ description: 'Replaces the metadata object; {} clears it' }),
    tags: Tags,
    license: z.string().max(64).nullable(),
    archived: z.boolean(),
    iconColor: z.string().max(32).nullable(),
    iconLetter: z.string().max(2).nullable(),
    viewPreferences: MetadataObject.meta({ description: 'How the project page is shown; replaced as a whole' }),
    starred: z.boolean().meta({ description: "Stars or unstars for the key's user; needs only read access" }),
  })
  .partial()
  .strict();
export const ProjectPatched = z.object({
  success: z.literal(true),
  project: Slug.meta({ description: 'The current URL name' }),
  ...StarChange,
});

export const ProjectDeleted = z.object({
  success: z.literal(true),
  project: Slug,
  deletedAt: Timestamp,
  cascadedModels: z.number().int().meta({ description: 'How many models went to trash with the project' }),
  trashedModels: z.array(z.object({ id: ObjectId, model: Slug })).meta({ description: 'Those models' }),
  daysRemaining: z.number().int(),
});

export const ProjectClone = ProjectCreate.pick({ description: true, visibility: true, license: true, owner: true })
  .extend({
    project: Slug.optional().meta({
      description: 'URL name of the copy; default <source>-copy, then -copy-2, -copy-3… while taken',
    }),
    name: Name.optional().meta({ description: 'Default: the source name followed by " (copy)"' }),
  })
  // The whole body is optional: no body clones with every default.
  .prefault({});
export const ProjectCloned = ProjectCreated.extend({
  name: z.string(),
  modelCount: z.number().int().meta({ description: 'Completed models copied' }),
});
