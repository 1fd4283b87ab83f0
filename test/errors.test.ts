// Error shapes: every error is `{ error: string }` with the spec's status, whatever went wrong.
import t from 'tap';
import { z } from 'zod';
import { defineRoute } from '../control-plane/src/http/define-route.ts';
import { describeZodError } from '../control-plane/src/http/error-middleware.ts';
import { routes } from '../control-plane/src/routes.ts';
import { expectError } from './helpers/expect.ts';
import { call, startTestServer } from './helpers/server.ts';

const FAKE_SQL =
  'insert into "api_keys" ("key_hash") values ($1) - duplicate key value violates unique constraint "api_keys_key_hash_unique"';

/** Test-only routes that fail the ways real code can: a thrown Error, a thrown non-Error, an answer outside its own schema. */
const boom = defineRoute({
  method: 'GET',
  path: '/api/test/boom',
  tag: 'Test',
  summary: 'Throws',
  auth: 'public',
  limit: null,
  response: { status: 200, description: 'never', schema: z.object({ ok: z.literal(true) }) },
  handler: () => {
    throw new Error(`query failed: ${FAKE_SQL}`);
  },
});
const throwsString = defineRoute({
  method: 'POST',
  path: '/api/test/boom',
  tag: 'Test',
  summary: 'Throws a string',
  auth: 'public',
  limit: null,
  response: { status: 200, description: 'never', schema: z.object({ ok: z.literal(true) }) },
  handler: () => {
    throw FAKE_SQL;
  },
});
const leaky = defineRoute({
  method: 'GET',
  path: '/api/test/leaky',
  tag: 'Test',
  summary: 'Answers something its schema does not allow',
  auth: 'public',
  limit: null,
  response: { status: 200, description: 'never', schema: z.object({ prefix: z.string().length(11) }) },
  handler: () => ({ prefix: `ul_${'a'.repeat(40)}` }),
});

const strict = defineRoute({
  method: 'POST',
  path: '/api/test/strict',
  tag: 'Test',
  summary: 'Takes one known field',
  auth: 'public',
  limit: null,
  request: { body: z.strictObject({ name: z.string() }) },
  response: { status: 200, description: 'never', schema: z.object({ ok: z.literal(true) }) },
  handler: () => ({ ok: true as const }),
});

const server = await startTestServer(t, {
  routes: [...routes, boom, throwsString, leaky, strict],
  env: { JSON_BODY_LIMIT_BYTES: '1024', RATE_LIMIT_MUTATION: '100000', RATE_LIMIT_DEFAULT: '100000' },
});
await server.services().account.createUser('alice');
await server.services().account.createUser('bobby');
await server.services().account.createTeam('acme-team', 'alice');
const { key } = await server.services().apiKeys.create('acme-team', 'owner key');

t.test('an unknown route is 404 with { error }, with or without a key', async (t) => {
  for (const path of [
    '/api/nope',
    '/api/datasets/alice/cats/whiskers/more',
    '/nope',
    '/api/docs/assets/missing.js',
    '/api/users/alice/extra',
  ]) {
    const anonymous = await call(server, 'GET', path);
    expectError(t, anonymous, 404, `No route for GET ${path}`);
    const keyed = await call(server, 'GET', path, { key });
    expectError(t, keyed, 404, `No route for GET ${path}`);
  }
  expectError(t, await call(server, 'POST', '/api/nope', { body: {} }), 404);
});

t.test('a known path with the wrong method is 405 with an Allow header', async (t) => {
  const cases: Array<[string, string, string[]]> = [
    ['POST', '/api/health', ['GET']],
    ['DELETE', '/api/account/summary', ['GET']],
    ['PUT', '/api/api-keys', ['GET', 'POST']],
    ['PATCH', '/api/workspaces/acme-team/members/bobby', ['PUT', 'DELETE']],
    ['POST', '/api/workspaces/acme-team/members', ['GET']],
  ];
  for (const [method, path, allowed] of cases) {
    const response = await call(server, method, path, { key, body: method === 'DELETE' ? undefined : {} });
    expectError(t, response, 405, /Method not allowed/);
    const allow = (response.headers.get('allow') ?? '').split(/,\s*/);
    for (const m of allowed) t.ok(allow.includes(m), `${method} ${path}: Allow lists ${m}`);
    t.notOk(allow.includes(method), `${method} ${path}: Allow does not list ${method}`);
    for (const m of allowed) t.match(response.body.error, m, 'the message names the allowed methods');
  }
});

