import { defineRoute } from '../http/define-route.ts';
import {
  ConnectBody,
  DisconnectResult,
  DiscoverBody,
  DiscoverResult,
  Integration,
  IntegrationList,
  IntegrationPatch,
  IntegrationPath,
  ObjectPage,
  ObjectsQuery,
} from './integration.schemas.ts';

const TAG = 'Storage integrations';
const PROVIDER_ERRORS =
  'Credentials the provider refuses, a bucket they cannot read, an endpoint the appliance may not reach (loopback and private ' +
  'addresses need OUTBOUND_ALLOWED_NETWORKS) or one that does not resolve or answer are 400; a server error of the provider is 502.';

export const listIntegrations = defineRoute({
  method: 'GET',
  path: '/api/integrations/buckets',
  tag: TAG,
  summary: "List the workspace's storage integrations (editor)",
  description: 'The integrations of the workspace that issued the key. Credentials are never returned.',
  auth: 'key',
  limit: 'mutation',
  response: { status: 200, description: 'The integrations', schema: IntegrationList },
  errors: [403],
  handler: async (ctx) => ({ integrations: await ctx.state.services.integrations.list(ctx.state.actor) }),
});

export const discoverIntegrationTargets = defineRoute({
  method: 'POST',
  path: '/api/integrations/buckets/discover',
  tag: TAG,
  summary: 'List the buckets some credentials can read, saving nothing (admin)',
  description: PROVIDER_ERRORS,
  auth: 'key',
  limit: 'mutation',
  request: { body: DiscoverBody },
  response: { status: 200, description: 'Buckets whose objects the credentials can list', schema: DiscoverResult },
  errors: [400, 403, 502],
  handler: (ctx, { body }) => ctx.state.services.integrations.discover(ctx.state.actor, body),
});

export const connectIntegration = defineRoute({
  method: 'POST',
  path: '/api/integrations/buckets',
  tag: TAG,
  summary: 'Connect storage: check each bucket is readable, then save the credentials encrypted (admin)',
  description: PROVIDER_ERRORS,
  auth: 'key',
  limit: 'mutation',
  request: { body: ConnectBody },
  documentBody: true,
  response: { status: 201, description: 'The integration, without its credentials', schema: Integration },
  errors: [400, 403, 502],
  handler: (ctx, { body }) => ctx.state.services.integrations.connect(ctx.state.actor, body),
});

export const updateIntegration = defineRoute({
  method: 'PATCH',
  path: '/api/integrations/buckets/:id',
  tag: TAG,
  summary: "Turn AI features on this storage's images on or off (admin)",
  description:
    'With processing false, new work that reads the images of datasets indexed in place from this storage is refused with 409: ' +
    'dataset analysis (embeddings), similar-image search, batch labeling and training; work already running goes on. The same 409 answers ' +
    'for a dataset whose integration was disconnected, until the storage is connected again and the dataset re-synced. On by default.',
  auth: 'key',
  limit: 'default',
  request: { params: IntegrationPath, body: IntegrationPatch },
  response: { status: 200, description: 'The integration', schema: Integration },
  errors: [400, 403, 404],
  handler: (ctx, { params, body }) => ctx.state.services.integrations.update(ctx.state.actor, params.id, body),
});

export const disconnectIntegration = defineRoute({
  method: 'DELETE',
  path: '/api/integrations/buckets/:id',
  tag: TAG,
  summary: 'Disconnect storage: its saved credentials are deleted, the bucket is not touched (admin)',
  auth: 'key',
  limit: 'default',
  request: { params: IntegrationPath },
  response: { status: 200, description: 'Disconnected', schema: DisconnectResult },
  errors: [403, 404],
  handler: (ctx, { params }) => ctx.state.services.integrations.disconnect(ctx.state.actor, params.id),
});

export const browseIntegration = defineRoute({
  method: 'GET',
  path: '/api/integrations/buckets/:id/objects',
  tag: TAG,
  summary: 'Browse the folders and files beneath a prefix of a connected bucket (editor)',
  description: `Folders come from the / delimiter. ${PROVIDER_ERRORS} Saved credentials the appliance can no longer read (its secret changed without re-sealing) are 409.`,
  auth: 'key',
  limit: 'default',
  request: { params: IntegrationPath, query: ObjectsQuery },
  response: { status: 200, description: 'One page of entries', schema: ObjectPage },
  errors: [400, 403, 404, 409, 502],
  handler: (ctx, { params, query }) => ctx.state.services.integrations.browse(ctx.state.actor, params.id, query),
});

export const integrationRoutes = [
  listIntegrations,
  discoverIntegrationTargets,
  connectIntegration,
  updateIntegration,
  disconnectIntegration,
  browseIntegration,
];
