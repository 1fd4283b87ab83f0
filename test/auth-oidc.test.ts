// Console sign-in through an OpenID Connect provider: a real oidc-provider on 127.0.0.1, a real control plane and
// PostgreSQL, and a browser's part played by fetch with a cookie jar (redirects followed by hand).
import { ConfigError, loadConfig } from '@vp/config';
import t from 'tap';
import { expectError as isError } from './helpers/expect.ts';
import { startOidcProvider } from './helpers/oidc-provider.ts';
import { call, startTestServer, type Fetched } from './helpers/server.ts';

const oidc = await startOidcProvider(t, {
  'sub-alice': { preferred_username: 'alice', name: 'Alice' },
  'sub-bobby-mail': { email: 'bobby@acme.example', email_verified: true },
  'sub-unverified': { email: 'alice@elsewhere.example', email_verified: false },
  'sub-mallory': { preferred_username: 'mallory', email: 'mallory@acme.example', email_verified: true },
});
const server = await startTestServer(t, {
  env: { ...oidc.env, OIDC_NAME: 'Acme SSO', RATE_LIMIT_DEFAULT: '100000', RATE_LIMIT_MUTATION: '100000' },
});
oidc.register(`${server.url}/api/auth/oidc/callback`);
const account = server.services().account;
for (const username of ['alice', 'bobby']) await account.createUser(username);

/** Cookies by name, for every host (as a browser does for one host name on several ports). */
type Jar = Map<string, string>;

function keep(jar: Jar, response: Response): void {
  for (const line of response.headers.getSetCookie()) {
    const [pair] = line.split(';');
    const at = pair.indexOf('=');
    const [name, value] = [pair.slice(0, at).trim(), pair.slice(at + 1).trim()];
    if (!value || /max-age=0/i.test(line) || /expires=Thu, 01 Jan 1970/i.test(line)) jar.delete(name);
    else jar.set(name, value);
  }
}

const cookieHeader = (jar: Jar) => [...jar].map(([name, value]) => `${name}=${value}`).join('; ');

/**
 * Starts sign-in at the control plane and follows every redirect (provider, interaction, back) to the control plane's
 * callback, whose answer is returned with the jar.
 */
async function signInThroughProvider(accountId: string, returnTo?: string): Promise<{ last: Response; jar: Jar }> {
  oidc.signInAs(accountId);
  const jar: Jar = new Map();
  let url = `${server.url}/api/auth/oidc/start${returnTo === undefined ? '' : `?returnTo=${encodeURIComponent(returnTo)}`}`;
  for (let hop = 0; hop < 12; hop++) {
    const response = await fetch(url, { redirect: 'manual', headers: { cookie: cookieHeader(jar) } });
    keep(jar, response);
    const location = response.headers.get('location');
    if (url.startsWith(`${server.url}/api/auth/oidc/callback`) || !location) return { last: response, jar };
    url = new URL(location, url).href;
  }
  throw new Error('too many redirects');
}

async function body(response: Response): Promise<Fetched> {
  const text = await response.text();
  const parsed = (text ? JSON.parse(text) : {}) as Record<string, unknown>;
  return { status: response.status, headers: response.headers, body: parsed };
}

t.test('providers names the configured OIDC provider', async (t) => {
  const response = await call(server, 'GET', '/api/auth/providers');
  t.same(response.body, { password: true, oidc: { name: 'Acme SSO' } });
});

t.test('start redirects to the provider with code flow, PKCE, state and nonce', async (t) => {
  const response = await fetch(`${server.url}/api/auth/oidc/start`, { redirect: 'manual' });
  t.equal(response.status, 302);
  const location = new URL(response.headers.get('location')!);
  t.equal(location.origin, oidc.issuer);
  const params = Object.fromEntries(location.searchParams);
  t.match(params, {
    response_type: 'code',
    client_id: oidc.clientId,
    redirect_uri: `${server.url}/api/auth/oidc/callback`,
    code_challenge_method: 'S256',
    code_challenge: /^[A-Za-z0-9_-]{43}$/,
    state: /.{20,}/,
    nonce: /.{20,}/,
  });
  t.match(params.scope, /\bopenid\b/);
  t.match(response.headers.get('set-cookie'), new RegExp(`^vp_oidc_state=${params.state}; HttpOnly; SameSite=Lax`));
});

t.test('a user known by preferred_username signs in and lands where they started', async (t) => {
  const { last, jar } = await signInThroughProvider('sub-alice', '/alice/datasets?sort=name');
  t.equal(last.status, 302);
  t.equal(last.headers.get('location'), '/alice/datasets?sort=name');
  t.ok(jar.get('vp_session'), 'session cookie set');
  t.notOk(jar.has('vp_oidc_state'), 'state cookie cleared');
  const session = await call<{ session: Record<string, unknown> }>(server, 'GET', '/api/auth/session', {
    headers: { cookie: `vp_session=${jar.get('vp_session')}` },
  });
  t.equal(session.status, 200);
  t.match(session.body.session, { username: 'alice', owner: 'alice', role: 'owner' });
  const members = await call(server, 'GET', '/api/workspaces/alice/members', {
    headers: { cookie: `vp_session=${jar.get('vp_session')}` },
  });
  t.equal(members.status, 200, 'the session works on the API');
});

