import { defineEntity, p } from '@mikro-orm/core';
import { User } from '../account/user.entity.ts';
import { Model } from './model.entity.ts';

/** A user's star on a model. */
export const ModelStarSchema = defineEntity({
  name: 'ModelStar',
  tableName: 'model_stars',
  properties: {
    model: () => p.manyToOne(Model).primary().deleteRule('cascade'),
    user: () => p.manyToOne(User).primary().deleteRule('cascade'),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export class ModelStar extends ModelStarSchema.class {}
ModelStarSchema.setClass(ModelStar);
