import { defineEntity, p } from '@mikro-orm/core';
import { BaseSchema } from '../db/base.entity.ts';
import { Host } from './host.entity.ts';

/** A host's worker key (socket credential, never an API key); only its hash and display prefix are kept. Revoked = deleted. */
export const WorkerKeySchema = defineEntity({
  name: 'WorkerKey',
  tableName: 'worker_keys',
  extends: BaseSchema,
  properties: {
    host: () => p.manyToOne(Host).deleteRule('cascade'),
    keyHash: p.string().length(64).unique(),
    prefix: p.string().length(12).index(),
  },
});
export class WorkerKey extends WorkerKeySchema.class {}
WorkerKeySchema.setClass(WorkerKey);