t.test('without returnTo the callback lands on /', async (t) => {
  const { last } = await signInThroughProvider('sub-alice');
  t.equal(last.status, 302);
  t.equal(last.headers.get('location'), '/');
});

t.test('a verified email maps to the user its local part names', async (t) => {
  const { last, jar } = await signInThroughProvider('sub-bobby-mail');
  t.equal(last.status, 302);
  const session = await call<{ session: Record<string, unknown> }>(server, 'GET', '/api/auth/session', {
    headers: { cookie: `vp_session=${jar.get('vp_session')}` },
  });
  t.match(session.body.session, { username: 'bobby', owner: 'bobby' });
});

t.test('an unknown subject is refused (403) and gets no session', async (t) => {
  for (const accountId of ['sub-mallory', 'sub-unverified']) {
    const { last, jar } = await signInThroughProvider(accountId);
    isError(t, await body(last), 403, /No user of this appliance matches/);
    t.notOk(jar.has('vp_session'), `${accountId}: no session cookie`);
  }
});

t.test('returnTo must be a path of this appliance', async (t) => {
  for (const returnTo of ['https://evil.example/', '//evil.example/x', '/\\evil.example', 'alice/datasets']) {
    const response = await fetch(`${server.url}/api/auth/oidc/start?returnTo=${encodeURIComponent(returnTo)}`, {
      redirect: 'manual',
    });
    isError(t, await body(response), 400, /returnTo/);
  }
});

t.test('a callback this browser did not start, or one replayed, is refused', async (t) => {
  const start = await fetch(`${server.url}/api/auth/oidc/start`, { redirect: 'manual' });
  const state = new URL(start.headers.get('location')!).searchParams.get('state')!;
  const noCookie = await call(server, 'GET', `/api/auth/oidc/callback?code=abc&state=${state}`);
  isError(t, noCookie, 400, /not started from this browser/);
  const forged = await call(server, 'GET', `/api/auth/oidc/callback?code=abc&state=other`, {
    headers: { cookie: `vp_oidc_state=other` },
  });
  isError(t, forged, 400, /unknown or expired/);
  // A real callback URL, answered once: the second time its state is gone.
  oidc.signInAs('sub-alice');
  const jar: Jar = new Map();
  keep(jar, start);
  let url = start.headers.get('location')!;
  let callbackUrl: string | undefined;
  for (let hop = 0; hop < 12 && !callbackUrl; hop++) {
    const response = await fetch(url, { redirect: 'manual', headers: { cookie: cookieHeader(jar) } });
    keep(jar, response);
    url = new URL(response.headers.get('location')!, url).href;
    if (url.startsWith(`${server.url}/api/auth/oidc/callback`)) callbackUrl = url;
  }
  const headers = { cookie: cookieHeader(jar) };
  t.equal((await fetch(callbackUrl!, { redirect: 'manual', headers })).status, 302);
  isError(t, await body(await fetch(callbackUrl!, { redirect: 'manual', headers })), 400, /unknown or expired/);
});

t.test('the provider refusing the sign-in is a 401', async (t) => {
  const start = await fetch(`${server.url}/api/auth/oidc/start`, { redirect: 'manual' });
  const state = new URL(start.headers.get('location')!).searchParams.get('state')!;
  const refused = await call(server, 'GET', `/api/auth/oidc/callback?error=access_denied&state=${state}`, {
    headers: { cookie: `vp_oidc_state=${state}` },
  });
  isError(t, refused, 401, /refused the sign-in: access_denied/);
});

t.test('OIDC settings come all together or not at all', async (t) => {
  let thrown: unknown;
  try {
    loadConfig({ OIDC_ISSUER: oidc.issuer });
  } catch (error) {
    thrown = error;
  }
  t.ok(thrown instanceof ConfigError, 'a ConfigError: start-up stops with one line');
  t.throws(() => loadConfig({ OIDC_ISSUER: oidc.issuer, OIDC_CLIENT_ID: 'x' }), {
    message: /OIDC_ISSUER, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET are set together or not at all/,
  });
  t.throws(() => loadConfig({ OIDC_ISSUER: 'ftp://idp.example', OIDC_CLIENT_ID: 'x', OIDC_CLIENT_SECRET: 'y' }), {
    message: /OIDC_ISSUER must be an http\(s\) URL/,
  });
  t.equal(loadConfig({}).oidc, null);
  t.match(loadConfig(oidc.env).oidc, { issuer: oidc.issuer, clientId: oidc.clientId, name: 'Single sign-on' });
});
