import { defineRoute } from '../http/define-route.ts';
import { ImagePath } from './image.schemas.ts';
import { SimilarImages, SimilarQuery } from './similar.schemas.ts';

export const similarImages = defineRoute({
  method: 'GET',
  path: '/api/images/:imageId/similar',
  tag: 'Images',
  summary: 'Up to 24 images like this one from public datasets and the datasets of your workspace and teams',
  description:
    "Nearest by this appliance's image embedder (an approximate index over every analyzed image). Images of the source dataset, " +
    'of datasets holding a copy of the query (same content) and the copies themselves are left out. An image not analyzed yet is ' +
    'embedded first; 503 when that fails (no embedding model, file unreadable or not decodable). 409 for an image of a dataset backed ' +
    'by connected storage whose integration has AI features turned off (processing false) or was disconnected.',
  auth: 'key',
  limit: 'hydrate',
  request: { params: ImagePath, query: SimilarQuery },
  response: { status: 200, description: 'Similar images, most similar first', schema: SimilarImages },
  errors: [404, 409, 503],
  handler: (ctx, { params, query }) => ctx.state.services.similarImages.similar(ctx.state.actor, params.imageId, query),
});

export const similarRoutes = [similarImages];
