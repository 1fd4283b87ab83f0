// The console's operator pages in a real browser, against a real control plane: a team's owner changes a member's
// role, adds and removes one; the owner signed in with a password creates an API key (shown once), uses it, revokes it
// from the page; a pasted key may list keys but not make them; the trash page restores a dataset and erases one; the
// credits page shows a grant; the health page lists the checks, and an admin's checks never name another workspace's
// hosts. A viewer is offered none of these pages, and the API refuses what they would do.
import type { Page } from 'playwright';
import t, { type Test } from 'tap';
import { RELEASE_VERSION } from '../control-plane/src/release-version.ts';
import {
  foreignRequests,
  openConsoleBrowser,
  screenshot,
  seriousViolations,
  settled,
  signInWithKey,
  type ConsoleBrowser,
} from './helpers/console-browser.ts';
import { call } from './helpers/server.ts';
import { enrollHost, WorkerClient } from './helpers/worker-client.ts';
import { createDataset, startWorld, type World } from './helpers/world.ts';

const PASSWORD = 'correct horse battery';
const OPERATOR_LINKS = ['Hosts', 'Jobs', 'Members', 'API keys', 'Trash', 'Credits', 'Health'];

interface Check {
  check: string;
  status: string;
  message: string;
  fix?: string;
}

// One appliance for the whole file (its pages are exercised in turn, each test leaving the next what it needs).
const world = await startWorld(t, { RATE_LIMIT_MUTATION: '100000' });
const origin = world.server.url;
await world.server.services().account.createUser('adam');
await world.server.services().account.setMemberRole('acme-team', 'adam', 'admin');
const admin = (await world.server.services().apiKeys.create('acme-team', 'ops', 'adam')).key;
const browser = await openConsoleBrowser(t);
const { page } = browser;

/** Accepts the next confirm() the page shows, and answers its text. */
function acceptNextConfirm(page: Page): Promise<string> {
  return new Promise((resolve) =>
    page.once('dialog', (dialog) => {
      resolve(dialog.message());
      void dialog.accept();
    }),
  );
}

async function checkPage(t: Test, console: ConsoleBrowser, name: string, what: string) {
  t.same(await seriousViolations(console.page), [], `${what}: no serious or critical axe violations`);
  await screenshot(console.page, name);
  t.same(foreignRequests(console.requests, origin), [], `${what}: no request leaves the appliance`);
  t.same(console.errors, [], `${what}: no page errors`);
}

async function members(world: World): Promise<Record<string, string>> {
  const answer = await call<{ members: Array<{ username: string; role: string }> }>(
    world.server,
    'GET',
    '/api/workspaces/acme-team/members',
    { key: world.team },
  );
  return Object.fromEntries(answer.body.members.map((member) => [member.username, member.role]));
}

async function openFromNav(page: Page, link: string, path: string) {
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: link, exact: true }).click();
  await page.waitForURL(`${origin}${path}`);
}

t.test('the team owner manages members: changes a role, adds a user, removes them', async (t) => {
  await signInWithKey(page, origin, world.team, 'acme-team');
  const nav = page.getByRole('navigation', { name: 'Main' });
  for (const link of OPERATOR_LINKS)
    t.equal(await nav.getByRole('link', { name: link, exact: true }).count(), 1, `the owner's nav links to ${link}`);
  await openFromNav(page, 'Members', '/acme-team/members');
  const table = page.getByRole('table', { name: 'Members' });
  await table.getByRole('row', { name: /^vicky/ }).waitFor();
  t.equal(await table.getByRole('combobox', { name: 'Role of alice' }).count(), 0, "the owner's role is not offered");

  await table.getByLabel('Role of vicky', { exact: true }).selectOption('editor');
  await table.getByRole('button', { name: 'Save the role of vicky' }).click();
  await page.getByRole('status').filter({ hasText: 'vicky is now editor.' }).waitFor();
  t.equal((await members(world)).vicky, 'editor', "the API reads vicky's new role");

  const form = page.getByRole('form', { name: 'Add a member' });
  await form.getByLabel('Username').fill('bobby');
  await form.getByLabel('Role').selectOption('viewer');
  await form.getByRole('button', { name: 'Add member' }).click();
  await table.getByRole('row', { name: /^bobby/ }).waitFor();
  t.equal((await members(world)).bobby, 'viewer', 'bobby was added as a viewer');

  await form.getByLabel('Username').fill('nobody-here');
  await form.getByRole('button', { name: 'Add member' }).click();
  const alert = page.getByRole('alert').filter({ hasText: 'User "nobody-here" not found' });
  await alert.waitFor();
  t.pass("an unknown user is refused, with the API's message");
  await checkPage(t, browser, 'operator-members', 'members page');

  const asked = acceptNextConfirm(page);
  await table.getByRole('button', { name: 'Remove bobby' }).click();
  t.match(await asked, /^Remove bobby from acme-team\?/, 'removing asks first');
  await page.getByRole('status').filter({ hasText: 'bobby was removed.' }).waitFor();
  t.notOk('bobby' in (await members(world)), 'bobby is no longer a member');
  await world.server.services().account.setMemberRole('acme-team', 'vicky', 'viewer');
});

