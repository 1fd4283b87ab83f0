import type { EntityManager } from '@mikro-orm/postgresql';
import type { AppConfig } from '@vp/config';
import { gpuMemoryGb } from '@vp/protocol';
import type { z } from 'zod';
import { Workspace } from '../account/workspace.entity.ts';
import { requireKey, requireRole } from '../auth/access.ts';
import type { Actor } from '../auth/actor.ts';
import { ID_PATTERN, newId } from '../db/ids.ts';
import { Invalid, NotFound, PaymentRequired } from '../http/errors.ts';
import { storedBytesOf } from '../storage/stored-object.store.ts';
import {
  appendTransaction,
  balanceRow,
  isWorkspaceTransaction,
  jobChargeCents,
  ledgerCount,
  ledgerPage,
  recentChargeTimes,
  type LedgerRange,
  type TransactionRow,
} from './billing.store.ts';
import type {
  BillingBalance,
  CreditTransactionView,
  PriceList,
  TransactionList,
  TransactionListQuery,
  UsageSummary,
} from './billing.schemas.ts';
import type { ChargeMetadata, CreditKind } from './credit-transaction.entity.ts';

export type BillingConfig = Pick<
  AppConfig,
  'billingEnabled' | 'billingEnforced' | 'gpuPricesCentsPerHour' | 'trainingSecondsPerEpochEstimate'
>;

export interface EstimateInput {
  workspaceId: string;
  /** A GPU type ID, or `cpu`; a gpuCount of 0 is priced as `cpu` whatever the type. */
  gpuType: string;
  gpuCount: number;
  epochs: number;
}

export interface Estimate {
  /** US dollars per hour for the whole job (price per GPU-hour × GPUs). */
  pricePerHour: number;
  /** Memory of one GPU of the type; null for cpu and types without a known size. */
  gpuMemoryGb: number | null;
  estimatedCostCents: number;
  /** e.g. "$1.25" */
  estimatedCostDisplay: string;
  secondsPerEpoch: number;
  /** True when secondsPerEpoch comes from past charges of the type (the workspace's, else the appliance's). */
  measured: boolean;
}

export interface ChargeInput {
  workspaceId: string;
  jobId: string;
  gpuType: string;
  gpuCount: number;
  /** How long the job ran (wall clock). */
  seconds: number;
  /** Epochs it completed (feeds the measured seconds per epoch). */
  epochs: number;
  description: string;
}

export interface Granted {
  id: string;
  kind: Extract<CreditKind, 'grant' | 'adjustment'>;
  amountCents: number;
  balanceCents: number;
}

/** At most this many recent charges feed a measured seconds-per-epoch. */
const MEASURED_CHARGES = 20;
/** The largest single grant or adjustment: one billion dollars. */
const MAX_GRANT_CENTS = 100_000_000_000;
const DESCRIPTION_MAX = 500;

const usd = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD' });

/** "$1,234.50", "-$0.07". */
export function formatCents(cents: number): string {
  return usd.format(cents / 100);
}

/** Up to the next whole cent, ignoring float noise below a millionth of a cent. */
function ceilCents(cents: number): number {
  return Math.max(0, Math.ceil(Math.round(cents * 1e6) / 1e6));
}

/** The type a job is priced at and how many of it: a job without GPUs (or on `cpu`) is one CPU job. */
function priced(gpuType: string, gpuCount: number): { type: string; units: number } {
  return gpuCount === 0 || gpuType === 'cpu' ? { type: 'cpu', units: 1 } : { type: gpuType, units: gpuCount };
}

function checkCount(name: string, value: number): void {
  if (!Number.isInteger(value) || value < 0) throw Invalid(`${name}: must be a whole number, 0 or more`);
}

/** A workspace's credit in cents (0 before its first transaction); the account summary reads it too. */
export async function workspaceBalanceCents(em: EntityManager, workspaceId: string): Promise<number> {
  const row = await balanceRow(em, workspaceId);
  return Number(row?.balance_cents ?? 0);
}

const HOSTED_TYPES = {
  grant: 'adjustment',
  adjustment: 'adjustment',
  charge: 'training',
  refund: 'refund',
} as const satisfies Record<CreditKind, string>;

