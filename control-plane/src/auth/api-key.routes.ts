import { defineRoute } from '../http/define-route.ts';
import { ApiKeyCreateBody, ApiKeyCreated, ApiKeyList, ApiKeyPath, ApiKeyRevoked } from './api-key.schemas.ts';

const SIGNED_IN_OWNER =
  'Only the workspace owner signed in to the console (a password or OIDC session, with its X-CSRF-Token) may call this; ' +
  'any API key is refused with 403 (API keys cannot create or revoke API keys), other roles with 403 Workspace owner access required. ' +
  'The operator creates and revokes keys with `vpctl keys` as well.';

export const listApiKeys = defineRoute({
  method: 'GET',
  path: '/api/api-keys',
  tag: 'Account',
  summary: "List the workspace's API keys (owner only)",
  description:
    'Shows prefix, name, creation and last-use dates; never the key. A deployment’s own key is not listed: it is the ' +
    'deployment’s (deleting the deployment revokes it). The owner creates and revokes keys signed in to the console ' +
    '(`POST /api/api-keys`, `DELETE /api/api-keys/{keyId}`) or with `vpctl keys`.',
  auth: 'key',
  limit: 'mutation',
  response: { status: 200, description: 'The keys of the workspace that issued the calling key', schema: ApiKeyList },
  errors: [403],
  handler: async (ctx) => {
    const keys = await ctx.state.services.apiKeys.listForActor(ctx.state.actor);
    return { keys, total: keys.length };
  },
});

export const createApiKey = defineRoute({
  method: 'POST',
  path: '/api/api-keys',
  tag: 'Account',
  summary: "Create an API key of the workspace's owner (owner's console session only)",
  description:
    `${SIGNED_IN_OWNER} The key acts with the owner's rights in the session's workspace. It is in this response only: ` +
    'only its SHA-256 and display prefix are kept, so it cannot be shown again.',
  auth: 'key',
  limit: 'mutation',
  request: { body: ApiKeyCreateBody },
  response: { status: 201, description: 'Created: the key, shown once, and its list entry', schema: ApiKeyCreated },
  errors: [400, 403],
  handler: async (ctx, { body }) => {
    const created = await ctx.state.services.apiKeys.createForActor(ctx.state.actor, body.name);
    ctx.state.audit = { resource: `api-keys/${created.keyId}` };
    return created;
  },
});

export const revokeApiKey = defineRoute({
  method: 'DELETE',
  path: '/api/api-keys/:keyId',
  tag: 'Account',
  summary: 'Revoke an API key (owner’s console session only)',
  description:
    `${SIGNED_IN_OWNER} The key stops working at once on every replica (401 Invalid API key). ` +
    'A key of another workspace, a deployment’s own key (delete the deployment), or none: 404.',
  auth: 'key',
  limit: 'mutation',
  request: { params: ApiKeyPath },
  response: { status: 200, description: 'Revoked', schema: ApiKeyRevoked },
  errors: [400, 403, 404],
  handler: (ctx, { params }) => ctx.state.services.apiKeys.revokeForActor(ctx.state.actor, params.keyId),
});

export const apiKeyRoutes = [listApiKeys, createApiKey, revokeApiKey];
