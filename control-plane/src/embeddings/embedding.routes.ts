import { Readable } from 'node:stream';
import { z } from 'zod';
import { DatasetPath } from '../datasets/dataset.schemas.ts';
import { defineRoute } from '../http/define-route.ts';
import { MAX_EMBED_IMAGES } from '@vp/inference-server/contract';
import { defaults } from '@vp/config';
import {
  AnalysisCancelled,
  AnalysisQueued,
  ClusteringPage,
  ClusteringQuery,
  EmbeddingsSummary,
} from './embedding.schemas.ts';

const PATH = '/api/datasets/:owner/:dataset/embeddings';

export const startAnalysis = defineRoute({
  method: 'POST',
  path: PATH,
  tag: 'Datasets',
  summary: "Analyze a dataset: embed its images with this appliance's image embedder",
  description:
    'Queues an analysis (202) as a control-plane job (kind dataset-embeddings): every image without a vector of its current content ' +
    '(new, replaced, or embedded by another model) is embedded; images already embedded are not again. Where: with EMBEDDING_PLACEMENT ' +
    'auto (the default), on worker hosts when a connected host the workspace may use has a free GPU and runs the inference environment, ' +
    `in host jobs of kind embedding-chunk of up to ${MAX_EMBED_IMAGES} images each (CUDA; a host without the CUDA provider embeds on its CPU and says so), ` +
    "else, or when a host job fails or leaves an invalid output, on this control plane's CPU; control-plane: always here; hosts: always " +
    "on worker hosts (a GPU host, else a host's CPU slot), the analysis failing when none is connected or a host job fails. Both give the " +
    'same vectors (the same preprocessing and model). The progress says the placement and, on hosts, the device; a cancel cancels its host jobs. ' +
    'Images with a processing error are skipped. Errors: 409 an analysis in progress; 503 no embedding model on this appliance (EMBEDDING_MODEL_PATH).',
  auth: 'key',
  limit: 'default',
  request: { params: DatasetPath },
  response: { status: 202, description: 'Queued', schema: AnalysisQueued },
  errors: [403, 404, 409, 503],
  handler: (ctx, { params }) => ctx.state.services.embeddings.start(ctx.state.actor, params.owner, params.dataset),
});

export const analysisSummary = defineRoute({
  method: 'GET',
  path: PATH,
  tag: 'Datasets',
  summary: "The dataset's analysis: when it last completed, how many images have vectors, and the analysis in flight",
  auth: 'key',
  limit: 'default',
  request: { params: DatasetPath },
  response: { status: 200, description: 'The summary', schema: EmbeddingsSummary },
  errors: [404],
  handler: (ctx, { params }) => ctx.state.services.embeddings.summary(ctx.state.actor, params.owner, params.dataset),
});

export const cancelAnalysis = defineRoute({
  method: 'DELETE',
  path: PATH,
  tag: 'Datasets',
  summary: 'Cancel the analysis in flight',
  description:
    'It stops after the batch of images in hand; the vectors made so far are kept, and the next analysis goes on from them.',
  auth: 'key',
  limit: 'default',
  request: { params: DatasetPath },
  response: { status: 200, description: 'The analysis cancelled, or null', schema: AnalysisCancelled },
  errors: [403, 404],
  handler: (ctx, { params }) => ctx.state.services.embeddings.cancel(ctx.state.actor, params.owner, params.dataset),
});

export const clustering = defineRoute({
  method: 'GET',
  path: '/api/datasets/:owner/:dataset/images/clustering',
  tag: 'Datasets',
  summary: "The 2-D layout of the dataset's images from its last completed analysis, with their islands",
  description:
    'Each analysis ends by laying out the current vectors with UMAP (seeded: the same vectors give the same layout) and ranking ' +
    'the islands of that layout by size. Every image with a vector is in the layout: UMAP lays out an even sample of at most ' +
    `${defaults.embeddingLayoutSample.toLocaleString('en')} of them in ID order (EMBEDDING_LAYOUT_SAMPLE), and each other image is ` +
    "placed on its nearest sampled neighbour's island, among its nearest sampled neighbours there. " +
    'Images added or changed since are not in it until the next analysis. ' +
    'Errors: 404 the dataset has no layout yet (no analysis completed).',
  auth: 'key',
  limit: 'clustering',
  request: { params: DatasetPath, query: ClusteringQuery },
  response: { status: 200, description: 'A page of the layout', schema: ClusteringPage },
  errors: [400, 404],
  handler: (ctx, { params, query }) =>
    ctx.state.services.embeddings.clustering(ctx.state.actor, params.owner, params.dataset, query),
});

export const clusteringPoints = defineRoute({
  method: 'GET',
  path: '/api/datasets/:owner/:dataset/images/clustering/points',
  tag: 'Datasets',
  summary: "The whole layout in one compact binary response, for drawing (the console's embedding map)",
  description:
    'The same layout as GET .../images/clustering, every point in one response of 32 bytes a point instead of pages ' +
    'of JSON (a million points: 32 MB and one request of rate class Clustering, instead of about 240 MB in twenty). ' +
    'Binary, big-endian (network order), 32 bytes per point, in image ID order: the image ID (12 bytes: its 24 hex ' +
    'digits), umapX and umapY (float32), the island (int32; -1 scattered or not ranked), the first of the classIds ' +
    '(int32; -1 none), the split (int32: 0 train, 1 val, 2 test). Images missing since the layout was made are left ' +
    'out: the points are the body length divided by 32. Errors: 404 the dataset has no layout yet (no analysis completed).',
  auth: 'key',
  limit: 'clustering',
  request: { params: DatasetPath },
  response: {
    status: 200,
    description: 'The points',
    schema: z.string().meta({ format: 'binary' }),
    contentType: 'application/octet-stream',
  },
  errors: [404],
  handler: async (ctx, { params }) => {
    const records = await ctx.state.services.embeddings.layoutForDrawing(ctx.state.actor, params.owner, params.dataset);
    ctx.set('Cache-Control', 'private, no-cache');
    ctx.type = 'application/octet-stream';
    ctx.status = 200;
    ctx.body = Readable.from(records);
  },
});

export const embeddingRoutes = [startAnalysis, analysisSummary, cancelAnalysis, clustering, clusteringPoints];
