// Credits: the operator grants through a real vpctl process, the ledger and balance show up in the billing
// API and the account summary, estimates learn seconds per epoch from charges, charges are idempotent and
// concurrency-safe, 402 maps through the error middleware, billing can be switched off, and price overrides
// from the environment are validated.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '@vp/config';
import { GPU_MEMORY_GB, KNOWN_GPU_TYPE_IDS } from '@vp/protocol';
import t from 'tap';
import { runNode } from './helpers/run-node.ts';
import { z } from 'zod';
import { requireKey } from '../control-plane/src/auth/access.ts';
import { newId } from '../control-plane/src/db/ids.ts';
import { defineRoute } from '../control-plane/src/http/define-route.ts';
import { HttpError } from '../control-plane/src/http/errors.ts';
import { routes } from '../control-plane/src/routes.ts';
import { call, startTestServer, type TestServer } from './helpers/server.ts';

/** Asks requireCredit for the key's workspace, so the 402 goes through the real error middleware. */
const creditProbe = defineRoute({
  method: 'GET',
  path: '/api/test/require-credit',
  tag: 'Test',
  summary: 'requireCredit for the key’s workspace',
  auth: 'key',
  limit: 'default',
  request: { query: z.object({ cents: z.coerce.number().int() }) },
  response: { status: 200, description: 'Covered', schema: z.object({ balanceCents: z.number().int() }) },
  handler: async (ctx, { query }) => ({
    balanceCents: await ctx.state.services.billing.requireCredit(requireKey(ctx.state.actor).workspaceId, query.cents),
  }),
});

/** The error a promise rejects with (an HttpError here), or a note that it did not. */
const refusal = (promise: Promise<unknown>) =>
  promise.then(
    () => new Error('not refused'),
    (error: unknown) => error,
  );

const LIMITS = { RATE_LIMIT_DEFAULT: '1000000' };
const PRICES = JSON.stringify({ 'rtx-4090': 69, 'my-gpu': 40 });

async function populate(server: TestServer) {
  const account = server.services().account;
  const alice = await account.createUser('alice');
  const bobby = await account.createUser('bobby');
  await account.createUser('vicky');
  await account.createTeam('acme-team', 'alice');
  await account.setMemberRole('acme-team', 'vicky', 'viewer');
  const keys = server.services().apiKeys;
  return {
    ids: { alice: alice.workspace.id, bobby: bobby.workspace.id },
    alice: (await keys.create('alice', 'a')).key,
    bobby: (await keys.create('bobby', 'b')).key,
    viewer: (await keys.create('acme-team', 'v', 'vicky')).key,
  };
}

const server = await startTestServer(t, {
  routes: [...routes, creditProbe],
  env: { ...LIMITS, GPU_PRICES_CENTS_PER_HOUR: PRICES, BILLING_ENFORCED: 'true' },
});
const world = await populate(server);
const dataDir = mkdtempSync(join(tmpdir(), 'vp-billing-'));
t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
const vpctl = (...args: string[]) =>
  runNode(['installer/src/vpctl.ts', ...args], { DATABASE_URL: server.databaseUrl, DATA_DIR: dataDir });
const billing = () => server.services().billing;

type Balance = { balanceCents: number; balanceDisplay: string; currency: string; billingEnabled: boolean };
type Tx = {
  id: string;
  kind: string;
  amountCents: number;
  amountDisplay: string;
  description: string;
  jobId: string | null;
  metadata: Record<string, unknown>;
  createdAt: string;
};
type TxList = { transactions: Tx[]; total?: number; hasMore: boolean; nextCursor: string | null };

const balanceOf = async (key: string) => (await call<Balance>(server, 'GET', '/api/billing/balance', { key })).body;
const ledgerSum = async (workspaceId: string) => {
  const [row] = await server.orm.em
    .fork()
    .getConnection()
    .execute<[{ sum: string | null }]>(
      'select sum(amount_cents) as sum from credit_transactions where workspace_id = ?',
      [workspaceId],
    );
  return Number(row.sum ?? 0);
};

