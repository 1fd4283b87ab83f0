import { defineEntity, p } from '@mikro-orm/core';
import { COUNTED_RESOURCES } from './account.schemas.ts';
import { Workspace } from './workspace.entity.ts';

/**
 * How many of one kind of resource (datasets, projects, models) a workspace has outside the trash, for the
 * account summary. Kept by the database itself: a trigger on each counted table adjusts this row in the
 * transaction that inserts, trashes, restores or deletes a resource, at its commit, whatever SQL did it
 * (see the resource_counts migration). No row: 0.
 */
export const ResourceCountSchema = defineEntity({
  name: 'ResourceCount',
  tableName: 'workspace_resource_counts',
  properties: {
    workspace: () => p.manyToOne(Workspace).primary().deleteRule('cascade'),
    kind: p.enum(COUNTED_RESOURCES).primary(),
    total: p.integer().default(0),
  },
});
export class ResourceCount extends ResourceCountSchema.class {}
ResourceCountSchema.setClass(ResourceCount);
