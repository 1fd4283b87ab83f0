// A real OpenID Connect provider (oidc-provider) on 127.0.0.1 for sign-in tests: one confidential client, the accounts
// given, and an interaction that signs in as whichever account the test chose (no login page to drive).
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';

interface Teardown {
  teardown(fn: () => unknown): void;
}

/** Claims of one account (besides `sub`, which is its id). */
export type AccountClaims = Record<string, unknown>;

export interface TestOidcProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** The environment that points a control plane at this provider. */
  env: Record<string, string>;
  /** Registers the client's redirect URI (the control plane's, known once it listens); the provider answers from then on. */
  register(redirectUri: string): void;
  /** The account the next sign-in interaction completes as. */
  signInAs(accountId: string): void;
}

interface GrantContext {
  oidc: {
    provider: Provider;
    client: { clientId: string };
    session: { accountId: string; grantIdFor(clientId: string): string | undefined };
    result?: { consent?: { grantId?: string } };
  };
}

export async function startOidcProvider(
  t: Teardown,
  accounts: Record<string, AccountClaims>,
): Promise<TestOidcProvider> {
  let provider: Provider | undefined;
  let handle: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  let account: string | undefined;
  const server = createServer((req, res) => {
    if (!provider || !handle) return void res.writeHead(503).end('client not registered yet');
    if (req.url?.startsWith('/interaction/')) return void interact(provider, req, res);
    handle(req, res);
  });
  /** The login prompt finishes as the chosen account; consent is implied (loadExistingGrant below). */
  const interact = async (current: Provider, req: IncomingMessage, res: ServerResponse) => {
    try {
      const details = await current.interactionDetails(req, res);
      if (details.prompt.name !== 'login' || !account) throw new Error(`unexpected prompt ${details.prompt.name}`);
      await current.interactionFinished(
        req,
        res,
        { login: { accountId: account } },
        { mergeWithLastSubmission: false },
      );
    } catch (error) {
      res.writeHead(500).end(String(error));
    }
  };
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise((resolve) => server.close(resolve)));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const clientId = 'vision-platform';
  const clientSecret = 'test-client-secret-that-is-long-enough';
  return {
    issuer,
    clientId,
    clientSecret,
    env: { OIDC_ISSUER: issuer, OIDC_CLIENT_ID: clientId, OIDC_CLIENT_SECRET: clientSecret },
    register(redirectUri) {
      provider = new Provider(issuer, {
        clients: [
          {
            client_id: clientId,
            client_secret: clientSecret,
            redirect_uris: [redirectUri],
            grant_types: ['authorization_code'],
            response_types: ['code'],
            token_endpoint_auth_method: 'client_secret_basic',
          },
        ],
        claims: { openid: ['sub'], profile: ['preferred_username', 'name'], email: ['email', 'email_verified'] },
        features: { devInteractions: { enabled: false } },
        // Set, so the provider does not print a notice for each default it falls back to (its memory adapter and
        // development keys still print one warning each: right for a test).
        ttl: { AccessToken: 600, AuthorizationCode: 60, Grant: 600, IdToken: 600, Interaction: 600, Session: 600 },
        pkce: { required: () => true },
        findAccount: (_ctx: unknown, sub: string) =>
          accounts[sub] ? { accountId: sub, claims: () => ({ sub, ...accounts[sub] }) } : undefined,
        // A first-party client: every scope it asks for is granted without a consent prompt.
        loadExistingGrant: async (ctx: GrantContext) => {
          const { oidc } = ctx;
          const existing = oidc.result?.consent?.grantId ?? oidc.session.grantIdFor(oidc.client.clientId);
          if (existing) return oidc.provider.Grant.find(existing);
          const grant = new oidc.provider.Grant({ accountId: oidc.session.accountId, clientId: oidc.client.clientId });
          grant.addOIDCScope('openid profile email');
          await grant.save();
          return grant;
        },
      });
      handle = provider.callback();
    },
    signInAs(accountId) {
      account = accountId;
    },
  };
}