t.test('malformed JSON is 400 Malformed JSON body', async (t) => {
  for (const rawBody of ['{"role":', '{role: "viewer"}', "{'role':'viewer'}", '"viewer"', '42']) {
    const response = await call(server, 'PUT', '/api/workspaces/acme-team/members/bobby', { key, rawBody });
    expectError(t, response, 400, 'Malformed JSON body');
  }
  // Nothing was changed by the refused requests.
  const members = await call<{ members: Array<{ username: string }> }>(
    server,
    'GET',
    '/api/workspaces/acme-team/members',
    { key },
  );
  t.same(
    members.body.members.map((m) => m.username),
    ['alice'],
  );
});

t.test('an oversized JSON body is 413', async (t) => {
  const padding = 'x'.repeat(4096);
  const response = await call(server, 'PUT', '/api/workspaces/acme-team/members/bobby', {
    key,
    body: { role: 'viewer', padding },
  });
  expectError(t, response, 413, /1024 bytes/);
  // Just under the limit is parsed normally (the unknown field is ignored).
  const fits = await call(server, 'PUT', '/api/workspaces/acme-team/members/bobby', {
    key,
    body: { role: 'viewer', padding: 'x'.repeat(900) },
  });
  t.equal(fits.status, 200);
  t.same(fits.body, { success: true, username: 'bobby', role: 'viewer' });
});

t.test('validation errors are 400 and name the field and the rule', async (t) => {
  const wrongRole = await call(server, 'PUT', '/api/workspaces/acme-team/members/bobby', {
    key,
    body: { role: 'owner' },
  });
  expectError(t, wrongRole, 400, 'body.role: must be one of viewer, editor, admin');
  const missingRole = await call(server, 'PUT', '/api/workspaces/acme-team/members/bobby', { key, body: {} });
  expectError(t, missingRole, 400, /^body\.role: /);
  const noBody = await call(server, 'PUT', '/api/workspaces/acme-team/members/bobby', { key });
  expectError(t, noBody, 400, /^body\b/);
  const arrayBody = await call(server, 'PUT', '/api/workspaces/acme-team/members/bobby', {
    key,
    rawBody: '["viewer"]',
  });
  expectError(t, arrayBody, 400, /^body\b/);

  const handleRule = 'must be 4-32 lowercase letters or digits, with single hyphens between segments';
  for (const bad of ['ab', 'Alice', 'double--hyphen', '-lead', 'trail-', 'x'.repeat(33), 'under_score']) {
    const response = await call(server, 'GET', `/api/users/${encodeURIComponent(bad)}`);
    expectError(t, response, 400, `path.username: ${handleRule}`);
  }
  // Every problem of a location is reported at once, not just the first.
  const twoFields = await call(server, 'PUT', '/api/workspaces/BAD/members/x', { key, body: { role: 'viewer' } });
  expectError(t, twoFields, 400, `path.owner: ${handleRule}; path.username: ${handleRule}`);
});

