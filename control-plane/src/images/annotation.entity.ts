import { defineEntity, p } from '@mikro-orm/core';
import { Dataset } from '../datasets/dataset.entity.ts';
import type { Label } from './labels.ts';
import { Image } from './image.entity.ts';

/**
 * One label of an image, at its position in the image's label list. The enclosing box and point count
 * are stored beside the geometry so statistics are plain SQL aggregates.
 */
export const AnnotationSchema = defineEntity({
  name: 'Annotation',
  tableName: 'annotations',
  indexes: [{ properties: ['dataset', 'classId'] }],
  properties: {
    image: () => p.manyToOne(Image).primary().deleteRule('cascade'),
    position: p.integer().primary(),
    dataset: () => p.manyToOne(Dataset).deleteRule('cascade'),
    classId: p.integer(),
    /** The label as saved (classId included), returned as is. */
    label: p.json<Label>(),
    cx: p.float().nullable(),
    cy: p.float().nullable(),
    w: p.float().nullable(),
    h: p.float().nullable(),
    points: p.integer().default(0),
  },
});
export class Annotation extends AnnotationSchema.class {}
AnnotationSchema.setClass(Annotation);
