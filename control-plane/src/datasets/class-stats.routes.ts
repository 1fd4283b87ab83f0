import { defineRoute } from '../http/define-route.ts';
import { ClassStats } from './class-stats.schemas.ts';
import { DatasetPath } from './dataset.schemas.ts';

export const classStatsRoute = defineRoute({
  method: 'GET',
  path: '/api/datasets/:owner/:dataset/class-stats',
  tag: 'Datasets',
  summary: 'Class counts, image and box histograms and heatmaps',
  description:
    'Computed in the database and cached until the dataset changes (cached: true). Every image counts up to 5,000,000 images (about 2 s cold at 1,000,000); larger datasets are sampled (sampleSize).',
  auth: 'optional',
  limit: 'default',
  request: { params: DatasetPath },
  response: { status: 200, description: 'Statistics', schema: ClassStats },
  errors: [404],
  handler: (ctx, { params }) => ctx.state.services.datasets.classStats(ctx.state.actor, params.owner, params.dataset),
});
