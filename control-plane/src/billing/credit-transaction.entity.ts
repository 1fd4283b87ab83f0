import { defineEntity, p } from '@mikro-orm/core';
import { Workspace } from '../account/workspace.entity.ts';
import { newId } from '../db/ids.ts';

/**
 * grant: credit the operator added; adjustment: an operator correction (negative, with a note);
 * charge: what a job cost (negative; 0 while billing is off); refund: a job's charge given back.
 */
export const CREDIT_KINDS = ['grant', 'adjustment', 'charge', 'refund'] as const;
export type CreditKind = (typeof CREDIT_KINDS)[number];

/** What a charge records about the job, so estimates can learn seconds per epoch from it. */
export interface ChargeMetadata {
  gpuType: string;
  gpuCount: number;
  seconds: number;
  epochs: number;
  /** The price applied; null when the GPU type had no price (charged 0). */
  priceCentsPerHour: number | null;
  /** False when billing was off: recorded at 0 for the history and the estimates. */
  billed: boolean;
}

/**
 * The credit ledger: append-only, one row per movement, signed (grants positive, charges negative).
 * credit_balances holds each workspace's sum, moved in the same statement as the row it sums.
 * A job has at most one charge and one refund (partial unique index), which makes both idempotent.
 */
export const CreditTransactionSchema = defineEntity({
  name: 'CreditTransaction',
  tableName: 'credit_transactions',
  indexes: [
    { properties: ['workspace', 'createdAt'] },
    {
      name: 'credit_transactions_charge_gpu_type_index',
      expression: `create index "credit_transactions_charge_gpu_type_index" on "credit_transactions" (("metadata"->>'gpuType'), "created_at") where "kind" = 'charge'`,
    },
  ],
  uniques: [
    {
      name: 'credit_transactions_job_id_kind_unique',
      expression:
        'create unique index "credit_transactions_job_id_kind_unique" on "credit_transactions" ("job_id", "kind") where "job_id" is not null',
    },
  ],
  properties: {
    id: p
      .string()
      .length(24)
      .primary()
      .onCreate(() => newId()),
    workspace: () => p.manyToOne(Workspace).deleteRule('cascade'),
    kind: p.enum(CREDIT_KINDS),
    amountCents: p.bigint('number'),
    description: p.string().length(500),
    /** The job charged or refunded; not a foreign key, so the ledger outlives the job. */
    jobId: p.string().length(24).nullable(),
    metadata: p.json<Record<string, unknown>>().default('{}'),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export class CreditTransaction extends CreditTransactionSchema.class {}
CreditTransactionSchema.setClass(CreditTransaction);