t.test('a pasted key lists the keys but cannot create or revoke them', async (t) => {
  await openFromNav(page, 'API keys', '/acme-team/keys');
  const table = page.getByRole('table', { name: 'API keys' });
  await table
    .getByRole('row', { name: /ul_[0-9a-f]{8}/ })
    .first()
    .waitFor();
  t.match(await page.locator('main').innerText(), /Keys are created and revoked from a password or OIDC sign-in/);
  t.equal(await page.getByRole('form', { name: 'Create an API key' }).count(), 0, 'no create form');
  t.equal(await table.getByRole('button', { name: /^Revoke/ }).count(), 0, 'no revoke buttons');
  const prefixes = (await table.locator('tbody th').allInnerTexts()).map((text) => text.replace('…', ''));
  const listed = await call<{ keys: Array<{ prefix: string }> }>(world.server, 'GET', '/api/api-keys', {
    key: world.team,
  });
  t.same(prefixes.sort(), listed.body.keys.map((key) => key.prefix).sort(), 'the page lists the API’s keys');
  await checkPage(t, browser, 'operator-keys-pasted', 'API keys page (pasted key)');
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForURL(`${origin}/signin`);
});

t.test('the owner signed in with a password creates a key, sees it once, uses it and revokes it', async (t) => {
  const set = await call(world.server, 'PUT', '/api/auth/password', { key: world.alice, body: { password: PASSWORD } });
  t.equal(set.status, 204, 'alice sets a password');
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
  await page.getByLabel('Username', { exact: true }).fill('alice');
  await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.waitForURL(`${origin}/alice/datasets`);

  await openFromNav(page, 'Members', '/alice/members');
  await page.getByText('alice is a personal workspace').waitFor();
  t.equal(await page.getByRole('form', { name: 'Add a member' }).count(), 0, 'a personal workspace takes no members');
  await checkPage(t, browser, 'operator-members-personal', 'members page (personal workspace)');

  await openFromNav(page, 'API keys', '/alice/keys');
  const form = page.getByRole('form', { name: 'Create an API key' });
  await form.getByLabel("New key's name").fill('ci pipeline');
  await form.getByRole('button', { name: 'Create key' }).click();
  const shown = page.getByLabel('New key', { exact: true });
  await shown.waitFor();
  const secret = await shown.inputValue();
  t.match(secret, /^ul_[0-9a-f]{40}$/, 'the new key is shown');
  t.match(await page.locator('main').innerText(), /Copy it now: it will not be shown again\./);
  await page.getByRole('button', { name: 'Copy the key' }).click();
  await page.getByRole('status').filter({ hasText: 'Copied to the clipboard.' }).waitFor();
  t.equal(await page.evaluate('navigator.clipboard.readText()'), secret, 'the copy button copies the key');
  const table = page.getByRole('table', { name: 'API keys' });
  await table.getByRole('row', { name: new RegExp(secret.slice(0, 11)) }).waitFor();
  await checkPage(t, browser, 'operator-keys-created', 'API keys page with a new key');

  const summary = await call<{ username: string }>(world.server, 'GET', '/api/account/summary', { key: secret });
  t.equal(summary.status, 200, 'the new key works against the API');
  t.equal(summary.body.username, 'alice', "it acts in alice's workspace");
  const sneaky = await call<{ error: string }>(world.server, 'POST', '/api/api-keys', {
    key: secret,
    body: { name: 'sneaky' },
  });
  t.equal(sneaky.status, 403, 'a key cannot create keys');
  t.match(sneaky.body.error, /^API keys cannot create or revoke API keys/);

  await page.getByRole('button', { name: 'Done' }).click();
  await page.reload();
  await table.getByRole('row', { name: new RegExp(secret.slice(0, 11)) }).waitFor();
  t.notOk((await page.content()).includes(secret), 'once dismissed, the key is nowhere on the page again');

  const asked = acceptNextConfirm(page);
  await table.getByRole('button', { name: `Revoke ci pipeline (${secret.slice(0, 11)})` }).click();
  t.match(await asked, /^Revoke ci pipeline/, 'revoking asks first');
  await page.getByRole('status').filter({ hasText: 'was revoked' }).waitFor();
  const after = await call(world.server, 'GET', '/api/account/summary', { key: secret });
  t.equal(after.status, 401, 'the revoked key is refused at once');
  t.equal(await table.getByRole('row', { name: new RegExp(secret.slice(0, 11)) }).count(), 0, 'and no longer listed');
  await checkPage(t, browser, 'operator-keys-revoked', 'API keys page after a revoke');
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForURL(`${origin}/signin`);
});

