// Console sign-in (README, Identity and access): password and OIDC sign-in, the session, sign-out, passwords.
import type { AppContext } from '../http/app-context.ts';
import { defineRoute } from '../http/define-route.ts';
import { NotFound } from '../http/errors.ts';
import { requireKey } from './access.ts';
import {
  LoginBody,
  NoBody,
  OidcCallbackQuery,
  OidcStartQuery,
  PasswordBody,
  Providers,
  SessionResponse,
} from './auth-session.schemas.ts';
import type { KeyActor } from './actor.ts';
import { callbackUrl, finishOidc, startOidc } from './oidc.ts';
import type { SignInUser } from './session.service.ts';
import { cookieHeader, OIDC_STATE_COOKIE, SESSION_COOKIE } from './session-token.ts';

const TAG = 'Sign-in';

/** The audit log's actor of a sign-in or sign-out: the session's user, in the session's workspace. */
function auditSession(ctx: AppContext, actor: KeyActor): void {
  ctx.state.audit = {
    actor: { userId: actor.userId, username: actor.username, workspaceId: actor.workspaceId, via: actor.keyPrefix },
    resource: `users/${actor.username}`,
  };
}

export const authProviders = defineRoute({
  method: 'GET',
  path: '/api/auth/providers',
  tag: TAG,
  summary: 'How users sign in to the console',
  auth: 'public',
  limit: null,
  response: { status: 200, description: 'Password sign-in, and the OIDC provider when configured', schema: Providers },
  handler: (ctx) => {
    const oidc = ctx.state.services.sessionSettings.oidc;
    return { password: true as const, oidc: oidc ? { name: oidc.name } : null };
  },
});

export const login = defineRoute({
  method: 'POST',
  path: '/api/auth/login',
  tag: TAG,
  summary: 'Sign in with a username and password',
  description:
    'Sets the `vp_session` cookie (HttpOnly, SameSite=Lax, Path=/; Secure when PUBLIC_BASE_URL is https). Wrong passwords count against AUTH_FAILURE_LIMIT per client address and per username (429 with Retry-After past it, even with the right password, until the window allows again).',
  auth: 'public',
  limit: 'default',
  request: { body: LoginBody },
  response: { status: 200, description: 'Signed in; the cookie is set', schema: SessionResponse },
  errors: [400, 401, 403, 429],
  handler: async (ctx, { body }) => {
    const sessions = ctx.state.services.sessions;
    // A failed sign-in of a user is audited in their personal workspace; of nobody known, as the appliance's.
    const named: SignInUser = (user) => {
      ctx.state.audit = {
        actor: { userId: user.id, username: user.username, workspaceId: user.homeWorkspaceId, via: null },
        resource: `users/${user.username}`,
      };
    };
    const { token, session, actor } = await sessions.login(body, ctx.state.clientAddress, named);
    auditSession(ctx, actor);
    ctx.append('Set-Cookie', sessions.cookie(token));
    ctx.set('Cache-Control', 'no-store');
    return { session };
  },
});

export const currentSession = defineRoute({
  method: 'GET',
  path: '/api/auth/session',
  tag: TAG,
  summary: "The session of the request's cookie, with its CSRF token",
  auth: 'public',
  limit: 'default',
  response: { status: 200, description: 'Signed in', schema: SessionResponse },
  errors: [401],
  handler: async (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    return { session: await ctx.state.services.sessions.current(ctx.cookies.get(SESSION_COOKIE)) };
  },
});

export const logout = defineRoute({
  method: 'POST',
  path: '/api/auth/logout',
  tag: TAG,
  summary: 'Sign out: deletes the session and clears the cookie',
  auth: 'public',
  limit: 'default',
  response: {
    status: 204,
    description: 'Signed out (also when there was no session)',
    schema: NoBody,
    contentType: 'none',
  },
  handler: async (ctx) => {
    const sessions = ctx.state.services.sessions;
    const ended = await sessions.logout(ctx.cookies.get(SESSION_COOKIE));
    if (ended) auditSession(ctx, ended);
    ctx.append('Set-Cookie', sessions.cookie(undefined));
    ctx.status = 204;
  },
});

