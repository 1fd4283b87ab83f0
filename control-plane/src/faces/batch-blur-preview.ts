import type { EntityManager } from '@mikro-orm/postgresql';
import { Conflict, Invalid, NotFound } from '../http/errors.ts';
import type { ImageUrls } from '../images/image-urls.ts';
import { runOf, type BatchBlurPayload, type BatchRunRow, type PreviewImage } from '../predict/batch-predict.store.ts';

/** A face blur preview of this dataset (404 otherwise, whatever run the id names). */
export async function previewOf(
  em: EntityManager,
  datasetId: string,
  previewJobId: string,
): Promise<BatchRunRow & { payload: BatchBlurPayload }> {
  const run = await runOf(em, datasetId, previewJobId);
  if (!run || run.payload.operation !== 'blur' || !run.payload.preview)
    throw NotFound(`Face blur preview ${previewJobId} not found in this dataset`);
  return run as BatchRunRow & { payload: BatchBlurPayload };
}

/** The preview to apply: this dataset's, finished, neither applied (409) nor discarded (409), made with these settings (400). */
export async function checkPreviewToApply(
  em: EntityManager,
  datasetId: string,
  previewJobId: string,
  settings: Pick<BatchBlurPayload, 'confidence' | 'boxScale' | 'imageId'>,
): Promise<void> {
  const preview = await previewOf(em, datasetId, previewJobId);
  if (preview.result?.appliedBy)
    throw Conflict(
      `Preview ${previewJobId} was applied already (run ${preview.result.appliedBy}); start a new preview`,
    );
  if (preview.result?.discarded) throw Conflict(`Preview ${previewJobId} was discarded; start a new preview`);
  if (preview.status !== 'completed')
    throw Conflict(
      `Preview ${previewJobId} is ${preview.status === 'queued' || preview.status === 'running' ? 'not finished yet' : preview.status}; it cannot be applied`,
    );
  const { confidence, boxScale, imageId } = preview.payload;
  const differs = [
    confidence !== settings.confidence && `confidence ${confidence}`,
    boxScale !== settings.boxScale && `boxScale ${boxScale}`,
    imageId !== settings.imageId && `imageId ${imageId ?? '(none)'}`,
  ].filter(Boolean);
  if (differs.length > 0)
    throw Invalid(`previewJobId: the preview was made with ${differs.join(', ')}; apply it with the same settings`);
}

/**
 * What GET shows of a run's preview: for a preview queued, running or finished and neither applied nor discarded, its
 * images with signed URLs (the file it prepared, or the image as it was where it found no face); else nothing.
 */
export async function previewsOf(urls: ImageUrls, workspaceId: string, run: BatchRunRow) {
  const pending =
    run.payload.operation === 'blur' &&
    run.payload.preview &&
    ['queued', 'running', 'completed'].includes(run.status) &&
    !run.result?.discarded &&
    !run.result?.appliedBy;
  if (!pending) return {};
  const images: PreviewImage[] = run.progress?.previews ?? [];
  const previews = await Promise.all(
    images.map(async (image) => {
      const ref = {
        workspaceId,
        ...(image.blurred ?? { hash: image.hash, ext: image.ext }),
        name: image.name,
        error: null,
      };
      const thumbnailUrl = await urls.thumbnail(ref);
      return {
        imageId: image.imageId,
        imageUrl: await urls.image(ref),
        ...(thumbnailUrl && { thumbnailUrl }),
        faces: image.faces,
      };
    }),
  );
  return { previews };
}
