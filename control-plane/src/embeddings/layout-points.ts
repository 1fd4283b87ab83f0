import { SPLITS } from '../datasets/dataset.entity.ts';
import type { LayoutPointRow } from './layouts.store.ts';

/**
 * The layout's points as the embedding map draws them (GET .../images/clustering/points): a JSON page of 50,000 costs
 * about 12 MB, and a million points twenty rate-limited pages; these records cost 32 bytes a point, one request.
 * Each record, little-endian: the image ID's 12 bytes (its 24 hex digits), x and y (float32), the island (int32, -1
 * scattered), the image's first class (int32, -1 none), its split (uint8: 0 train, 1 val, 2 test), 3 bytes of zero
 * (records stay 4-byte aligned, so a Float32Array or Int32Array over the whole body reads them in place).
 */
export const POINT_BYTES = 32;

export const POINTS_FORMAT =
  `Binary, little-endian, ${POINT_BYTES} bytes per point, in image ID order: the image ID (12 bytes: its 24 hex digits), ` +
  'umapX and umapY (float32), the island (int32; -1 scattered or not ranked), the first of the classIds (int32; -1 ' +
  'none), the split (uint8: 0 train, 1 val, 2 test), then 3 zero bytes. Images missing since the layout was made are ' +
  'left out: the points are the body length divided by 32.';

/** The records of the rows that are still images of the dataset. */
export function encodePoints(rows: LayoutPointRow[]): Buffer {
  const kept = rows.filter((row) => !row.missing);
  const bytes = Buffer.alloc(kept.length * POINT_BYTES);
  kept.forEach((row, i) => {
    const at = i * POINT_BYTES;
    bytes.write(row.image_id, at, 12, 'hex');
    bytes.writeFloatLE(row.x, at + 12);
    bytes.writeFloatLE(row.y, at + 16);
    bytes.writeInt32LE(row.cluster ?? -1, at + 20);
    bytes.writeInt32LE(row.class_ids?.[0] ?? -1, at + 24);
    bytes[at + 28] = SPLITS.indexOf(row.split!);
  });
  return bytes;
}
