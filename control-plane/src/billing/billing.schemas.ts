import { z } from 'zod';
import { ObjectId } from '../db/ids.ts';
import { limitQuery } from '../http/pagination.ts';
import { queryInt } from '../validation/integers.ts';
import { CREDIT_KINDS } from './credit-transaction.entity.ts';

const Cents = z.number().int();
const Display = z.string().meta({ description: 'The amount in US dollars, formatted', example: '$1,234.50' });

const BillingEnforced = z.boolean().meta({
  description:
    'true: training and batch predict are refused (402) when the balance cannot cover their estimate. false (the default, BILLING_ENFORCED): ' +
    'charges are still recorded and the balance may go below zero, but nothing is refused, so a fresh appliance trains at once',
});

export const BillingBalance = z.object({
  balanceCents: Cents.meta({
    description: "The workspace's credit in US cents; negative when a job cost more than was left",
  }),
  balanceDisplay: Display,
  currency: z.literal('USD'),
  billingEnabled: z.boolean().meta({
    description:
      'false: this appliance shows estimates but refuses nothing for credit and records charges at 0 (BILLING_ENABLED)',
  }),
  billingEnforced: BillingEnforced,
});

export const CreditTransactionView = z.object({
  id: ObjectId,
  kind: z.enum(CREDIT_KINDS).meta({
    description:
      'grant: credit the operator added (vpctl credits grant); adjustment: an operator correction (negative, with a note); ' +
      'charge: what a job cost (0 while billing is off); refund: a job charge given back',
  }),
  amountCents: Cents.meta({
    description: 'Signed US cents: grants and refunds positive, charges and adjustments negative',
  }),
  type: z.enum(['adjustment', 'training', 'refund']).meta({
    description:
      "The hosted service's transaction type for kind: grant and adjustment are adjustment, charge is training, refund is refund",
  }),
  amountDisplay: Display,
  balanceAfter: Cents.meta({ description: "The workspace's balance in US cents right after this transaction" }),
  gpuType: z.string().optional().meta({ description: 'Charges: the GPU type the job ran on (also in metadata)' }),
  runId: ObjectId.optional().meta({
    description: 'Charges and refunds: the job (jobId again, under the hosted service name)',
  }),
  description: z.string(),
  jobId: ObjectId.nullable().meta({
    description: 'The job charged or refunded (read it at /api/jobs/{id} while it exists)',
  }),
  metadata: z.record(z.string(), z.unknown()).meta({
    description:
      'Charges: gpuType, gpuCount, seconds (run time), epochs, priceCentsPerHour (the price applied; null when the type had none) ' +
      'and billed (false when billing was off). Grants and adjustments: {}',
  }),
  createdAt: z.iso.datetime(),
});

const DateBound = z.string().refine((value) => /^\d{4}-\d{2}-\d{2}/.test(value) && !Number.isNaN(Date.parse(value)), {
  message: 'must be an ISO 8601 date or date-time',
});

export const TransactionListQuery = limitQuery(50, 200)
  .extend({
    cursor: ObjectId.optional().meta({
      description: 'nextCursor of the previous page: the transactions older than that one',
    }),
    offset: queryInt()
      .min(0)
      .optional()
      .meta({ description: 'Skip this many of the newest transactions (instead of cursor)' }),
    includeTotal: z
      .stringbool()
      .default(true)
      .meta({ description: 'Count all transactions (total); false skips the count' }),
    from: DateBound.optional().meta({ description: 'Only transactions at or after this date or date-time (ISO 8601)' }),
    to: DateBound.optional().meta({
      description:
        'Only transactions before this date-time, or on or before this date (a date alone includes its whole day)',
    }),
  })
  .refine((query) => query.cursor === undefined || query.offset === undefined, {
    message: 'use cursor or offset, not both',
    path: ['offset'],
  });

export const TransactionList = z.object({
  transactions: z.array(CreditTransactionView).meta({ description: 'Newest first' }),
  total: z
    .number()
    .int()
    .min(0)
    .optional()
    .meta({ description: 'All transactions of the workspace (absent with includeTotal=false)' }),
  hasMore: z.boolean(),
  nextCursor: ObjectId.nullable().meta({ description: 'Pass as cursor for the next page; null on the last page' }),
});

export const UsageSummary = z.object({
  plan: z
    .object({
      planId: z.literal('enterprise'),
      name: z.string(),
      status: z.literal('active'),
      cancelAtPeriodEnd: z.literal(false),
    })
    .meta({ description: 'An appliance has one plan with every feature and no billing period' }),
  metrics: z.array(
    z.object({
      metricId: z.literal('storage_bytes'),
      kind: z.literal('GAUGE'),
      period: z.literal('NONE'),
      limit: z.number().meta({ description: '0: no storage quota on an appliance' }),
      used: z.number(),
      remaining: z.number().meta({ description: '0 with no quota' }),
      overageAllowed: z.literal(true),
    }),
  ),
  trainingCredit: z.object({
    monthlyGrant: z
      .literal(0)
      .meta({ description: 'No monthly grant: the operator grants credit (vpctl credits grant)' }),
    balanceAvailable: Cents.meta({ description: 'The credit balance in US cents' }),
  }),
  features: z.object({ privateProjects: z.literal(true), teams: z.literal(true), enterpriseLicense: z.literal(true) }),
  creditsCents: Cents,
});

export const GpuPrice = z.object({
  centsPerHour: Cents.meta({ description: 'US cents per GPU-hour (per job-hour for cpu)' }),
  pricePerHour: z.number().meta({ description: 'US dollars per GPU-hour' }),
  gpuMemoryGb: z
    .number()
    .nullable()
    .meta({ description: 'Memory of one GPU of the type; null for cpu and types without a known size' }),
});

export const PriceList = z.object({
  currency: z.literal('USD'),
  billingEnabled: z.boolean(),
  billingEnforced: BillingEnforced,
  secondsPerEpochEstimate: z.number().int().meta({
    description:
      'Seconds per epoch that estimates assume for a GPU type until charges of that type give a measured average',
  }),
  prices: z
    .record(z.string(), GpuPrice)
    .meta({ description: 'By GPU type ID (the gpuType of POST /api/training/start); cpu: jobs without GPUs' }),
});