/** A date alone as the bound `to` takes its whole day. */
function upperBound(to: string): Date {
  const bound = new Date(to);
  if (/^\d{4}-\d{2}-\d{2}$/.test(to)) bound.setUTCDate(bound.getUTCDate() + 1);
  return bound;
}

function view(row: TransactionRow): z.input<typeof CreditTransactionView> {
  const amountCents = Number(row.amount_cents);
  return {
    id: row.id,
    kind: row.kind,
    amountCents,
    type: HOSTED_TYPES[row.kind],
    amountDisplay: formatCents(amountCents),
    balanceAfter: Number(row.balance_after),
    ...(typeof row.metadata?.gpuType === 'string' ? { gpuType: row.metadata.gpuType } : {}),
    ...(row.job_id === null ? {} : { runId: row.job_id }),
    description: row.description,
    jobId: row.job_id,
    metadata: row.metadata ?? {},
    createdAt: new Date(row.created_at).toISOString(),
  };
}

/**
 * Credits: a per-workspace ledger (credit_transactions, append-only) and its running sum (credit_balances).
 * Every movement is one statement that appends the row and adds it to the balance under the balance row's
 * lock, so concurrent charges all land and the balance always equals the sum of the ledger. With billing
 * off (BILLING_ENABLED=false) estimates are still computed, requireCredit never refuses, and job charges
 * are recorded at 0 (they keep the usage history and the measured seconds per epoch).
 */
export class BillingService {
  private readonly em: EntityManager;
  private readonly config: BillingConfig;

  constructor(em: EntityManager, config: BillingConfig) {
    this.em = em;
    this.config = config;
  }

  get enabled(): boolean {
    return this.config.billingEnabled;
  }

  /** Cents per GPU-hour of a type ID (per job-hour for `cpu`), or null when the operator priced no such type. */
  priceCentsPerHour(gpuType: string): number | null {
    return Object.hasOwn(this.config.gpuPricesCentsPerHour, gpuType)
      ? this.config.gpuPricesCentsPerHour[gpuType]
      : null;
  }

  /** What a training job should cost: price × GPUs × epochs × seconds per epoch (measured, else the configured default). */
  async estimate(input: EstimateInput): Promise<Estimate> {
    checkCount('gpuCount', input.gpuCount);
    checkCount('epochs', input.epochs);
    const { type, units } = priced(input.gpuType, input.gpuCount);
    const price = this.priceCentsPerHour(type);
    if (price === null) {
      throw Invalid(
        `gpuType: no price is configured for "${type}" (the operator sets prices with GPU_PRICES_CENTS_PER_HOUR)`,
      );
    }
    const measured = await this.measuredSecondsPerEpoch(input.workspaceId, type);
    const secondsPerEpoch = measured ?? this.config.trainingSecondsPerEpochEstimate;
    const estimatedCostCents = ceilCents((price * units * secondsPerEpoch * input.epochs) / 3600);
    return {
      pricePerHour: (price * units) / 100,
      gpuMemoryGb: type === 'cpu' ? null : gpuMemoryGb(type),
      estimatedCostCents,
      estimatedCostDisplay: formatCents(estimatedCostCents),
      secondsPerEpoch,
      measured: measured !== null,
    };
  }

  /**
   * Seconds per epoch over the type's most recent charges (seconds summed over epochs summed): the
   * workspace's own when it has any, else every workspace's on this appliance; null when there are none.
   */
  private async measuredSecondsPerEpoch(workspaceId: string, gpuType: string): Promise<number | null> {
    for (const scope of [workspaceId, null]) {
      const row = await recentChargeTimes(this.em, gpuType, scope, MEASURED_CHARGES);
      if (row?.epochs) return Math.round((Number(row.seconds) / Number(row.epochs)) * 10) / 10;
    }
    return null;
  }

  async balanceCents(workspaceId: string): Promise<number> {
    return workspaceBalanceCents(this.em, workspaceId);
  }

  /** The balance, when it covers `cents` or credit is not enforced (BILLING_ENFORCED); else 402 naming both. */
  async requireCredit(workspaceId: string, cents: number): Promise<number> {
    const balance = await this.balanceCents(workspaceId);
    if (this.enabled && this.config.billingEnforced && balance < cents) {
      throw PaymentRequired(
        `Insufficient credit: the balance is ${formatCents(balance)} and the estimated cost is ${formatCents(cents)}. Ask the operator for credit.`,
      );
    }
    return balance;
  }

