import { z } from 'zod';
import { ImageHash } from '../images/image.schemas.ts';
import { SimilarImage } from '../images/similar.schemas.ts';

/** At most this many images per answer, and query hashes per request (the spec's limits). */
export const MODEL_SIMILAR_LIMIT = 100;

export const ModelSimilarQuery = z.object({
  hashes: z
    .string()
    .transform((list) => [
      ...new Set(
        list
          .split(',')
          .map((item) => item.trim().toLowerCase())
          .filter(Boolean),
      ),
    ])
    .pipe(z.array(ImageHash).max(MODEL_SIMILAR_LIMIT, `at most ${MODEL_SIMILAR_LIMIT} hashes`))
    .optional()
    .meta({
      description:
        `Comma-separated image hashes (up to ${MODEL_SIMILAR_LIMIT}), a subset of the worst cohort of GET ?analysis=1; hashes outside it are ignored. ` +
        'Absent or empty: the whole worst cohort',
    }),
});

export const ModelSimilarImages = z.object({
  images: z.array(SimilarImage).meta({
    description: `At most ${MODEL_SIMILAR_LIMIT}: the nearest of each worst image in turn (worst first), each image once; score is its similarity to the worst image it was found for`,
  }),
});
