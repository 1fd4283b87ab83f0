import { defineEntity, p } from '@mikro-orm/core';
import { REGIONS } from '@vp/config';
import { BaseSchema } from '../db/base.entity.ts';
import { User } from './user.entity.ts';

export const WORKSPACE_KINDS = ['personal', 'team'] as const;

export const WorkspaceSchema = defineEntity({
  name: 'Workspace',
  tableName: 'workspaces',
  extends: BaseSchema,
  properties: {
    handle: p.string().length(32).unique(),
    name: p.string().length(100),
    kind: p.enum(WORKSPACE_KINDS),
    region: p.enum(REGIONS),
    /** The one user holding the owner role; team keys act as this user. */
    owner: () => p.manyToOne(User),
  },
});
export class Workspace extends WorkspaceSchema.class {}
WorkspaceSchema.setClass(Workspace);
