import { defineEntity, p } from '@mikro-orm/core';
import { User } from '../account/user.entity.ts';
import { Dataset } from './dataset.entity.ts';

/** A user's star on a dataset; datasets.star_count is kept in step with these rows. */
export const DatasetStarSchema = defineEntity({
  name: 'DatasetStar',
  tableName: 'dataset_stars',
  properties: {
    dataset: () => p.manyToOne(Dataset).primary().deleteRule('cascade'),
    user: () => p.manyToOne(User).primary().deleteRule('cascade'),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export class DatasetStar extends DatasetStarSchema.class {}
DatasetStarSchema.setClass(DatasetStar);