t.test('keys: only the owner’s session may create or revoke, bad input is a 4xx', async (t) => {
  // eddie, the team's editor, signs in to acme-team with a password: a session, but not the owner's.
  const eddie = (await world.server.services().apiKeys.create('eddie', 'own')).key;
  await call(world.server, 'PUT', '/api/auth/password', { key: eddie, body: { password: PASSWORD } });
  const login = await fetch(`${origin}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'eddie', password: PASSWORD, workspace: 'acme-team' }),
  });
  const cookie = login.headers.getSetCookie()[0]!.split(';')[0]!;
  const { session } = (await login.json()) as { session: { csrfToken: string } };
  const headers = { cookie, 'x-csrf-token': session.csrfToken };
  const asEditor = await call<{ error: string }>(world.server, 'POST', '/api/api-keys', {
    headers,
    body: { name: 'mine' },
  });
  t.same([asEditor.status, asEditor.body], [403, { error: 'Workspace owner access required' }], 'an editor session');

  const keys = await call<{ keys: Array<{ keyId: string; prefix: string }> }>(world.server, 'GET', '/api/api-keys', {
    key: world.bobby,
  });
  const bobbyKey = keys.body.keys[0]!;
  const aliceLogin = await fetch(`${origin}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'alice', password: PASSWORD }),
  });
  const alice = {
    cookie: aliceLogin.headers.getSetCookie()[0]!.split(';')[0]!,
    'x-csrf-token': ((await aliceLogin.json()) as { session: { csrfToken: string } }).session.csrfToken,
  };
  const foreign = await call(world.server, 'DELETE', `/api/api-keys/${bobbyKey.keyId}`, { headers: alice });
  t.equal(foreign.status, 404, "another workspace's key is not found");
  t.equal((await call(world.server, 'GET', '/api/account/summary', { key: world.bobby })).status, 200, 'and works');
  for (const [body, what] of [
    [{ name: '' }, 'an empty name'],
    [{ name: 'x'.repeat(101) }, 'a name too long'],
    [{}, 'no name'],
  ] as const) {
    const bad = await call<{ error: string }>(world.server, 'POST', '/api/api-keys', { headers: alice, body });
    t.equal(bad.status, 400, `${what}: 400`);
    t.type(bad.body.error, 'string');
  }
  const badId = await call(world.server, 'DELETE', '/api/api-keys/ul_12345678', { headers: alice });
  t.equal(badId.status, 400, 'a key id that is not an id: 400');
  const noCsrf = await call(world.server, 'POST', '/api/api-keys', {
    headers: { cookie: alice.cookie },
    body: { name: 'x' },
  });
  t.equal(noCsrf.status, 403, 'a session write without its CSRF token is refused');
});