  /**
   * Charges a job that ran: price × GPUs × seconds / 3600, up to the next cent, at most once per job (a
   * second call does nothing). The balance may go negative: the job already ran. A job that ran 0 seconds
   * leaves no row; with billing off, or a GPU type that has no price, the row is recorded at 0.
   */
  async chargeJob(input: ChargeInput): Promise<void> {
    if (!ID_PATTERN.test(input.jobId)) throw Invalid('jobId: must be a 24-character hexadecimal id');
    checkCount('gpuCount', input.gpuCount);
    checkCount('epochs', input.epochs);
    if (!Number.isFinite(input.seconds) || input.seconds < 0) throw Invalid('seconds: must be 0 or more');
    const seconds = Math.ceil(input.seconds);
    if (seconds === 0) return;
    const { type, units } = priced(input.gpuType, input.gpuCount);
    const price = this.priceCentsPerHour(type);
    const cents = this.enabled && price !== null ? ceilCents((price * units * seconds) / 3600) : 0;
    const metadata: ChargeMetadata = {
      gpuType: type,
      gpuCount: input.gpuCount,
      seconds,
      epochs: input.epochs,
      priceCentsPerHour: price,
      billed: this.enabled,
    };
    await this.append(input.workspaceId, 'charge', -cents, input.description, input.jobId, metadata);
  }

  /**
   * Charges a job priced by use rather than time (batch auto-annotation: images × price per image), up to the next
   * cent, at most once per job; nothing for 0 units. Recorded at 0 with billing off, like chargeJob.
   */
  async chargeUsage(input: {
    workspaceId: string;
    jobId: string;
    units: number;
    centsPerUnit: number;
    description: string;
    metadata: Record<string, unknown>;
  }): Promise<void> {
    if (!ID_PATTERN.test(input.jobId)) throw Invalid('jobId: must be a 24-character hexadecimal id');
    checkCount('units', input.units);
    if (input.units === 0) return;
    const cents = this.enabled ? ceilCents(input.units * input.centsPerUnit) : 0;
    await this.append(input.workspaceId, 'charge', -cents, input.description, input.jobId, {
      ...input.metadata,
      units: input.units,
      centsPerUnit: input.centsPerUnit,
      billed: this.enabled,
    });
  }

  /** Gives a job's charge back, once (e.g. a job the platform failed); nothing when the job has no charge. */
  async refundJob(workspaceId: string, jobId: string, description: string): Promise<void> {
    const charge = await jobChargeCents(this.em, jobId, workspaceId);
    if (charge === undefined) return;
    await this.append(workspaceId, 'refund', -Number(charge), description, jobId, {});
  }

  /**
   * The operator's grant (vpctl credits grant): positive cents add credit; negative cents are an
   * adjustment (a correction) and need a note saying why.
   */
  async grant(workspaceHandle: string, cents: number, note?: string): Promise<Granted> {
    if (!Number.isInteger(cents) || cents === 0 || Math.abs(cents) > MAX_GRANT_CENTS) {
      throw Invalid('amount: must be a non-zero amount of whole cents, at most $1,000,000,000');
    }
    const text = note?.trim();
    if (cents < 0 && !text) throw Invalid('a negative amount (an adjustment) needs --note saying why');
    const workspace = await this.em.findOne(Workspace, { handle: workspaceHandle });
    if (!workspace) throw NotFound(`Workspace "${workspaceHandle}" not found`);
    const kind = cents > 0 ? 'grant' : 'adjustment';
    const appended = await this.append(workspace.id, kind, cents, text || 'Credit grant', null, {});
    if (!appended) throw new Error('grant not recorded');
    return { id: appended.id, kind, amountCents: cents, balanceCents: appended.balanceCents };
  }

  /**
   * Appends one ledger row and adds it to the balance, in one statement; null when the job already has a
   * row of this kind (the idempotent repeat of a charge or refund).
   */
  private async append(
    workspaceId: string,
    kind: CreditKind,
    amountCents: number,
    description: string,
    jobId: string | null,
    metadata: object,
  ): Promise<{ id: string; balanceCents: number } | null> {
    const id = newId();
    const balance = await appendTransaction(this.em, {
      id,
      workspaceId,
      kind,
      amountCents,
      description: description.slice(0, DESCRIPTION_MAX),
      jobId,
      metadata: JSON.stringify(metadata),
    });
    return balance !== undefined ? { id, balanceCents: Number(balance) } : null;
  }