t.test('vpctl grants show up in the balance, the transactions and the account summary', async (t) => {
  t.match(
    await balanceOf(world.alice),
    { balanceCents: 0, balanceDisplay: '$0.00', currency: 'USD', billingEnabled: true },
    'no row yet: 0',
  );

  const granted = await vpctl('credits', 'grant', 'alice', '25', '--note', 'Welcome credit');
  t.equal(granted.code, 0, granted.stderr);
  t.equal(granted.stdout, 'Granted $25.00 to alice; balance $25.00\n');
  t.match(await vpctl('credits', 'grant', 'alice', '12.5'), {
    code: 0,
    stdout: 'Granted $12.50 to alice; balance $37.50\n',
  });

  t.match(
    await vpctl('credits', 'grant', 'alice', '-2.25'),
    { code: 1, stdout: '', stderr: /needs --note/ },
    'a correction needs a note',
  );
  t.match(await vpctl('credits', 'grant', 'alice', '-2.25', '--note', 'Typo in the first grant'), {
    code: 0,
    stdout: 'Adjusted alice by -$2.25; balance $35.25\n',
  });
  t.match(await vpctl('credits', 'grant', 'alice', '1.234'), { code: 1, stderr: /at most 2 decimals/ });
  t.match(await vpctl('credits', 'grant', 'alice', '0'), { code: 1, stderr: /non-zero/ });
  t.match(await vpctl('credits', 'grant', 'nobody', '5'), { code: 1, stderr: /Workspace "nobody" not found/ });

  t.match(await vpctl('credits', 'balance', 'alice'), { code: 0, stdout: 'alice: $35.25\n' });
  const listed = await vpctl('credits', 'list', 'alice');
  t.equal(listed.code, 0, listed.stderr);
  t.match(
    listed.stdout,
    /^CREATED\s+KIND\s+AMOUNT\s+JOB\s+DESCRIPTION\n\S+Z\s+adjustment\s+-\$2\.25\s+-\s+Typo in the first grant\n\S+Z\s+grant\s+\$12\.50\s+-\s+Credit grant\n\S+Z\s+grant\s+\$25\.00\s+-\s+Welcome credit\nBalance: \$35\.25\n$/,
  );
  t.match(await vpctl('credits', 'list', 'bobby'), {
    code: 0,
    stdout: 'No credit transactions in bobby\nBalance: $0.00\n',
  });

  t.same(await balanceOf(world.alice), {
    balanceCents: 3525,
    balanceDisplay: '$35.25',
    currency: 'USD',
    billingEnabled: true,
    billingEnforced: true,
  });
  const list = await call<TxList>(server, 'GET', '/api/billing/transactions', { key: world.alice });
  t.equal(list.status, 200);
  t.match(list.body, { total: 3, hasMore: false, nextCursor: null });
  t.match(list.body.transactions, [
    {
      kind: 'adjustment',
      amountCents: -225,
      amountDisplay: '-$2.25',
      description: 'Typo in the first grant',
      jobId: null,
      metadata: {},
    },
    { kind: 'grant', amountCents: 1250, description: 'Credit grant' },
    { kind: 'grant', amountCents: 2500, amountDisplay: '$25.00', description: 'Welcome credit' },
  ]);
  t.match(list.body.transactions[0], { id: /^[0-9a-f]{24}$/, createdAt: /^\d{4}-\d\d-\d\dT/ });

  const summary = await call<{ creditsCents: number }>(server, 'GET', '/api/account/summary', { key: world.alice });
  t.equal(summary.body.creditsCents, 3525, 'the account summary carries the balance');
  t.equal(await ledgerSum(world.ids.alice), 3525, 'the balance is the sum of the ledger');
});