t.test('the trash page restores a dataset, erases one, and empties the trash', async (t) => {
  await signInWithKey(page, origin, world.team, 'acme-team');
  await createDataset(world, world.team, { dataset: 'old-birds', name: 'Old birds', task: 'detect' });
  await createDataset(world, world.team, { dataset: 'scratch', name: 'Scratch', task: 'detect' });
  for (const slug of ['old-birds', 'scratch'])
    t.equal((await call(world.server, 'DELETE', `/api/datasets/acme-team/${slug}`, { key: world.team })).status, 200);

  await openFromNav(page, 'Trash', '/acme-team/trash');
  const table = page.getByRole('table', { name: 'Trash' });
  const row = table.getByRole('row', { name: /^Old birds/ });
  await row.waitFor();
  t.match(await row.innerText(), /dataset[\s\S]*30 days/, 'type and days left until the purge');
  await checkPage(t, browser, 'operator-trash', 'trash page');

  await row.getByRole('button', { name: 'Restore dataset Old birds' }).click();
  await page.getByRole('status').filter({ hasText: 'dataset Old birds was restored.' }).waitFor();
  t.equal(
    (await call(world.server, 'GET', '/api/datasets/acme-team/old-birds', { key: world.team })).status,
    200,
    'the restored dataset is back',
  );
  await row.waitFor({ state: 'detached' });

  t.equal((await call(world.server, 'DELETE', '/api/datasets/acme-team/old-birds', { key: world.team })).status, 200);
  await page.reload();
  await row.waitFor();
  const asked = acceptNextConfirm(page);
  await row.getByRole('button', { name: 'Delete dataset Old birds permanently' }).click();
  t.match(await asked, /^Delete dataset Old birds permanently\? This cannot be undone\./);
  await page.getByRole('status').filter({ hasText: 'dataset Old birds was deleted permanently.' }).waitFor();
  const trash = await call<{ items: Array<{ slug: string }> }>(world.server, 'GET', '/api/trash', { key: world.team });
  t.same(
    trash.body.items.map((item) => item.slug),
    ['scratch'],
    'only the other dataset is left in trash',
  );
  const slugFree = await createDataset(world, world.team, { dataset: 'old-birds', name: 'Old birds', task: 'detect' });
  t.ok(slugFree, 'the erased dataset’s name is free again');

  const emptied = acceptNextConfirm(page);
  await page.getByRole('button', { name: 'Empty the trash' }).click();
  t.match(await emptied, /^Delete everything in the trash permanently\?/);
  await page.getByText('The trash is empty.').waitFor();
  const after = await call<{ total: number }>(world.server, 'GET', '/api/trash', { key: world.team });
  t.equal(after.body.total, 0, 'the trash is empty');
  await checkPage(t, browser, 'operator-trash-empty', 'empty trash page');
});

t.test('the credits page shows the balance granted and the transactions, newest first', async (t) => {
  const billing = world.server.services().billing;
  await billing.grant('acme-team', 12_000, 'PO 1234');
  await billing.grant('acme-team', 345, 'Top-up');
  await openFromNav(page, 'Credits', '/acme-team/credits');
  const balance = page.getByRole('region', { name: 'Balance' });
  await balance.getByText('$123.45').waitFor();
  const read = await call<{ balanceDisplay: string }>(world.server, 'GET', '/api/billing/balance', {
    key: world.team,
  });
  t.equal(read.body.balanceDisplay, '$123.45', 'the page shows the balance the API reads');
  const rows = page.getByRole('table', { name: 'Transactions, newest first' }).locator('tbody tr');
  const texts = await settled(
    () => rows.allInnerTexts(),
    (value) => value.length === 2,
  );
  t.match(texts[0], /Grant\s+Top-up\s+\$3\.45\s+\$123\.45/, 'the newest first, with the balance after it');
  t.match(texts[1], /Grant\s+PO 1234\s+\$120\.00\s+\$120\.00/);
  await checkPage(t, browser, 'operator-credits', 'credits page');
});

