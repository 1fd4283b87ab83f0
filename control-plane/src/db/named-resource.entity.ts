import { defineEntity, p } from '@mikro-orm/core';
import { Workspace } from '../account/workspace.entity.ts';
import { BaseSchema } from './base.entity.ts';

/** Columns of every resource addressed by name under a workspace: its workspace, URL name and display name. */
export const NamedResourceSchema = defineEntity({
  name: 'NamedResource',
  abstract: true,
  extends: BaseSchema,
  properties: {
    workspace: () => p.manyToOne(Workspace).deleteRule('cascade'),
    slug: p.string().length(128),
    name: p.string().length(128),
  },
});
