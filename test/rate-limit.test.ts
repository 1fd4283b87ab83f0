// Rate limits as a client sees them: sliding windows per key and category, shared by every replica
// (two app instances on one PostgreSQL), 429 bodies and headers, and recovery after the advertised wait.
import { setTimeout as sleep } from 'node:timers/promises';
import t, { type Test } from 'tap';
import { generateApiKey } from '../control-plane/src/auth/key-format.ts';
import { expectError } from './helpers/expect.ts';
import { call, startTestServer, type Fetched, type TestServer } from './helpers/server.ts';

type Tap = Test;

async function twoReplicas(t: Tap, env: Record<string, string>): Promise<[TestServer, TestServer]> {
  const first = await startTestServer(t, { env });
  const second = await startTestServer(t, { env, databaseUrl: first.databaseUrl });
  return [first, second];
}

function expectRateLimited(
  t: Tap,
  response: Fetched,
  category: string,
  windowSeconds: number,
): { retryAfter: number; resetAt: number } {
  expectError(t, response, 429, new RegExp(`${category}.*retry in \\d+ s`), ['retryAfter', 'resetAt']);
  const { retryAfter, resetAt } = response.body as { retryAfter: number; resetAt: string };
  t.ok(
    Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 2 * windowSeconds,
    `retryAfter ${retryAfter} is whole seconds within two windows`,
  );
  t.equal(new Date(resetAt).toISOString(), resetAt, 'resetAt is ISO 8601');
  t.equal(response.headers.get('retry-after'), String(retryAfter), 'Retry-After header');
  t.equal(response.headers.get('x-ratelimit-reset'), resetAt, 'X-RateLimit-Reset header');
  return { retryAfter, resetAt: Date.parse(resetAt) };
}

t.test('a key shares one counter per category across replicas; the wait it is told is enough', async (t) => {
  const window = 3;
  const [a, b] = await twoReplicas(t, {
    RATE_LIMIT_WINDOW_SECONDS: String(window),
    RATE_LIMIT_MUTATION: '4',
    RATE_LIMIT_DEFAULT: '1000',
  });
  const account = a.services().account;
  await account.createUser('alice', 'Alice');
  await account.createUser('bobby', 'Bobby');
  const alice = (await a.services().apiKeys.create('alice', 'alice')).key;
  const bobby = (await a.services().apiKeys.create('bobby', 'bobby')).key;

  // GET /api/api-keys is in the Mutation category: 4 per window, whichever replica answers.
  const replicas = [a, b, a, b];
  for (const [i, replica] of replicas.entries())
    t.equal((await call(replica, 'GET', '/api/api-keys', { key: alice })).status, 200, `request ${i + 1} allowed`);
  const refused = expectRateLimited(t, await call(a, 'GET', '/api/api-keys', { key: alice }), 'mutation', window);
  expectRateLimited(t, await call(b, 'GET', '/api/api-keys', { key: alice }), 'mutation', window);

  t.equal(
    (await call(b, 'GET', '/api/account/summary', { key: alice })).status,
    200,
    'the Default category counts apart',
  );
  t.equal((await call(b, 'GET', '/api/api-keys', { key: bobby })).status, 200, 'another key counts apart');

  // Refusals are not counted: hammering does not push the reset further out.
  let last = refused;
  for (let i = 0; i < 5; i++)
    last = expectRateLimited(t, await call(i % 2 ? a : b, 'GET', '/api/api-keys', { key: alice }), 'mutation', window);
  t.ok(last.resetAt <= refused.resetAt + 50, 'refused requests do not move resetAt');

  await sleep(Math.max(0, last.resetAt - Date.now()) + 50);
  t.equal((await call(b, 'GET', '/api/api-keys', { key: alice })).status, 200, 'allowed again at resetAt');
});

t.test('the window slides: the previous window still weighs in after it ends', async (t) => {
  const window = 2;
  const a = await startTestServer(t, { env: { RATE_LIMIT_WINDOW_SECONDS: String(window), RATE_LIMIT_MUTATION: '4' } });
  await a.services().account.createUser('carol', 'Carol');
  const key = (await a.services().apiKeys.create('carol', 'carol')).key;
  let allowed = 0;
  let refusal: Fetched | undefined;
  while (!refusal) {
    const response = await call(a, 'GET', '/api/api-keys', { key });
    if (response.status === 429) refusal = response;
    else allowed++;
  }
  t.equal(allowed, 4, 'four fit in the window');
  const { resetAt } = expectRateLimited(t, refusal, 'mutation', window);
  await sleep(Math.max(0, resetAt - Date.now()) + 30);
  // A fixed window would now allow four at once; a sliding one allows only what the old window's decay frees.
  const burst = [];
  for (let i = 0; i < 4; i++) burst.push((await call(a, 'GET', '/api/api-keys', { key })).status);
  t.equal(burst[0], 200, 'the first request after resetAt passes');
  t.ok(burst.includes(429), `a burst right after resetAt is still limited (${burst.join(', ')})`);
});

t.test('anonymous callers are limited per client address; health is never limited', async (t) => {
  const env = { RATE_LIMIT_DEFAULT: '3', TRUST_PROXY: 'true' };
  const [a, b] = await twoReplicas(t, env);
  await a.services().account.createUser('alice', 'Alice');
  const key = (await a.services().apiKeys.create('alice', 'alice')).key;
  const from = (address: string) => ({ headers: { 'x-forwarded-for': address } });

  for (const replica of [a, b, a])
    t.equal((await call(replica, 'GET', '/api/users/alice', from('10.1.1.1'))).status, 200);
  expectRateLimited(t, await call(b, 'GET', '/api/users/alice', from('10.1.1.1')), 'default', 60);
  t.equal((await call(a, 'GET', '/api/users/alice', from('10.2.2.2'))).status, 200, 'another address counts apart');
  t.equal(
    (await call(a, 'GET', '/api/users/alice', { ...from('10.1.1.1'), key })).status,
    200,
    'a key counts apart from its address',
  );
  for (let i = 0; i < 6; i++)
    t.equal((await call(b, 'GET', '/api/health', from('10.1.1.1'))).status, 200, 'health is not limited');
  t.equal((await call(b, 'GET', '/openapi.json', from('10.1.1.1'))).status, 200, 'the document is not limited');
});

