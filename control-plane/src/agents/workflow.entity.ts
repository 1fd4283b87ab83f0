import { defineEntity, p } from '@mikro-orm/core';
import { User } from '../account/user.entity.ts';
import { Workspace } from '../account/workspace.entity.ts';
import { BaseSchema } from '../db/base.entity.ts';

/**
 * A saved agent workflow: a graph of blocks on a canvas. `version` goes up by one on every save; a save
 * must name the version it started from (optimistic concurrency). Deleted for good, never to trash.
 */
export const WorkflowSchema = defineEntity({
  name: 'Workflow',
  tableName: 'workflows',
  extends: BaseSchema,
  indexes: [{ properties: ['workspace', 'updatedAt'] }],
  properties: {
    workspace: () => p.manyToOne(Workspace).deleteRule('cascade'),
    name: p.string().length(128),
    graph: p.json<Record<string, unknown>>(),
    version: p.integer().default(1),
    createdBy: () => p.manyToOne(User).nullable().deleteRule('set null'),
  },
});
export class Workflow extends WorkflowSchema.class {}
WorkflowSchema.setClass(Workflow);