t.test('any member reads; another workspace sees none of it', async (t) => {
  await vpctl('credits', 'grant', 'acme-team', '3');
  t.match(await balanceOf(world.viewer), { balanceCents: 300 }, 'a viewer reads the team balance');
  t.match((await call<TxList>(server, 'GET', '/api/billing/transactions', { key: world.viewer })).body, {
    total: 1,
    transactions: [{ amountCents: 300 }],
  });

  t.match(await balanceOf(world.bobby), { balanceCents: 0 });
  const theirs = await call<TxList>(server, 'GET', '/api/billing/transactions', { key: world.bobby });
  t.same(theirs.body, { transactions: [], total: 0, hasMore: false, nextCursor: null });
  t.equal(
    (await call<{ creditsCents: number }>(server, 'GET', '/api/account/summary', { key: world.bobby })).body
      .creditsCents,
    0,
  );
  const aliceTx = (await call<TxList>(server, 'GET', '/api/billing/transactions', { key: world.alice })).body
    .transactions[0];
  t.match(
    await call(server, 'GET', `/api/billing/transactions?cursor=${aliceTx.id}`, { key: world.bobby }),
    {
      status: 400,
      body: { error: 'cursor: is not a transaction of this workspace' },
    },
    "another workspace's transaction id is no cursor",
  );
  for (const path of ['/api/billing/balance', '/api/billing/transactions', '/api/billing/prices']) {
    t.equal((await call(server, 'GET', path)).status, 401, `${path} needs a key`);
  }
});

t.test('transactions page by cursor or offset, newest first, without repeats', async (t) => {
  for (let i = 1; i <= 5; i++) await billing().grant('bobby', i * 100, `grant ${i}`);
  const seen: string[] = [];
  let cursor: string | null = null;
  do {
    const page: { status: number; body: TxList } = await call<TxList>(
      server,
      'GET',
      `/api/billing/transactions?limit=2${cursor ? `&cursor=${cursor}` : ''}`,
      { key: world.bobby },
    );
    t.equal(page.status, 200);
    t.equal(page.body.total, 5);
    seen.push(...page.body.transactions.map((tx) => tx.description));
    cursor = page.body.nextCursor;
    t.equal(page.body.hasMore, cursor !== null);
  } while (cursor);
  t.same(seen, ['grant 5', 'grant 4', 'grant 3', 'grant 2', 'grant 1']);

  const offset = await call<TxList>(server, 'GET', '/api/billing/transactions?limit=2&offset=3&includeTotal=false', {
    key: world.bobby,
  });
  t.same(
    offset.body.transactions.map((tx) => tx.description),
    ['grant 2', 'grant 1'],
  );
  t.equal(offset.body.total, undefined, 'includeTotal=false skips the count');
  t.equal(offset.body.hasMore, false);
  t.match(await call(server, 'GET', '/api/billing/transactions?limit=201', { key: world.bobby }), {
    status: 400,
    body: { error: /limit/ },
  });
  t.match(await call(server, 'GET', `/api/billing/transactions?offset=1&cursor=${newId()}`, { key: world.bobby }), {
    status: 400,
    body: { error: /cursor or offset, not both/ },
  });
});

t.test('prices: defaults for every known GPU type and cpu, env overrides merged over them', async (t) => {
  const prices = await call<{
    currency: string;
    billingEnabled: boolean;
    secondsPerEpochEstimate: number;
    prices: Record<string, { centsPerHour: number; pricePerHour: number; gpuMemoryGb: number | null }>;
  }>(server, 'GET', '/api/billing/prices', { key: world.viewer });
  t.equal(prices.status, 200);
  t.match(prices.body, { currency: 'USD', billingEnabled: true, secondsPerEpochEstimate: 60 });
  t.same(prices.body.prices['rtx-4090'], { centsPerHour: 69, pricePerHour: 0.69, gpuMemoryGb: 24 }, 'overridden');
  t.same(
    prices.body.prices['my-gpu'],
    { centsPerHour: 40, pricePerHour: 0.4, gpuMemoryGb: null },
    'a new type, without a known memory size',
  );
  t.same(prices.body.prices['h100-sxm'], { centsPerHour: 269, pricePerHour: 2.69, gpuMemoryGb: 80 }, 'a default');
  t.match(prices.body.prices.cpu, { centsPerHour: 5, gpuMemoryGb: null });
  for (const type of KNOWN_GPU_TYPE_IDS) {
    t.ok(prices.body.prices[type]?.centsPerHour > 0, `${type} has a default price`);
    t.ok(GPU_MEMORY_GB[type] > 0, `${type} has a memory size`);
  }
});

