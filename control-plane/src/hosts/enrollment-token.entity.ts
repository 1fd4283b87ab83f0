import { defineEntity, p } from '@mikro-orm/core';
import { BaseSchema } from '../db/base.entity.ts';
import { Host } from './host.entity.ts';

/** A one-time token that an agent exchanges for its host's worker key; only its hash is kept. */
export const EnrollmentTokenSchema = defineEntity({
  name: 'EnrollmentToken',
  tableName: 'enrollment_tokens',
  extends: BaseSchema,
  properties: {
    host: () => p.manyToOne(Host).deleteRule('cascade'),
    tokenHash: p.string().length(64).unique(),
    expiresAt: p.datetime(),
    /** Set by the one exchange a token allows. */
    usedAt: p.datetime().nullable(),
  },
});
export class EnrollmentToken extends EnrollmentTokenSchema.class {}
EnrollmentTokenSchema.setClass(EnrollmentToken);
