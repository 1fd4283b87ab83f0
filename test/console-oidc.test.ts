// Signing in to the console through the company's OpenID Connect provider, in a real browser: a real oidc-provider on
// 127.0.0.1, the provider's button on the sign-in page, the code flow there and back, the user's datasets, sign-out.
import t from 'tap';
import { openConsoleBrowser, screenshot, seriousViolations } from './helpers/console-browser.ts';
import { startOidcProvider } from './helpers/oidc-provider.ts';
import { createDataset, startWorld } from './helpers/world.ts';

t.test('a user signs in through the OIDC provider and out again', async (t) => {
  const oidc = await startOidcProvider(t, { 'sub-alice': { preferred_username: 'alice', name: 'Alice' } });
  const world = await startWorld(t, { ...oidc.env, OIDC_NAME: 'Acme SSO' });
  const origin = world.server.url;
  oidc.register(`${origin}/api/auth/oidc/callback`);
  await createDataset(world, world.alice, { dataset: 'lanes', name: 'Lanes', task: 'detect' });
  const { page, requests, errors } = await openConsoleBrowser(t);

  await page.goto(`${origin}/alice/datasets`);
  await page.waitForURL(`${origin}/signin`);
  const button = page.getByRole('link', { name: 'Sign in with Acme SSO' });
  await button.waitFor();
  t.same(await seriousViolations(page), [], 'sign-in page with the provider: no serious or critical axe violations');
  await screenshot(page, 'signin-oidc');

  oidc.signInAs('sub-alice');
  await button.click();
  await page.waitForURL(`${origin}/alice/datasets`);
  await page.getByRole('link', { name: 'Lanes' }).waitFor();
  t.match(await page.locator('.who').innerText(), /alice · alice \(owner\)/, 'signed in as alice, in her workspace');
  const session = await page.evaluate(async () => (await fetch('/api/auth/session')).status);
  t.equal(session, 200, 'a session cookie, not a key, signs the requests');
  t.equal(await page.evaluate(() => sessionStorage.getItem('vp-key')), null, 'no key kept in the tab');
  const cookies = await page.context().cookies(origin);
  const cookie = cookies.find((entry) => entry.name === 'vp_session');
  t.ok(cookie?.httpOnly, 'the session cookie is HttpOnly');
  t.equal(cookie?.sameSite, 'Lax', 'and SameSite=Lax (the provider’s redirect back must carry it)');

  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForURL(`${origin}/signin`);
  t.equal(await page.evaluate(async () => (await fetch('/api/auth/session')).status), 401, 'signed out');

  const outside = [...new Set(requests.map((url) => new URL(url).origin))].filter((entry) => entry !== origin);
  t.same(outside, [oidc.issuer.replace(/\/$/, '')], 'the only other address visited is the provider’s');
  t.same(errors, [], 'no console errors');
});
