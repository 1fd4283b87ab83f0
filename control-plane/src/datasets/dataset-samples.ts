import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import { newestImagesOf } from '../images/image.store.ts';
import { ImageUrls } from '../images/image-urls.ts';
import type { FileUrls } from '../storage/file-urls.ts';
import type { Sample, SampleImage } from './dataset.schemas.ts';

const SAMPLES_PER_DATASET = 4;

/** The newest few images of each dataset (of any workspaces), in one query, by dataset id. */
export async function datasetSamples(
  em: EntityManager,
  urls: FileUrls,
  datasets: Array<{ id: string; workspaceId: string }>,
  withImageUrls: boolean,
): Promise<Map<string, Array<z.input<typeof Sample>>>> {
  const bySet = new Map<string, Array<z.input<typeof Sample>>>();
  if (datasets.length === 0) return bySet;
  const workspaces = new Map(datasets.map((dataset) => [dataset.id, dataset.workspaceId]));
  const rows = await newestImagesOf(
    em,
    datasets.map((d) => d.id),
    SAMPLES_PER_DATASET,
  );
  const imageUrls = new ImageUrls(urls);
  for (const row of rows) {
    const ref = {
      id: row.id,
      workspaceId: workspaces.get(row.dataset_id)!,
      hash: row.hash,
      ext: row.ext,
      name: row.name,
      error: row.error,
      referenceKey: row.reference_key,
    };
    const sample = {
      id: row.id,
      width: row.width,
      height: row.height,
      thumbnailUrl: await imageUrls.thumbnail(ref),
      ...(withImageUrls ? { imageUrl: await imageUrls.image(ref) } : {}),
    };
    bySet.set(row.dataset_id, [...(bySet.get(row.dataset_id) ?? []), sample]);
  }
  return bySet;
}

/** Samples as the hosted service's client reads them (sampleImages: url is the thumbnail), leaving out images without one. */
export function sampleImagesOf(samples: Array<z.input<typeof Sample>>): Array<z.input<typeof SampleImage>> {
  return samples.flatMap(({ thumbnailUrl, imageUrl, width, height }) =>
    thumbnailUrl ? [{ url: thumbnailUrl, ...(imageUrl ? { imageUrl } : {}), width, height }] : [],
  );
}
