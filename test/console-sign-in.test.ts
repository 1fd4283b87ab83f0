// Password sign-in in a real browser: the session cookie (HttpOnly), a write carrying the CSRF token, sign-out, and
// the lockout message after repeated failures (AUTH_FAILURE_LIMIT).
import t from 'tap';
import {
  foreignRequests,
  openConsoleBrowser,
  screenshot,
  seriousViolations,
  settled,
} from './helpers/console-browser.ts';
import { call } from './helpers/server.ts';
import { createDataset, startWorld } from './helpers/world.ts';

t.test('a user signs in with a password, stars a dataset, signs out, and is locked out after failures', async (t) => {
  const world = await startWorld(t, { AUTH_FAILURE_LIMIT: '4' });
  const origin = world.server.url;
  const set = await call(world.server, 'PUT', '/api/auth/password', {
    key: world.alice,
    body: { password: 'correct horse battery' },
  });
  t.equal(set.status, 204, 'alice sets a password with her key');
  await createDataset(world, world.alice, { dataset: 'birds', name: 'Birds', task: 'detect' });
  const { page, requests, errors } = await openConsoleBrowser(t);

  await page.goto(`${origin}/alice/datasets/birds`);
  await page.waitForURL(`${origin}/signin`);
  const username = page.getByLabel('Username', { exact: true });
  await username.waitFor();
  t.same(await seriousViolations(page), [], 'sign-in page with the password form: no serious or critical violations');
  await screenshot(page, 'signin-password');

  await username.fill('alice');
  await page.getByLabel('Password', { exact: true }).fill('wrong password');
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  const passwordAlert = page.locator('form[aria-labelledby="password-heading"] [role="alert"]');
  await passwordAlert.filter({ hasText: /\S/ }).waitFor();
  t.equal(new URL(page.url()).pathname, '/signin', 'a wrong password stays on the sign-in page');

  await page.getByLabel('Password', { exact: true }).fill('correct horse battery');
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.waitForURL(`${origin}/alice/datasets`);
  await page.getByRole('heading', { name: 'Datasets of alice' }).waitFor();
  t.equal(await page.evaluate(() => sessionStorage.getItem('vp-key')), null, 'no key kept: the session is a cookie');
  t.notMatch(String(await page.evaluate('document.cookie')), /vp_session/, 'the session cookie is HttpOnly');

  // A write with the cookie carries the session's CSRF token (the API refuses it otherwise).
  await page.getByRole('button', { name: /^Star Birds/ }).click();
  await page.getByRole('button', { name: 'Star Birds (1 star)' }).waitFor();
  const birds = await call<{ dataset: { isStarred: boolean } }>(world.server, 'GET', '/api/datasets/alice/birds', {
    key: world.alice,
  });
  t.equal(birds.body.dataset.isStarred, true, 'the star, sent with the cookie and CSRF token, reached the API');
  const withoutToken = await page.evaluate(async () => {
    const answer = await fetch('/api/datasets/alice/birds', {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ starred: false }),
    });
    return answer.status;
  });
  t.equal(withoutToken, 403, 'the same write without the CSRF token is refused');

  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForURL(`${origin}/signin`);
  const after = await page.evaluate(async () => (await fetch('/api/auth/session')).status);
  t.equal(after, 401, 'signed out: the session is gone');

  // Failures past AUTH_FAILURE_LIMIT answer 429, and the page says to wait.
  let lockedOut = false;
  for (let attempt = 0; attempt < 6 && !lockedOut; attempt++) {
    await page.getByLabel('Username', { exact: true }).fill('alice');
    await page.getByLabel('Password', { exact: true }).fill(`wrong ${attempt}`);
    const [answer] = await Promise.all([
      page.waitForResponse((response) => response.url().endsWith('/api/auth/login')),
      page.getByRole('button', { name: 'Sign in', exact: true }).click(),
    ]);
    if (answer.status() !== 429) continue;
    const message = await settled(
      () => passwordAlert.innerText(),
      (text) => /Too many failed sign-ins/.test(text),
    );
    lockedOut = /Too many failed sign-ins/.test(message);
  }
  t.ok(lockedOut, 'repeated failures lock the sign-in out, and the page says so');
  await screenshot(page, 'signin-locked-out');

  t.same(foreignRequests(requests, origin), [], 'the page requested no address but the appliance’s');
  t.same(errors, [], 'no console errors');
});
