import { defineRoute } from '../http/define-route.ts';
import { ExploreQuery, ExploreResult } from './explore.schemas.ts';

export const exploreSearch = defineRoute({
  method: 'GET',
  path: '/api/explore/search',
  tag: 'Explore',
  summary: 'Public projects and datasets of every workspace on this appliance',
  description: 'Filters combine (all must hold). Private resources are never listed, not even to their own workspace.',
  auth: 'optional',
  limit: 'default',
  request: { query: ExploreQuery },
  response: { status: 200, description: 'Matches, newest first unless sorted otherwise', schema: ExploreResult },
  handler: (ctx, { query }) => ctx.state.services.explore.search(ctx.state.actor, query),
});

export const exploreRoutes = [exploreSearch];
