import { z } from 'zod';

/** At most this many similar images per answer (the spec's limit). */
export const SIMILAR_LIMIT = 24;

/** The licences a result names; a dataset's own licence outside this list reads Other, none reads None. */
export const RESULT_LICENSES = [
  'None',
  'CC0-1.0',
  'PDM-1.0',
  'CC-BY-2.5',
  'CC-BY-3.0',
  'CC-BY-4.0',
  'CC-BY-NC-2.0',
  'CC-BY-NC-3.0',
  'CC-BY-NC-4.0',
  'CC-BY-SA-3.0',
  'CC-BY-SA-4.0',
  'CC-BY-NC-SA-3.0',
  'CC-BY-NC-SA-4.0',
  'CC-BY-ND-4.0',
  'CC-BY-NC-ND-2.0',
  'CC-BY-NC-ND-4.0',
  'Apache-2.0',
  'MIT',
  'BSD-3-Clause',
  'AGPL-3.0',
  'GPL-2.0',
  'GPL-3.0',
  'LGPL-3.0',
  'ODbL-1.0',
  'DbCL-1.0',
  'Research-Only',
  'Other',
] as const;

export const SimilarQuery = z.object({
  includeSourceDataset: z.stringbool().default(false).meta({
    description:
      'Include the source dataset and datasets holding copies of the query image; the copies themselves stay excluded',
  }),
});

/** One image found: where it is, its thumbnail and how like the query it is. */
export const SimilarImage = z.object({
  id: z.string(),
  name: z.string(),
  hash: z.string(),
  width: z.number().int(),
  height: z.number().int(),
  thumbnailUrl: z.string(),
  dataset: z.object({ owner: z.string(), dataset: z.string(), license: z.enum(RESULT_LICENSES) }),
  score: z
    .number()
    .min(0)
    .max(1)
    .meta({ description: "Cosine similarity of the two images' embeddings, 0-1 (1: the same picture)" }),
});

export const SimilarImages = z.object({
  images: z.array(SimilarImage).meta({ description: `Most similar first, at most ${SIMILAR_LIMIT}` }),
});
