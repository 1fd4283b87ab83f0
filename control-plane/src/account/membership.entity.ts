import { defineEntity, p } from '@mikro-orm/core';
import { BaseSchema } from '../db/base.entity.ts';
import { ROLES } from './roles.ts';
import { User } from './user.entity.ts';
import { Workspace } from './workspace.entity.ts';

export const MembershipSchema = defineEntity({
  name: 'Membership',
  tableName: 'memberships',
  extends: BaseSchema,
  uniques: [{ properties: ['workspace', 'user'] }],
  properties: {
    workspace: () => p.manyToOne(Workspace).deleteRule('cascade'),
    user: () => p.manyToOne(User).deleteRule('cascade'),
    role: p.enum(ROLES),
  },
});
export class Membership extends MembershipSchema.class {}
MembershipSchema.setClass(Membership);