t.test(
  'failed authentications are limited per client address across replicas; valid keys elsewhere are not locked out',
  async (t) => {
    const [a, b] = await twoReplicas(t, { AUTH_FAILURE_LIMIT: '3', TRUST_PROXY: 'true', RATE_LIMIT_DEFAULT: '1000' });
    await a.services().account.createUser('alice', 'Alice');
    const working = (await a.services().apiKeys.create('alice', 'in use')).key;
    const fresh = (await a.services().apiKeys.create('alice', 'not used yet')).key;
    const from = (address: string, key: string) => ({ key, headers: { 'x-forwarded-for': address } });
    const wrong = generateApiKey;

    t.equal(
      (await call(a, 'GET', '/api/account/summary', from('10.3.3.3', working))).status,
      200,
      'a client at work from the address',
    );
    for (const replica of [a, b, a])
      expectError(
        t,
        await call(replica, 'GET', '/api/account/summary', from('10.3.3.3', wrong())),
        401,
        /Invalid API key/,
      );
    const refused = expectRateLimited(
      t,
      await call(b, 'GET', '/api/account/summary', from('10.3.3.3', wrong())),
      'failed authentications',
      60,
    );
    expectRateLimited(
      t,
      await call(b, 'GET', '/api/account/summary', from('10.3.3.3', 'not-even-a-key')),
      'failed authentications',
      60,
    );
    const valid = await call(b, 'GET', '/api/account/summary', from('10.3.3.3', fresh));
    expectRateLimited(t, valid, 'failed authentications', 60);
    t.ok(
      Date.parse((valid.body as { resetAt: string }).resetAt) <= refused.resetAt + 1000,
      'refusals do not push the reset out',
    );
    t.equal(
      (await call(a, 'GET', '/api/account/summary', from('10.3.3.3', working))).status,
      200,
      'the key already working from there carries on',
    );
    t.equal(
      (await call(b, 'GET', '/api/account/summary', from('10.4.4.4', fresh))).status,
      200,
      'another address is not affected',
    );
    expectError(t, await call(b, 'GET', '/api/account/summary', from('10.4.4.4', wrong())), 401, /Invalid API key/);
  },
);

t.test('each category limit comes from configuration', async (t) => {
  const a = await startTestServer(t, { env: { RATE_LIMIT_DEFAULT: '2', RATE_LIMIT_MUTATION: '1' } });
  await a.services().account.createUser('dave', 'Dave');
  const key = (await a.services().apiKeys.create('dave', 'dave')).key;
  t.equal((await call(a, 'GET', '/api/api-keys', { key })).status, 200);
  expectRateLimited(t, await call(a, 'GET', '/api/api-keys', { key }), 'mutation', 60);
  t.equal((await call(a, 'GET', '/api/storage', { key })).status, 200);
  t.equal((await call(a, 'GET', '/api/account/summary', { key })).status, 200);
  expectRateLimited(t, await call(a, 'GET', '/api/storage', { key }), 'default', 60);
});

t.test(
  "the trainer's webhook has a category of its own: events past RATE_LIMIT_METRICS are refused, other calls go on",
  async (t) => {
    const a = await startTestServer(t, { env: { RATE_LIMIT_METRICS: '2' } });
    await a.services().account.createUser('erin', 'Erin');
    const key = (await a.services().apiKeys.create('erin', 'laptop')).key;
    const post = (body: Record<string, unknown>) =>
      call<{ modelId: string }>(a, 'POST', '/api/webhooks/training/metrics', { key, body });
    const started = await post({ event: 'training_started', project: 'erin/laptop', name: 'run', data: { epochs: 3 } });
    t.equal(started.status, 200);
    t.equal(
      (await post({ event: 'epoch_end', modelId: started.body.modelId, data: { epoch: 0, metrics: {} } })).status,
      200,
    );
    expectRateLimited(
      t,
      await post({ event: 'epoch_end', modelId: started.body.modelId, data: { epoch: 1, metrics: {} } }),
      'metrics',
      60,
    );
    t.equal((await call(a, 'GET', '/api/account/summary', { key })).status, 200, 'the Default category counts apart');
  },
);

t.test('a burst from one key on two replicas at once gets exactly the limit through', async (t) => {
  // An hour's window, so that the burst does not straddle two windows (which would weigh the first one in).
  const env = { RATE_LIMIT_WINDOW_SECONDS: '3600', RATE_LIMIT_DEFAULT: '20' };
  const [a, b] = await twoReplicas(t, env);
  await a.services().account.createUser('erin', 'Erin');
  const key = (await a.services().apiKeys.create('erin', 'erin')).key;
  // Concurrent requests of one key reach each replica's counter together, as one batch or a few.
  const statuses = await Promise.all(
    Array.from({ length: 60 }, (_, i) => call(i % 2 ? a : b, 'GET', '/api/storage', { key }).then((r) => r.status)),
  );
  t.equal(statuses.filter((status) => status === 200).length, 20, '20 allowed');
  t.equal(statuses.filter((status) => status === 429).length, 40, 'the rest refused');
  expectRateLimited(t, await call(a, 'GET', '/api/storage', { key }), 'default', 3600);
});
