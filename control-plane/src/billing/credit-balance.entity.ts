import { defineEntity, p } from '@mikro-orm/core';
import { Workspace } from '../account/workspace.entity.ts';

/**
 * A workspace's credit: the sum of its credit_transactions, kept in step by the statement that appends
 * each row (an upsert that adds to the row under its lock, so concurrent charges all land). No row: 0.
 */
export const CreditBalanceSchema = defineEntity({
  name: 'CreditBalance',
  tableName: 'credit_balances',
  properties: {
    workspace: () => p.manyToOne(Workspace).primary().deleteRule('cascade'),
    balanceCents: p.bigint('number').default(0),
    updatedAt: p
      .datetime()
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
});
export class CreditBalance extends CreditBalanceSchema.class {}
CreditBalanceSchema.setClass(CreditBalance);