t.test('estimates use the configured seconds per epoch, then the measured average of charges', async (t) => {
  const first = await billing().estimate({
    workspaceId: world.ids.alice,
    gpuType: 'rtx-4090',
    gpuCount: 2,
    epochs: 100,
  });
  // 69 cents × 2 GPUs × 100 epochs × 60 s / 3600 = 230 cents
  t.same(first, {
    pricePerHour: 1.38,
    gpuMemoryGb: 24,
    estimatedCostCents: 230,
    estimatedCostDisplay: '$2.30',
    secondsPerEpoch: 60,
    measured: false,
  });
  t.match(
    await billing().estimate({ workspaceId: world.ids.alice, gpuType: 'a100-80gb-sxm', gpuCount: 1, epochs: 7 }),
    {
      pricePerHour: 1.49,
      gpuMemoryGb: 80,
      estimatedCostCents: 18, // 149 × 7 × 60 / 3600 = 17.38 → up to 18
      measured: false,
    },
  );
  t.match(
    await billing().estimate({ workspaceId: world.ids.alice, gpuType: 'rtx-4090', gpuCount: 0, epochs: 60 }),
    {
      pricePerHour: 0.05,
      gpuMemoryGb: null,
      estimatedCostCents: 5,
    },
    'no GPUs: priced once at cpu',
  );
  t.match(
    await refusal(
      billing().estimate({ workspaceId: world.ids.alice, gpuType: 'quantum-9000', gpuCount: 1, epochs: 1 }),
    ),
    {
      status: 400,
      message: /no price is configured for "quantum-9000"/,
    },
  );
  t.match(
    await refusal(billing().estimate({ workspaceId: world.ids.alice, gpuType: 'rtx-4090', gpuCount: 1.5, epochs: 1 })),
    { status: 400, message: /gpuCount/ },
  );

  // alice ran two jobs: 3000 s for 100 epochs and 1000 s for 100 → 20 s per epoch
  await billing().chargeJob({
    workspaceId: world.ids.alice,
    jobId: newId(),
    gpuType: 'rtx-4090',
    gpuCount: 2,
    seconds: 3000,
    epochs: 100,
    description: 'Training alice/p/m1',
  });
  await billing().chargeJob({
    workspaceId: world.ids.alice,
    jobId: newId(),
    gpuType: 'rtx-4090',
    gpuCount: 1,
    seconds: 1000,
    epochs: 100,
    description: 'Training alice/p/m2',
  });
  t.same(await billing().estimate({ workspaceId: world.ids.alice, gpuType: 'rtx-4090', gpuCount: 2, epochs: 100 }), {
    pricePerHour: 1.38,
    gpuMemoryGb: 24,
    estimatedCostCents: 77, // 69 × 2 × 100 × 20 / 3600 = 76.67
    estimatedCostDisplay: '$0.77',
    secondsPerEpoch: 20,
    measured: true,
  });
  t.match(
    await billing().estimate({ workspaceId: world.ids.bobby, gpuType: 'rtx-4090', gpuCount: 1, epochs: 10 }),
    { secondsPerEpoch: 20, measured: true },
    "a workspace without charges of its own uses the appliance's",
  );
  await billing().chargeJob({
    workspaceId: world.ids.bobby,
    jobId: newId(),
    gpuType: 'rtx-4090',
    gpuCount: 1,
    seconds: 450,
    epochs: 10,
    description: 'Training bobby/p/m',
  });
  t.match(
    await billing().estimate({ workspaceId: world.ids.bobby, gpuType: 'rtx-4090', gpuCount: 1, epochs: 10 }),
    { secondsPerEpoch: 45, measured: true },
    'then its own',
  );
  t.match(await billing().estimate({ workspaceId: world.ids.alice, gpuType: 'rtx-4090', gpuCount: 1, epochs: 10 }), {
    secondsPerEpoch: 20,
  });
  t.match(
    await billing().estimate({ workspaceId: world.ids.alice, gpuType: 'l40s', gpuCount: 1, epochs: 10 }),
    { secondsPerEpoch: 60, measured: false },
    'per GPU type',
  );
});

