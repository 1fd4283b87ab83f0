import { defineEntity, p } from '@mikro-orm/core';
import { newId } from './ids.ts';

/** Columns every table shares: a 24-hex id and creation/update timestamps. */
export const BaseSchema = defineEntity({
  name: 'BaseEntity',
  abstract: true,
  properties: {
    id: p
      .string()
      .length(24)
      .primary()
      .onCreate(() => newId()),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p
      .datetime()
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
});
