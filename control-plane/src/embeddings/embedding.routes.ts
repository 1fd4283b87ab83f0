import { DatasetPath } from '../datasets/dataset.schemas.ts';
import { defineRoute } from '../http/define-route.ts';
import { MAX_EMBED_IMAGES } from '@vp/inference-server/contract';
import { MAX_LAYOUT } from './embedding.job.ts';
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
    `the islands of that layout by size. A layout holds at most ${MAX_LAYOUT.toLocaleString('en')} images: a larger dataset is ` +
    'laid out from an even sample of its images in ID order. Images added or changed since are not in it until the next analysis. ' +
    'Errors: 404 the dataset has no layout yet (no analysis completed).',
  auth: 'key',
  limit: 'clustering',
  request: { params: DatasetPath, query: ClusteringQuery },
  response: { status: 200, description: 'A page of the layout', schema: ClusteringPage },
  errors: [400, 404],
  handler: (ctx, { params, query }) =>
    ctx.state.services.embeddings.clustering(ctx.state.actor, params.owner, params.dataset, query),
});

export const embeddingRoutes = [startAnalysis, analysisSummary, cancelAnalysis, clustering];
