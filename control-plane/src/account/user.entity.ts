import { defineEntity, p } from '@mikro-orm/core';
import { BaseSchema } from '../db/base.entity.ts';

export const UserSchema = defineEntity({
  name: 'User',
  tableName: 'users',
  extends: BaseSchema,
  properties: {
    username: p.string().length(32).unique(),
    name: p.string().length(100),
  },
});
export class User extends UserSchema.class {}
UserSchema.setClass(User);