export const setPassword = defineRoute({
  method: 'PUT',
  path: '/api/auth/password',
  tag: TAG,
  summary: 'Set your console password',
  description:
    'With the API key of your personal workspace, or from a session (then with `currentPassword` when one is set). Your other sessions end. The operator can also set one: `vpctl users password <username>`.',
  auth: 'key',
  limit: 'mutation',
  request: { body: PasswordBody },
  response: { status: 204, description: 'Password set', schema: NoBody, contentType: 'none' },
  errors: [400, 401, 403, 429],
  handler: async (ctx, { body }) => {
    const actor = requireKey(ctx.state.actor);
    const token = ctx.get('authorization') ? undefined : ctx.cookies.get(SESSION_COOKIE);
    await ctx.state.services.sessions.changeOwn(actor, body, token, ctx.state.clientAddress);
    ctx.status = 204;
  },
});

export const oidcStart = defineRoute({
  method: 'GET',
  path: '/api/auth/oidc/start',
  tag: TAG,
  summary: "Sign in through the company's OIDC provider: 302 to it",
  description: 'Authorization code flow with PKCE, state and nonce. 404 when no provider is configured (OIDC_ISSUER).',
  auth: 'public',
  limit: 'default',
  request: { query: OidcStartQuery },
  response: {
    status: 302,
    description: "Location: the provider's authorization URL",
    schema: NoBody,
    contentType: 'none',
  },
  errors: [400, 404, 502],
  handler: async (ctx, { query }) => {
    const services = ctx.state.services;
    const settings = services.sessionSettings.oidc;
    if (!settings) throw NotFound('No OIDC provider is configured (OIDC_ISSUER)');
    const { url, state } = await startOidc(services.em, settings, services.sessionSettings.baseUrl, query.returnTo);
    ctx.append(
      'Set-Cookie',
      cookieHeader(OIDC_STATE_COOKIE, state, { secure: services.sessions.secureCookies, maxAgeSeconds: 600 }),
    );
    ctx.set('Cache-Control', 'no-store');
    ctx.redirect(url);
  },
});

export const oidcCallback = defineRoute({
  method: 'GET',
  path: '/api/auth/oidc/callback',
  tag: TAG,
  summary: "The OIDC provider's redirect back: signs in and 302 to the page sign-in started from",
  description:
    'The user is the existing user named by the `preferred_username` claim, else by the local part of a verified `email`; anyone else gets 403 (users are created by the operator).',
  auth: 'public',
  limit: 'default',
  request: { query: OidcCallbackQuery },
  response: {
    status: 302,
    description: 'Location: the returnTo path given to start, or /',
    schema: NoBody,
    contentType: 'none',
  },
  errors: [400, 401, 403, 404, 502],
  handler: async (ctx) => {
    const services = ctx.state.services;
    const { oidc: settings, baseUrl } = services.sessionSettings;
    if (!settings) throw NotFound('No OIDC provider is configured (OIDC_ISSUER)');
    const callback = new URL(callbackUrl(baseUrl));
    callback.search = ctx.querystring;
    const stateCookie = ctx.cookies.get(OIDC_STATE_COOKIE);
    const { user, returnTo } = await finishOidc(services.em, settings, callback, stateCookie);
    const { token, actor } = await services.sessions.open(user.id, undefined, 'oidc');
    auditSession(ctx, actor);
    const secure = services.sessions.secureCookies;
    ctx.append('Set-Cookie', services.sessions.cookie(token));
    ctx.append('Set-Cookie', cookieHeader(OIDC_STATE_COOKIE, '', { secure, maxAgeSeconds: 0 }));
    ctx.set('Cache-Control', 'no-store');
    ctx.redirect(returnTo);
  },
});

export const authSessionRoutes = [authProviders, login, currentSession, logout, setPassword, oidcStart, oidcCallback];