t.test(
  'charges: price × GPUs × time up to a cent, idempotent per job, may go negative, with their metadata',
  async (t) => {
    await billing().grant('vicky', 100);
    const jobId = newId();
    const charge = {
      workspaceId: (await server.services().account.findWorkspace('vicky')).id,
      jobId,
      gpuType: 'h100-sxm',
      gpuCount: 4,
      seconds: 1800.2,
      epochs: 3,
      description: 'Training vicky/p/big',
    };
    // 269 × 4 × 1801 s / 3600 = 538.30 → 539 cents
    await Promise.all([billing().chargeJob(charge), billing().chargeJob(charge)]);
    await billing().chargeJob(charge);
    t.equal(await billing().balanceCents(charge.workspaceId), 100 - 539, 'charged once, below zero');
    const tx = (await billing().statement('vicky', 10)).transactions;
    t.equal(tx.length, 2);
    t.match(tx[0], {
      kind: 'charge',
      amountCents: -539,
      jobId,
      description: 'Training vicky/p/big',
      metadata: { gpuType: 'h100-sxm', gpuCount: 4, seconds: 1801, epochs: 3, priceCentsPerHour: 269, billed: true },
    });
    await billing().chargeJob({ ...charge, jobId: newId(), seconds: 0 });
    t.equal((await billing().statement('vicky', 10)).transactions.length, 2, 'a job that ran 0 seconds leaves no row');

    await billing().refundJob(charge.workspaceId, jobId, 'Host lost');
    await billing().refundJob(charge.workspaceId, jobId, 'Host lost');
    t.equal(await billing().balanceCents(charge.workspaceId), 100, 'refunded once');
    t.equal(await ledgerSum(charge.workspaceId), 100);
    t.match(await refusal(billing().chargeJob({ ...charge, jobId: 'not-a-job' })), { status: 400, message: /jobId/ });
  },
);

t.test('concurrent charges for distinct jobs all land', async (t) => {
  const workspaceId = world.ids.bobby;
  const before = await billing().balanceCents(workspaceId);
  const jobIds = Array.from({ length: 20 }, () => newId());
  // Each on its own EntityManager fork (own connection), as in separate requests or replicas; one job twice.
  await Promise.all(
    [...jobIds, jobIds[0]].map((jobId) =>
      server.services().billing.chargeJob({
        workspaceId,
        jobId,
        gpuType: 'rtx-4090',
        gpuCount: 1,
        seconds: 3600,
        epochs: 10,
        description: 'parallel',
      }),
    ),
  );
  t.equal(await billing().balanceCents(workspaceId), before - 20 * 69, '20 charges of 69 cents');
  t.equal(await ledgerSum(workspaceId), before - 20 * 69, 'the balance still equals the ledger');
  const charges = await server.orm.em
    .fork()
    .getConnection()
    .execute<[{ count: string }]>(
      "select count(*) as count from credit_transactions where workspace_id = ? and description = 'parallel'",
      [workspaceId],
    );
  t.equal(Number(charges[0].count), 20);
});