  // The API: the key's own workspace, any member role.

  async balanceFor(actor: Actor): Promise<z.input<typeof BillingBalance>> {
    const key = requireKey(actor);
    requireRole(actor, key.workspaceId, 'viewer');
    const balanceCents = await this.balanceCents(key.workspaceId);
    return {
      balanceCents,
      balanceDisplay: formatCents(balanceCents),
      currency: 'USD',
      billingEnabled: this.enabled,
      billingEnforced: this.config.billingEnforced,
    };
  }

  async transactionsFor(
    actor: Actor,
    page: z.output<typeof TransactionListQuery>,
  ): Promise<z.input<typeof TransactionList>> {
    const key = requireKey(actor);
    requireRole(actor, key.workspaceId, 'viewer');
    return this.transactions(key.workspaceId, page);
  }

  /** Newest first, after a cursor (keyset on created_at, id) or from an offset. */
  async transactions(
    workspaceId: string,
    page: { limit: number; cursor?: string; offset?: number; includeTotal?: boolean; from?: string; to?: string },
  ): Promise<z.input<typeof TransactionList>> {
    // The date range bounds both the page and the total; the cursor only the page.
    const range: LedgerRange = {
      ...(page.from ? { from: new Date(page.from) } : {}),
      ...(page.to ? { before: upperBound(page.to) } : {}),
    };
    if (page.cursor && !(await isWorkspaceTransaction(this.em, page.cursor, workspaceId)))
      throw Invalid('cursor: is not a transaction of this workspace');
    const rows = await ledgerPage(this.em, workspaceId, range, page.cursor, page.limit + 1, page.offset ?? 0);
    const transactions = rows.slice(0, page.limit).map(view);
    const hasMore = rows.length > page.limit;
    let total: number | undefined;
    if (page.includeTotal !== false) {
      total = await ledgerCount(this.em, workspaceId, range);
    }
    return {
      transactions,
      ...(total === undefined ? {} : { total }),
      hasMore,
      nextCursor: hasMore ? (transactions.at(-1)?.id ?? null) : null,
    };
  }

  /** For the operator CLI: a workspace's balance and newest transactions, by handle. */
  async statement(
    workspaceHandle: string,
    limit: number,
  ): Promise<{ balanceCents: number; transactions: Array<z.input<typeof CreditTransactionView>> }> {
    const workspace = await this.em.findOne(Workspace, { handle: workspaceHandle });
    if (!workspace) throw NotFound(`Workspace "${workspaceHandle}" not found`);
    const { transactions } = await this.transactions(workspace.id, { limit, includeTotal: false });
    return { balanceCents: await this.balanceCents(workspace.id), transactions };
  }

  async usageSummaryFor(actor: Actor): Promise<z.input<typeof UsageSummary>> {
    const key = requireKey(actor);
    requireRole(actor, key.workspaceId, 'viewer');
    const storedBytes = await storedBytesOf(this.em, key.workspaceId);
    const balance = await this.balanceCents(key.workspaceId);
    return {
      plan: { planId: 'enterprise', name: 'Enterprise (on-premise)', status: 'active', cancelAtPeriodEnd: false },
      metrics: [
        {
          metricId: 'storage_bytes',
          kind: 'GAUGE',
          period: 'NONE',
          limit: 0,
          used: Number(storedBytes),
          remaining: 0,
          overageAllowed: true,
        },
      ],
      trainingCredit: { monthlyGrant: 0, balanceAvailable: balance },
      features: { privateProjects: true, teams: true, enterpriseLicense: true },
      creditsCents: balance,
    };
  }

  prices(): z.input<typeof PriceList> {
    const prices = Object.fromEntries(
      Object.entries(this.config.gpuPricesCentsPerHour).map(([type, centsPerHour]) => [
        type,
        { centsPerHour, pricePerHour: centsPerHour / 100, gpuMemoryGb: type === 'cpu' ? null : gpuMemoryGb(type) },
      ]),
    );
    return {
      currency: 'USD',
      billingEnabled: this.enabled,
      billingEnforced: this.config.billingEnforced,
      secondsPerEpochEstimate: this.config.trainingSecondsPerEpochEstimate,
      prices,
    };
  }
}
