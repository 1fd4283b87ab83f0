import { z } from 'zod';
import { SPLITS } from '../datasets/dataset.entity.ts';
import { offsetQuery } from '../http/pagination.ts';

const AnalysisProgress = z.object({
  stage: z.enum(['embedding', 'umap']).meta({
    description: 'embedding: images are being embedded; umap: the 2-D layout and its islands are being computed',
  }),
  percent: z.number(),
  processed: z.number().int().optional().meta({ description: 'Images done (embedded or passed over)' }),
  total: z.number().int().optional().meta({
    description: 'Images to embed: those without a current vector when the analysis started, and any added since',
  }),
  failedDownloads: z
    .number()
    .int()
    .optional()
    .meta({ description: 'Images whose file could not be read from storage' }),
  failedInference: z.number().int().optional().meta({ description: 'Images the embedder could not decode' }),
  placement: z.enum(['hosts', 'control-plane']).optional().meta({
    description:
      "Where the images are embedded: worker hosts (in host jobs of kind embedding-chunk), or this control plane's CPU",
  }),
  device: z.enum(['cpu', 'cuda']).optional().meta({ description: 'On worker hosts: the device the last chunk ran on' }),
});

const ActiveAnalysis = z.object({
  id: z.string(),
  status: z.enum(['queued', 'starting', 'running']),
  progress: AnalysisProgress.nullable(),
  createdAt: z.string(),
});

export const EmbeddingsSummary = z.object({
  analyzedAt: z.string().nullable().meta({ description: 'When the last analysis completed; null before any' }),
  embeddingsCount: z
    .number()
    .int()
    .meta({ description: "Images with a vector of their current content from this appliance's embedder" }),
  latestImageAt: z
    .string()
    .nullable()
    .meta({ description: 'When the newest image was added: later than analyzedAt, the analysis is behind' }),
  activeJob: ActiveAnalysis.nullable().meta({ description: 'The queued or running analysis with its progress' }),
});

export const AnalysisQueued = z.object({
  jobId: z.string().meta({ description: 'The analysis: GET on the same path follows it, DELETE cancels it' }),
});

export const AnalysisCancelled = z.object({
  cancelled: z.string().nullable().meta({ description: 'The ID of the analysis cancelled; null when none was active' }),
});

/** The most points one page of the layout gives (and its default): the most one layout has. */
const CLUSTERING_PAGE = 50_000;

export const ClusteringQuery = offsetQuery(CLUSTERING_PAGE, CLUSTERING_PAGE);

const LayoutPoint = z.object({
  id: z.string().meta({ description: 'The image' }),
  umapX: z.number(),
  umapY: z.number(),
  cluster: z.number().int().nullable().meta({
    description:
      'Island rank by size: 0 the largest; -1 scattered (on no island of at least 5 images, or 0.1% of the layout)',
  }),
  split: z.enum(SPLITS).nullable().meta({ description: 'null when the image is missing' }),
  classIds: z.array(z.number().int()),
  width: z.number().int(),
  height: z.number().int(),
  bytes: z.number().int().nullable(),
  labelCount: z.number().int(),
  labeled: z.boolean(),
  missing: z.boolean().meta({
    description: 'The image left the dataset (deleted or moved) since the layout was made; its other fields are empty',
  }),
});

export const ClusteringPage = z.object({
  images: z.array(LayoutPoint).meta({ description: 'Points in image ID order' }),
  total: z.number().int().meta({ description: 'Points in the layout' }),
  offset: z.number().int(),
  limit: z.number().int(),
  hasMore: z.boolean(),
  nextOffset: z.number().int().nullable(),
  updatedAt: z.string().meta({ description: 'When the layout was made' }),
});
