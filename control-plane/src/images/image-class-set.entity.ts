import { defineEntity, p } from '@mikro-orm/core';
import { Dataset, SPLITS } from '../datasets/dataset.entity.ts';

/**
 * A change in how many images of a dataset have one combination of split, labeled or not, and classes: their sum is
 * what a filtered list's total (split, hasLabel, classIds) is read from instead of counted over the images. Kept by
 * the database itself: statement triggers on images add each statement's changes as rows, whatever SQL made them (see
 * the image_class_sets migration); readers compact a dataset's rows into one per combination
 * (image-class-set.store.ts).
 */
export const ImageClassSetSchema = defineEntity({
  name: 'ImageClassSet',
  tableName: 'image_class_sets',
  indexes: [{ properties: ['dataset'] }],
  properties: {
    id: p.bigint('number').primary().autoincrement(),
    dataset: () => p.manyToOne(Dataset).deleteRule('cascade'),
    split: p.enum(SPLITS),
    labeled: p.boolean(),
    classIds: p.array<number>((value) => Number(value)).columnType('int[]'),
    images: p.integer(),
  },
});
export class ImageClassSet extends ImageClassSetSchema.class {}
ImageClassSetSchema.setClass(ImageClassSet);
