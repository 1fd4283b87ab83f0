import { defineRoute } from '../http/define-route.ts';
import { BillingBalance, PriceList, TransactionList, TransactionListQuery, UsageSummary } from './billing.schemas.ts';

const SCOPE = "The key's own workspace; any member role (viewer and up) reads it.";
const CREDIT =
  'Credit is held in US cents per workspace. The appliance operator adds it (`vpctl credits grant WORKSPACE DOLLARS`); ' +
  'With billingEnforced (BILLING_ENFORCED, off by default), `POST /api/training/start` answers 402 when the balance cannot cover the estimate; ' +
  'either way a job is charged what it ran ' +
  '(price per GPU-hour × GPUs × run time, up to the next cent) when it ends, even past zero.';

export const readBalance = defineRoute({
  method: 'GET',
  path: '/api/billing/balance',
  tag: 'Billing',
  summary: "The workspace's credit balance",
  description: `${SCOPE} ${CREDIT} With billingEnabled false nothing is refused and charges are recorded at 0.`,
  auth: 'key',
  limit: 'default',
  response: { status: 200, description: 'Balance', schema: BillingBalance },
  errors: [403],
  handler: (ctx) => ctx.state.services.billing.balanceFor(ctx.state.actor),
});

export const listTransactions = defineRoute({
  method: 'GET',
  path: '/api/billing/transactions',
  tag: 'Billing',
  summary: "The workspace's credit transactions, newest first",
  description:
    `${SCOPE} The ledger is append-only: grants and adjustments by the operator, one charge per job (and at most one refund), ` +
    'so the balance is the sum of every amountCents. Page with cursor=nextCursor (stable while transactions arrive) or with offset; ' +
    'a limit above 200 is 400.',
  auth: 'key',
  limit: 'default',
  request: { query: TransactionListQuery },
  response: { status: 200, description: 'A page of transactions', schema: TransactionList },
  errors: [403],
  handler: (ctx, { query }) => ctx.state.services.billing.transactionsFor(ctx.state.actor, query),
});

export const usageSummary = defineRoute({
  method: 'GET',
  path: '/api/billing/usage-summary',
  tag: 'Billing',
  summary: "The workspace's plan, storage use and training credit, as the hosted service's client reads them",
  description: SCOPE,
  auth: 'key',
  limit: 'default',
  response: { status: 200, description: 'Usage summary', schema: UsageSummary },
  errors: [403],
  handler: (ctx) => ctx.state.services.billing.usageSummaryFor(ctx.state.actor),
});

export const listPrices = defineRoute({
  method: 'GET',
  path: '/api/billing/prices',
  tag: 'Billing',
  summary: 'Prices per GPU-hour by GPU type, and whether billing is on',
  description:
    'The operator sets prices (GPU_PRICES_CENTS_PER_HOUR over built-in defaults). A training estimate is price × GPUs × epochs × ' +
    'seconds per epoch: the average of the recent charges of that GPU type (the workspace’s, else the appliance’s), or ' +
    'secondsPerEpochEstimate before there are any. A job without GPUs is priced once at cpu.',
  auth: 'key',
  limit: 'default',
  response: { status: 200, description: 'Price table', schema: PriceList },
  handler: (ctx) => ctx.state.services.billing.prices(),
});

export const billingRoutes = [readBalance, listTransactions, usageSummary, listPrices];