t.test('a validation error lists the first 10 unknown keys and problems and counts the rest', async (t) => {
  const unknown = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`k${i}`, 0]));
  const response = await call(server, 'POST', '/api/test/strict', { body: { name: 'x', ...unknown } });
  expectError(
    t,
    response,
    400,
    'body: Unrecognized keys: "k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9" and 90 more keys',
  );

  // Bounded whatever the input: 200,000 unknown keys, 50,000 bad items, names and values of 100,000 characters.
  const keys = describeZodError(
    z.strictObject({}).safeParse(Object.fromEntries(Array.from({ length: 200_000 }, (_, i) => [`field${i}`, i])))
      .error!,
    'body',
  );
  t.match(keys, /^body: Unrecognized keys: "field0", .*"field9" and 199990 more keys$/);
  t.ok(keys.length < 300, `${keys.length} characters`);
  const items = describeZodError(
    z.array(z.number()).safeParse(Array.from({ length: 50_000 }, () => 'x')).error!,
    'body',
  );
  t.match(items, /^body\.0: .*; body\.9: [^;]*and 49990 more problems$/);
  t.equal(items.split('; ').length, 10);
  const long = 'y'.repeat(100_000);
  const huge = describeZodError(
    z
      .record(z.string(), z.strictObject({}))
      .safeParse(Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`${i}${long}`, { [long]: 1 }]))).error!,
    'body',
  );
  t.ok(huge.length < 12_000, `${huge.length} characters`);
  t.match(huge, / and 10 more problems$/);
});

t.test('other client errors keep the shape', async (t) => {
  expectError(t, await call(server, 'GET', '/api/account/summary'), 401);
  expectError(t, await call(server, 'GET', '/api/account/summary', { key: 'nope' }), 401, 'Invalid API key');
  const { key: bobbyKey } = await server.services().apiKeys.create('bobby', 'bobby');
  expectError(
    t,
    await call(server, 'GET', '/api/workspaces/acme-team/members', { key: bobbyKey }),
    403,
    'Permission denied for this operation',
  );
  expectError(t, await call(server, 'GET', '/api/users/nobody-here'), 404, /nobody-here/);
  expectError(
    t,
    await call(server, 'PUT', '/api/workspaces/acme-team/members/alice', { key, body: { role: 'viewer' } }),
    409,
  );
  expectError(t, await call(server, 'DELETE', '/api/workspaces/acme-team/members/nobody-here', { key }), 404);
});

t.test('an unexpected exception is 500 with a request id, and no stack or SQL', async (t) => {
  const forbidden = [
    /insert into/i,
    /api_keys/,
    /duplicate key/,
    /\bat [\w.<>]+ \(/,
    /\.ts:\d+/,
    /stack/i,
    /query failed/,
  ];
  for (const [method, path] of [
    ['GET', '/api/test/boom'],
    ['POST', '/api/test/boom'],
    ['GET', '/api/test/leaky'],
  ]) {
    const response = await call(server, method, path, { body: method === 'POST' ? {} : undefined });
    expectError(t, response, 500, 'Internal server error', ['requestId']);
    const requestId = response.body.requestId as string;
    t.match(requestId, /^[0-9a-f-]{36}$/, 'a generated request id');
    t.equal(response.headers.get('x-request-id'), requestId, 'the same id is in X-Request-Id');
    const text = JSON.stringify(response.body);
    for (const pattern of forbidden) t.notMatch(text, pattern, `${method} ${path}: body does not contain ${pattern}`);
  }
  const leaky = await call(server, 'GET', '/api/test/leaky');
  t.notMatch(JSON.stringify(leaky.body), /ul_a+/, 'a value outside the response schema is not sent');

  // A caller's own sane request id is kept, so a support request can quote it.
  const traced = await call(server, 'GET', '/api/test/boom', { headers: { 'x-request-id': 'client-trace-0001' } });
  t.equal(traced.body.requestId, 'client-trace-0001');
  t.equal(traced.headers.get('x-request-id'), 'client-trace-0001');
  const insane = await call(server, 'GET', '/api/test/boom', { headers: { 'x-request-id': 'a b<script>' } });
  t.match(insane.body.requestId, /^[0-9a-f-]{36}$/, 'an unusable incoming id is replaced');

  const ids = new Set<string>();
  for (let i = 0; i < 3; i++) ids.add((await call(server, 'GET', '/api/test/boom')).body.requestId as string);
  t.equal(ids.size, 3, 'each request gets its own id');
  // The server is still healthy afterwards.
  t.equal((await call(server, 'GET', '/api/health')).status, 200);
});

t.test('successful responses carry a request id too', async (t) => {
  const response = await call(server, 'GET', '/api/health');
  t.match(response.headers.get('x-request-id'), /^[0-9a-f-]{36}$/);
});