t.test('requireCredit: 402 with { error } naming the balance and the estimate', async (t) => {
  const refused = await refusal(billing().requireCredit(world.ids.bobby, 1_000_000));
  t.ok(refused instanceof HttpError, 'a typed HttpError');
  t.match(refused, {
    status: 402,
    message: /^Insufficient credit: the balance is \$\d+\.\d\d and the estimated cost is \$10,000\.00/,
  });
  const balance = await billing().balanceCents(world.ids.alice);
  t.equal(await billing().requireCredit(world.ids.alice, balance), balance, 'exactly enough passes');

  const short = await call(server, 'GET', `/api/test/require-credit?cents=${balance + 1}`, { key: world.alice });
  t.equal(short.status, 402);
  t.same(short.body, {
    error: `Insufficient credit: the balance is $${(balance / 100).toFixed(2)} and the estimated cost is $${((balance + 1) / 100).toFixed(2)}. Ask the operator for credit.`,
  });
  t.match(await call(server, 'GET', '/api/test/require-credit?cents=1', { key: world.alice }), {
    status: 200,
    body: { balanceCents: balance },
  });
});

t.test(
  'by default credit is tracked, not enforced: a fresh workspace is refused nothing, charged what it ran, and may go below zero',
  async (t) => {
    const fresh = await startTestServer(t, { routes: [...routes, creditProbe], env: LIMITS });
    const keys = await populate(fresh);
    const service = fresh.services().billing;
    t.match((await call(fresh, 'GET', '/api/billing/balance', { key: keys.alice })).body, {
      balanceCents: 0,
      billingEnabled: true,
      billingEnforced: false,
    });
    t.match((await call(fresh, 'GET', '/api/billing/prices', { key: keys.alice })).body, {
      billingEnabled: true,
      billingEnforced: false,
    });
    t.match(await call(fresh, 'GET', '/api/test/require-credit?cents=1000000', { key: keys.alice }), {
      status: 200,
      body: { balanceCents: 0 },
    });
    await service.chargeJob({
      workspaceId: keys.ids.alice,
      jobId: newId(),
      gpuType: 'rtx-4090',
      gpuCount: 1,
      seconds: 3600,
      epochs: 10,
      description: 'Training on a fresh appliance',
    });
    t.equal(await service.balanceCents(keys.ids.alice), -59, 'charged an hour at the default price, past zero');
    t.equal(loadConfig({}).billingEnforced, false);
    t.equal(loadConfig({ BILLING_ENFORCED: 'true' }).billingEnforced, true);
  },
);

t.test('billing off: estimates shown, nothing refused, charges recorded at 0', async (t) => {
  const off = await startTestServer(t, {
    routes: [...routes, creditProbe],
    env: { ...LIMITS, BILLING_ENABLED: 'false' },
  });
  const keys = await populate(off);
  const service = off.services().billing;
  t.match((await call(off, 'GET', '/api/billing/balance', { key: keys.alice })).body, {
    balanceCents: 0,
    billingEnabled: false,
  });
  t.match((await call(off, 'GET', '/api/billing/prices', { key: keys.alice })).body, {
    billingEnabled: false,
    prices: { 'rtx-4090': { centsPerHour: 59 } },
  });
  t.match(await service.estimate({ workspaceId: keys.ids.alice, gpuType: 'rtx-4090', gpuCount: 1, epochs: 60 }), {
    estimatedCostCents: 59,
    measured: false,
  });
  t.equal(await service.requireCredit(keys.ids.alice, 1_000_000), 0, 'never refuses');
  t.match(await call(off, 'GET', '/api/test/require-credit?cents=1000000', { key: keys.alice }), { status: 200 });

  await service.chargeJob({
    workspaceId: keys.ids.alice,
    jobId: newId(),
    gpuType: 'rtx-4090',
    gpuCount: 1,
    seconds: 7200,
    epochs: 10,
    description: 'Training while billing is off',
  });
  t.equal(await service.balanceCents(keys.ids.alice), 0, 'nothing charged');
  const list = (await call<TxList>(off, 'GET', '/api/billing/transactions', { key: keys.alice })).body;
  t.match(list.transactions, [
    {
      kind: 'charge',
      amountCents: 0,
      metadata: { gpuType: 'rtx-4090', seconds: 7200, epochs: 10, priceCentsPerHour: 59, billed: false },
    },
  ]);
  t.match(
    await service.estimate({ workspaceId: keys.ids.alice, gpuType: 'rtx-4090', gpuCount: 1, epochs: 10 }),
    { secondsPerEpoch: 720, measured: true },
    'still measured',
  );
  t.match(
    await runNode(['installer/src/vpctl.ts', 'credits', 'balance', 'alice'], {
      DATABASE_URL: off.databaseUrl,
      DATA_DIR: dataDir,
      BILLING_ENABLED: 'false',
    }),
    {
      code: 0,
      stdout: 'alice: $0.00 (billing is off: BILLING_ENABLED=false)\n',
    },
  );
});

