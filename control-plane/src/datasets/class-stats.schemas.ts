import { z } from 'zod';

const Count = z.number().int();

const HistogramBin = z.object({
  bin: z.number().meta({ description: "Lower edge of the bin, in the histogram's unit" }),
  count: Count,
  size: z
    .number()
    .meta({ description: 'Width of the bin in the same unit: the bin holds values in [bin, bin + size)' }),
});

/** Consecutive bins (empty ones included) from the lowest value to the highest; `[]` when nothing was counted. */
const histogram = (description: string) => z.array(HistogramBin).meta({ description });

const Grid = z.array(z.array(Count));

export const ClassStats = z.object({
  classes: z
    .array(
      z.object({
        classId: Count,
        count: Count.meta({ description: 'Annotations of the class' }),
        imageCount: Count.meta({ description: 'Images with at least one' }),
      }),
    )
    .meta({
      description: 'Every class of the dataset in index order, unused ones with 0; always exact, even when sampled',
    }),
  imageStats: z.object({
    widthHistogram: histogram('Image width in pixels; images that failed to decode are left out'),
    heightHistogram: histogram('Image height in pixels; images that failed to decode are left out'),
    pointsHistogram: histogram(
      'Points per annotation (2 for a box, the vertices of a polygon, 4 for an oriented box, the keypoints of a pose); labels without geometry are left out',
    ),
    fileSizeHistogram: histogram('File size in bytes'),
    objectsPerImageHistogram: histogram('Annotations per image, unlabeled images included'),
    bboxWidthHistogram: histogram('Width of the enclosing box, normalized 0-1: always 20 bins of 0.05'),
    bboxHeightHistogram: histogram('Height of the enclosing box, normalized 0-1: always 20 bins of 0.05'),
    bboxWidthNormHistogram: histogram(
      'bboxWidthHistogram again, under the name the hosted service gives the normalized one',
    ),
    bboxHeightNormHistogram: histogram(
      'bboxHeightHistogram again, under the name the hosted service gives the normalized one',
    ),
    formatDistribution: z.record(z.string(), Count).meta({ description: 'Images per file format (jpg, png, ...)' }),
  }),
  locationHeatmap: z
    .object({ bins: Grid, maxCount: Count.meta({ description: 'The largest cell, for scaling colours' }) })
    .meta({
      description:
        'Enclosing-box centres on a 20×20 grid over the normalized image: bins[row][column], row from the top (y), column from the left (x), each 0.05 wide',
    }),
  dimensionHeatmap: z
    .object({
      bins: Grid,
      maxCount: Count,
      minWidth: Count,
      maxWidth: Count,
      minHeight: Count,
      maxHeight: Count,
    })
    .meta({
      description:
        'Image sizes on a 20×20 grid: bins[row][column], row over heights from minHeight to maxHeight, column over widths from minWidth to maxWidth, each 1/20 of the range (the maximum falls in the last cell); all 0 when no image decoded',
    }),
  classNames: z.array(z.string()),
  cached: z.boolean().meta({ description: 'Served from the cache kept since the last change to the dataset' }),
  sampleSize: Count.nullable().meta({
    description:
      'Images the image and annotation statistics were computed from, when the dataset has more than 5,000,000; null when all were used',
  }),
});
export type ClassStatsResult = z.input<typeof ClassStats>;
