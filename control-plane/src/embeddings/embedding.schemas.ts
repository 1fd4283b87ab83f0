import { z } from 'zod';

const AnalysisProgress = z.object({
  stage: z.enum(['embedding', 'umap']).meta({ description: 'embedding: images are being embedded (the 2-D layout, umap, is not built on this appliance yet)' }),
  percent: z.number(),
  processed: z.number().int().optional().meta({ description: 'Images done (embedded or passed over)' }),
  total: z.number().int().optional().meta({ description: 'Images to embed: those without a current vector when the analysis started, and any added since' }),
  failedDownloads: z.number().int().optional().meta({ description: 'Images whose file could not be read from storage' }),
  failedInference: z.number().int().optional().meta({ description: 'Images the embedder could not decode' }),
});

const ActiveAnalysis = z.object({
  id: z.string(),
  status: z.enum(['queued', 'starting', 'running']),
  progress: AnalysisProgress.nullable(),
  createdAt: z.string(),
});

export const EmbeddingsSummary = z.object({
  analyzedAt: z.string().nullable().meta({ description: 'When the last analysis completed; null before any' }),
  embeddingsCount: z.number().int().meta({ description: "Images with a vector of their current content from this appliance's embedder" }),
  latestImageAt: z.string().nullable().meta({ description: 'When the newest image was added: later than analyzedAt, the analysis is behind' }),
  activeJob: ActiveAnalysis.nullable().meta({ description: 'The queued or running analysis with its progress' }),
});

export const AnalysisQueued = z.object({ jobId: z.string().meta({ description: 'The analysis: GET on the same path follows it, DELETE cancels it' }) });

export const AnalysisCancelled = z.object({ cancelled: z.string().nullable().meta({ description: 'The ID of the analysis cancelled; null when none was active' }) });
