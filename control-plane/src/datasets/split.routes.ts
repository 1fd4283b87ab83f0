import { defineRoute } from '../http/define-route.ts';
import { DatasetPath } from './dataset.schemas.ts';
import { Redistributed, RedistributeBody } from './split.schemas.ts';

export const redistributeSplits = defineRoute({
  method: 'POST',
  path: '/api/datasets/:owner/:dataset/splits/redistribute',
  tag: 'Datasets',
  summary: 'Randomly reassign every image to train/val/test by percentage',
  auth: 'key',
  limit: 'default',
  request: { params: DatasetPath, body: RedistributeBody },
  response: { status: 200, description: 'Redistributed', schema: Redistributed },
  errors: [403, 404],
  handler: (ctx, { params, body }) =>
    ctx.state.services.splits.redistribute(ctx.state.actor, params.owner, params.dataset, body),
});

export const splitRoutes = [redistributeSplits];