t.test("the health page lists the checks; no answer names another workspace's hosts", async (t) => {
  // bobby's private host, connected with an older agent; acme-team's own host (enrolling); an appliance pool host.
  const connected = await call<{ enrollmentToken: string }>(world.server, 'POST', '/api/hosts', {
    key: world.bobby,
    body: { name: 'bobby-secret-gpu' },
  });
  t.equal(connected.status, 201, 'bobby connects a host of his own');
  const enrolled = await call<{ workerKey: string }>(world.server, 'POST', '/api/hosts/enroll', {
    body: { token: connected.body.enrollmentToken },
  });
  const older = await WorkerClient.welcomed(world.server, enrolled.body.workerKey, { agentVersion: '0.0.1-older' });
  t.teardown(() => older.client.ws.close());
  const pool = await enrollHost(world.server, 'pool-gpu');
  const current = await WorkerClient.welcomed(world.server, pool.workerKey);
  t.teardown(() => current.client.ws.close());
  t.equal(
    (await call(world.server, 'POST', '/api/hosts', { key: world.team, body: { name: 'acme-gpu' } })).status,
    201,
  );

  const checksOf = async (key: string) => {
    const answer = await call<{ checks: Check[] }>(world.server, 'GET', '/api/health/checks', { key });
    t.equal(answer.status, 200);
    return { text: JSON.stringify(answer.body), byName: new Map(answer.body.checks.map((c) => [c.check, c])) };
  };
  const asAdmin = await checksOf(admin);
  t.same(
    [...asAdmin.byName.keys()],
    ['database', 'migrations', 'clock', 'signing secret', 'replicas', 'storage', 'hosts', 'agent versions', 'disk'],
    'the checks of vpctl doctor, in its order',
  );
  t.notOk(asAdmin.text.includes('bobby-secret-gpu'), "an acme-team admin's answer never names bobby's host");
  t.match(asAdmin.byName.get('hosts')!.message, /acme-team\/acme-gpu/, "it names the team's own host");
  t.match(asAdmin.byName.get('hosts')!.message, /^1 connected/, 'and counts the pool host it may use');
  t.same(asAdmin.byName.get('agent versions'), {
    check: 'agent versions',
    status: 'OK',
    message: `1 on ${RELEASE_VERSION}, the control plane's`,
  });
  t.match(asAdmin.byName.get('database')!.message, /^PostgreSQL \d+/);
  const asBobby = await checksOf(world.bobby);
  t.match(asBobby.byName.get('agent versions'), { status: 'WARN', message: /bobby\/bobby-secret-gpu 0\.0\.1-older/ });
  t.notOk(asBobby.text.includes('acme-gpu'), "bobby's answer never names acme-team's host");

  await openFromNav(page, 'Health', '/acme-team/health');
  const table = page.getByRole('table', { name: 'Health checks' });
  const hostsRow = table.getByRole('row', { name: /^hosts/ });
  await hostsRow.waitFor();
  t.match(await hostsRow.innerText(), /OK/, 'each check shows its status as a word');
  t.equal(await table.locator('tbody tr').count(), 9, 'one row per check');
  t.notOk((await page.locator('main').innerText()).includes('bobby-secret-gpu'), 'the page shows no foreign host');
  const before = browser.requests.filter((url) => url.endsWith('/api/health/checks')).length;
  await page.getByRole('button', { name: 'Check now' }).click();
  await settled(
    async () => browser.requests.filter((url) => url.endsWith('/api/health/checks')).length,
    (count) => count > before,
  );
  t.ok(
    browser.requests.filter((url) => url.endsWith('/api/health/checks')).length > before,
    'Check now runs the checks again',
  );
  await checkPage(t, browser, 'operator-health', 'health page');
});

t.test('a viewer is offered none of the operator pages, and the API refuses their calls', async (t) => {
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForURL(`${origin}/signin`);
  await signInWithKey(page, origin, world.viewer, 'acme-team');
  const nav = page.getByRole('navigation', { name: 'Main' });
  await nav.getByRole('link', { name: 'Datasets' }).waitFor();
  for (const link of OPERATOR_LINKS)
    t.equal(await nav.getByRole('link', { name: link, exact: true }).count(), 0, `no ${link} link for a viewer`);
  await page.goto(`${origin}/acme-team/health`);
  await page.getByRole('alert').filter({ hasText: "This page is for the workspace's owners and admins" }).waitFor();
  await checkPage(t, browser, 'operator-viewer-refused', 'an operator page opened by a viewer');

  const trashed = await createDataset(world, world.team, {
    dataset: 'viewer-test',
    name: 'Viewer test',
    task: 'detect',
  });
  await call(world.server, 'DELETE', '/api/datasets/acme-team/viewer-test', { key: world.team });
  const refused: Array<[string, string, unknown?]> = [
    ['GET', '/api/api-keys'],
    ['POST', '/api/api-keys', { name: 'mine' }],
    ['GET', '/api/health/checks'],
    ['GET', '/api/hosts'],
    ['GET', '/api/jobs'],
    ['PUT', '/api/workspaces/acme-team/members/eddie', { role: 'viewer' }],
    ['DELETE', '/api/workspaces/acme-team/members/eddie'],
    ['POST', '/api/trash', { id: trashed, type: 'dataset' }],
    ['DELETE', '/api/trash', { id: trashed, type: 'dataset' }],
    ['DELETE', '/api/trash', { all: true }],
  ];
  for (const [method, path, body] of refused) {
    const answer = await call<{ error: string }>(world.server, method, path, { key: world.viewer, body });
    t.equal(answer.status, 403, `${method} ${path}: 403 for a viewer`);
    t.type(answer.body.error, 'string');
  }
  t.equal((await members(world)).eddie, 'editor', "the viewer changed no one's role");
});
