import { defineRoute } from '../http/define-route.ts';
import { ApiKeyList } from './api-key.schemas.ts';

export const listApiKeys = defineRoute({
  method: 'GET',
  path: '/api/api-keys',
  tag: 'Account',
  summary: "List the workspace's API keys (owner only)",
  description:
    'Shows prefix, name, creation and last-use dates; never the key. Keys are created and revoked with `vpctl keys`.',
  auth: 'key',
  limit: 'mutation',
  response: { status: 200, description: 'The keys of the workspace that issued the calling key', schema: ApiKeyList },
  errors: [403],
  handler: async (ctx) => {
    const keys = await ctx.state.services.apiKeys.listForActor(ctx.state.actor);
    return { keys, total: keys.length };
  },
});

export const apiKeyRoutes = [listApiKeys];