t.test('price overrides are validated: bad JSON or values are a clear configuration error', async (t) => {
  const problem = (env: Record<string, string>) => {
    try {
      loadConfig(env);
      return 'accepted';
    } catch (error) {
      return error instanceof ConfigError ? error.message : `unexpected: ${String(error)}`;
    }
  };
  t.match(
    problem({ GPU_PRICES_CENTS_PER_HOUR: '{rtx-4090: 69}' }),
    /^Invalid configuration: GPU_PRICES_CENTS_PER_HOUR is not valid JSON; must be a JSON object of GPU type ID to whole cents per GPU-hour/,
  );
  t.match(problem({ GPU_PRICES_CENTS_PER_HOUR: '[69]' }), 'GPU_PRICES_CENTS_PER_HOUR must be a JSON object');
  t.match(
    problem({ GPU_PRICES_CENTS_PER_HOUR: '{"rtx-4090":"69"}' }),
    'GPU_PRICES_CENTS_PER_HOUR.rtx-4090 must be a whole number of cents per GPU-hour',
  );
  t.match(
    problem({ GPU_PRICES_CENTS_PER_HOUR: '{"rtx-4090":0.5}' }),
    'GPU_PRICES_CENTS_PER_HOUR.rtx-4090 must be a whole number of cents per GPU-hour',
  );
  t.match(
    problem({ GPU_PRICES_CENTS_PER_HOUR: '{"h100-sxm":-1}' }),
    'GPU_PRICES_CENTS_PER_HOUR.h100-sxm must not be negative',
  );
  t.match(problem({ GPU_PRICES_CENTS_PER_HOUR: '{"RTX 4090":1}' }), 'is not a GPU type ID');
  t.match(
    problem({ BILLING_ENABLED: 'maybe', TRAINING_SECONDS_PER_EPOCH_ESTIMATE: '0' }),
    /BILLING_ENABLED .*; TRAINING_SECONDS_PER_EPOCH_ESTIMATE must be a positive integer/,
  );

  const config = loadConfig({
    GPU_PRICES_CENTS_PER_HOUR: '{"rtx-4090":69}',
    TRAINING_SECONDS_PER_EPOCH_ESTIMATE: '90',
  });
  t.equal(config.gpuPricesCentsPerHour['rtx-4090'], 69);
  t.equal(config.gpuPricesCentsPerHour['h100-sxm'], 269, 'the other defaults stay');
  t.equal(config.trainingSecondsPerEpochEstimate, 90);
  t.equal(loadConfig({}).billingEnabled, true, 'billing is on by default');

  t.match(
    await runNode(['installer/src/vpctl.ts', 'credits', 'balance', 'alice'], {
      GPU_PRICES_CENTS_PER_HOUR: 'nope',
      DATA_DIR: dataDir,
    }),
    {
      code: 78,
      stderr: /vpctl: Invalid configuration: GPU_PRICES_CENTS_PER_HOUR is not valid JSON/,
    },
  );
});
