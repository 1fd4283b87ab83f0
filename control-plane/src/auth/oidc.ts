// Sign-in through the company's OpenID Connect provider (OIDC_ISSUER, OIDC_CLIENT_ID, OIDC_CLIENT_SECRET): the
// authorization code flow with PKCE, state and nonce, as a confidential client (client_secret_basic).
//
// Outbound requests (discovery, token, JWKS, userinfo) use openid-client's own fetch, not net/'s guarded fetcher: the
// issuer is the operator's configuration, never a user's input (the guard's reason), and a company's provider usually
// sits on the private network, which the guard refuses unless OUTBOUND_ALLOWED_NETWORKS lists it. An http:// issuer is
// accepted (a provider on the same trusted network); https is what a deployment should use.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { OidcSettings } from '@vp/config';
import * as client from 'openid-client';
import { BadGateway, Forbidden, HttpError, Invalid, Unauthorized } from '../http/errors.ts';
import { insertOidcAttempt, takeOidcAttempt, userByUsername, type UserRow } from './session.store.ts';

/** How long a started sign-in waits for the provider's callback. */
const ATTEMPT_MINUTES = 10;

/** Discovered provider configurations, per issuer and client (a failed discovery is tried again next time). */
const configurations = new Map<string, Promise<client.Configuration>>();

function configuration(settings: OidcSettings): Promise<client.Configuration> {
  const key = `${settings.issuer}\n${settings.clientId}`;
  let found = configurations.get(key);
  if (!found) {
    found = client.discovery(
      new URL(settings.issuer),
      settings.clientId,
      undefined,
      client.ClientSecretBasic(settings.clientSecret),
      { execute: settings.issuer.startsWith('http:') ? [client.allowInsecureRequests] : [], timeout: 15 },
    );
    found.catch(() => configurations.delete(key));
    configurations.set(key, found);
  }
  return found.catch((error: unknown) => {
    throw BadGateway(`The OIDC provider ${settings.issuer} could not be reached: ${(error as Error).message}`);
  });
}

export function callbackUrl(baseUrl: string): string {
  return `${baseUrl}/api/auth/oidc/callback`;
}

/** A path of this appliance only (no scheme, no host, no `//` or `/\` that a browser would read as another host). */
export function safeReturnTo(returnTo: string | undefined): string {
  if (returnTo === undefined) return '/';
  if (!/^\/(?![/\\])[^\s\\]*$/.test(returnTo))
    throw Invalid('returnTo: must be a path of this appliance, e.g. /alice/datasets');
  return returnTo;
}

/** Starts a sign-in: remembers state, PKCE verifier, nonce and where to return; answers the provider's URL and the state. */
export async function startOidc(
  em: EntityManager,
  settings: OidcSettings,
  baseUrl: string,
  returnTo: string | undefined,
): Promise<{ url: string; state: string }> {
  const target = safeReturnTo(returnTo);
  const config = await configuration(settings);
  const codeVerifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const nonce = client.randomNonce();
  await insertOidcAttempt(em, { state, codeVerifier, nonce, returnTo: target }, ATTEMPT_MINUTES);
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: callbackUrl(baseUrl),
    scope: 'openid profile email',
    code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
    code_challenge_method: 'S256',
    state,
    nonce,
  });
  return { url: url.href, state };
}

/**
 * Finishes a sign-in: the callback's state must be the one this browser started (its cookie) and still waiting; the
 * code is exchanged and the ID token checked (signature, issuer, audience, nonce). The user is the existing user whose
 * username is the `preferred_username` claim, else the local part of a verified `email`; anyone else is refused (403):
 * the provider proves who someone is, while users and their workspaces are made by the operator (vpctl).
 */
export async function finishOidc(
  em: EntityManager,
  settings: OidcSettings,
  callback: URL,
  stateCookie: string | undefined,
): Promise<{ user: UserRow; returnTo: string }> {
  const state = callback.searchParams.get('state');
  const providerError = callback.searchParams.get('error');
  if (providerError) throw Unauthorized(`The OIDC provider refused the sign-in: ${providerError}`);
  if (!state || state !== stateCookie) throw Invalid('state: this sign-in was not started from this browser');
  const attempt = await takeOidcAttempt(em, state);
  if (!attempt) throw Invalid('state: unknown or expired sign-in; start again');
  const config = await configuration(settings);
  let claims: Record<string, unknown>;
  try {
    const tokens = await client.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: attempt.codeVerifier,
      expectedState: attempt.state,
      expectedNonce: attempt.nonce,
      idTokenExpected: true,
    });
    const idClaims = tokens.claims()!;
    claims = { ...idClaims };
    if (
      claims.preferred_username === undefined &&
      claims.email === undefined &&
      config.serverMetadata().userinfo_endpoint
    )
      claims = { ...(await client.fetchUserInfo(config, tokens.access_token, idClaims.sub)), ...claims };
  } catch (error) {
    if (error instanceof HttpError) throw error;
    throw Unauthorized(`The OIDC sign-in could not be completed: ${(error as Error).message}`);
  }
  const username = usernameOf(claims);
  const user = username === undefined ? undefined : await userByUsername(em, username);
  if (!user)
    throw Forbidden(
      `No user of this appliance matches ${username ?? `subject ${String(claims.sub)}`}: the operator creates users (vpctl users create)`,
    );
  return { user, returnTo: attempt.returnTo };
}

function usernameOf(claims: Record<string, unknown>): string | undefined {
  if (typeof claims.preferred_username === 'string' && claims.preferred_username)
    return claims.preferred_username.toLowerCase();
  if (typeof claims.email === 'string' && claims.email_verified === true)
    return claims.email.split('@')[0].toLowerCase();
  return undefined;
}
