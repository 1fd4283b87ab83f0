import { defineEntity, p } from '@mikro-orm/core';
import { User } from '../account/user.entity.ts';
import { Workspace } from '../account/workspace.entity.ts';
import { BaseSchema } from '../db/base.entity.ts';

/** An API key; the key itself is never stored, only its SHA-256 and its display prefix. */
export const ApiKeySchema = defineEntity({
  name: 'ApiKey',
  tableName: 'api_keys',
  extends: BaseSchema,
  properties: {
    workspace: () => p.manyToOne(Workspace).deleteRule('cascade'),
    /** Whose permissions the key carries: the workspace owner, or a member it was issued for. */
    user: () => p.manyToOne(User).deleteRule('cascade'),
    name: p.string().length(100),
    keyHash: p.string().length(64).unique(),
    prefix: p.string().length(11).index(),
    lastUsedAt: p.datetime().nullable(),
  },
});
export class ApiKey extends ApiKeySchema.class {}
ApiKeySchema.setClass(ApiKey);
