// Image labels: the per-task geometry rules of PATCH /api/images/{id}, each refused with a 400 naming the
// label index and the rule; coordinates saved rounded to 5 decimals; the shapes the statistics store.
import t from 'tap';
import { HttpError } from '../control-plane/src/http/errors.ts';
import {
  LabelInput,
  MAX_LABELS_PER_IMAGE,
  TASKS,
  validateLabels,
  type Label,
  type Task,
} from '../control-plane/src/images/labels.ts';

type Options = Parameters<typeof validateLabels>[3];
type Asserts = Pick<typeof t, 'ok' | 'equal' | 'match'>;

/** Asserts validateLabels refuses with a 400 HttpError whose message is (or matches) `message`. */
const refuses = (
  t: Asserts,
  task: Task,
  labels: unknown[],
  message: string | RegExp,
  classCount = 5,
  options?: Options,
) => {
  let error: unknown;
  try {
    validateLabels(task, classCount, labels as Label[], options);
  } catch (caught) {
    error = caught;
  }
  t.ok(error instanceof HttpError && error.status === 400, 'a 400 HttpError');
  if (typeof message === 'string') t.equal((error as Error | undefined)?.message, message);
  else t.match((error as Error | undefined)?.message, message);
};

t.test('the request schema checks shapes and types only, and is strict', async (t) => {
  t.ok(LabelInput.safeParse({ classId: 0, bbox: [0.5, 0.5, 0.2, 0.2] }).success);
  t.ok(LabelInput.safeParse({ classId: 0, bbox: [5, 5] }).success, 'lengths and ranges are validateLabels rules');
  t.ok(LabelInput.safeParse({ classId: 1, mask: { size: [2, 3], counts: [1, 5] } }).success);
  t.notOk(LabelInput.safeParse({ classId: -1 }).success, 'negative classId');
  t.notOk(LabelInput.safeParse({ classId: 1.5 }).success, 'fractional classId');
  t.notOk(LabelInput.safeParse({ bbox: [0.5, 0.5, 0.1, 0.1] }).success, 'classId required');
  t.notOk(LabelInput.safeParse({ classId: 0, bbox: [0.5, Infinity, 0.1, 0.1] }).success, 'infinite coordinate');
  t.notOk(LabelInput.safeParse({ classId: 0, bbox: [0.5, Number.NaN, 0.1, 0.1] }).success, 'NaN coordinate');
  t.notOk(LabelInput.safeParse({ classId: 0, polygon: [0, 0] }).success, 'unknown key');
  t.notOk(
    LabelInput.safeParse({ classId: 0, mask: { size: [0, 3], counts: [] } }).success,
    'mask size must be positive',
  );
  t.notOk(LabelInput.safeParse({ classId: 0, mask: { size: [2, 3], counts: [-1] } }).success, 'negative run length');
  t.notOk(LabelInput.safeParse({ classId: 0, mask: { size: [2, 3], counts: [6], extra: 1 } }).success, 'strict mask');
  t.same(TASKS, ['detect', 'segment', 'semantic', 'depth', 'classify', 'pose', 'obb']);
});

t.test('detect: a bbox per label, rounded to 5 decimals, shaped as itself with 2 points', async (t) => {
  const { labels, shapes } = validateLabels('detect', 3, [
    { classId: 2, bbox: [0.123456789, 0.5, 0.1000049, 0.2] },
    { classId: 0, bbox: [-0, 1, 1, 0.000006] },
  ]);
  t.same(labels, [
    { classId: 2, bbox: [0.12346, 0.5, 0.1, 0.2] },
    { classId: 0, bbox: [0, 1, 1, 0.00001] },
  ]);
  t.ok(Object.is(labels[1].bbox![0], 0), '-0 is saved as 0');
  t.same(shapes, [
    { cx: 0.12346, cy: 0.5, w: 0.1, h: 0.2, points: 2 },
    { cx: 0, cy: 1, w: 1, h: 0.00001, points: 2 },
  ]);
  t.same(validateLabels('detect', 3, []), { labels: [], shapes: [] }, 'no labels is fine');
});

t.test('detect refusals name the index and the rule', async (t) => {
  const box = [0.5, 0.5, 0.2, 0.2];
  refuses(
    t,
    'detect',
    [
      { classId: 0, bbox: box },
      { classId: 7, bbox: box },
    ],
    'labels[1].classId: 7 is out of range; the dataset has 5 classes',
  );
  refuses(t, 'detect', [{ classId: 1, bbox: box }], 'labels[0].classId: 1 is out of range; the dataset has 1 class', 1);
  refuses(t, 'detect', [{ classId: 0 }], 'labels[0].bbox: required for detect datasets');
  refuses(
    t,
    'detect',
    [{ classId: 0, bbox: [0.5, 0.5, 0.2] }],
    'labels[0].bbox: must be 4 numbers [x_center, y_center, width, height]',
  );
  refuses(
    t,
    'detect',
    [
      { classId: 0, bbox: box },
      { classId: 0, bbox: [0.5, 0.5, 0, 0.2] },
    ],
    'labels[1].bbox: width and height must be greater than 0',
  );
  refuses(
    t,
    'detect',
    [{ classId: 0, bbox: [0.5, 0.5, 0.2, 0.000004] }],
    'labels[0].bbox: width and height must be greater than 0',
  );
  refuses(
    t,
    'detect',
    [{ classId: 0, bbox: [0.5, 1.2, 0.2, 0.2] }],
    'labels[0].bbox[1]: 1.2 is outside 0-1; coordinates are normalized',
  );
  refuses(t, 'detect', [{ classId: 0, bbox: [-0.1, 0.5, 0.2, 0.2] }], /^labels\[0\]\.bbox\[0\]: -0\.1 is outside 0-1/);
  refuses(
    t,
    'detect',
    [{ classId: 0, bbox: box, segments: [0, 0, 1, 0, 1, 1] }],
    'labels[0].segments: not used by detect datasets',
  );
  refuses(
    t,
    'detect',
    [
      { classId: 0, bbox: box },
      { classId: 0, bbox: box },
      { classId: 0, bbox: box, keypoints: [0.5, 0.5] },
    ],
    'labels[2].keypoints: not used by detect datasets',
  );
  refuses(
    t,
    'detect',
    [{ classId: 0, bbox: box, obb: [0, 0, 1, 0, 1, 1, 0, 1] }],
    'labels[0].obb: not used by detect datasets',
  );
  refuses(
    t,
    'detect',
    [{ classId: 0, bbox: box, mask: { size: [1, 1], counts: [1] } }],
    'labels[0].mask: not used by detect datasets',
  );
});

t.test('at most 10,000 labels per image', async (t) => {
  const label = { classId: 0, bbox: [0.5, 0.5, 0.1, 0.1] };
  t.equal(
    validateLabels(
      'detect',
      1,
      Array.from({ length: MAX_LABELS_PER_IMAGE }, () => label),
    ).labels.length,
    10_000,
  );
  refuses(
    t,
    'detect',
    Array.from({ length: MAX_LABELS_PER_IMAGE + 1 }, () => label),
    'labels: at most 10000 annotations per image',
    1,
  );
});

t.test('segment: a polygon, an optional bbox, the box from the polygon extents', async (t) => {
  const { labels, shapes } = validateLabels('segment', 2, [
    { classId: 1, segments: [0.1, 0.2, 0.5, 0.2, 0.3, 0.6000001] },
    { classId: 0, segments: [0, 0, 1, 0, 1, 1, 0, 1], bbox: [0.5, 0.5, 1, 1] },
  ]);
  t.same(labels, [
    { classId: 1, segments: [0.1, 0.2, 0.5, 0.2, 0.3, 0.6] },
    { classId: 0, bbox: [0.5, 0.5, 1, 1], segments: [0, 0, 1, 0, 1, 1, 0, 1] },
  ]);
  t.same(shapes, [
    { cx: 0.3, cy: 0.4, w: 0.4, h: 0.4, points: 3 },
    { cx: 0.5, cy: 0.5, w: 1, h: 1, points: 4 },
  ]);
  refuses(
    t,
    'segment',
    [{ classId: 0, bbox: [0.5, 0.5, 0.1, 0.1] }],
    'labels[0].segments: required for segment datasets',
  );
  refuses(
    t,
    'segment',
    [{ classId: 0, segments: [0.1, 0.2, 0.5, 0.2, 0.3] }],
    'labels[0].segments: must be x, y pairs (an even count of numbers)',
  );
  refuses(
    t,
    'segment',
    [{ classId: 0, segments: [0.1, 0.2, 0.5, 0.2] }],
    'labels[0].segments: a polygon needs at least 3 points (6 numbers)',
  );
  refuses(
    t,
    'segment',
    [{ classId: 0, segments: [0.1, 0.2, 0.5, 0.2, 0.3, 1.5] }],
    'labels[0].segments[5]: 1.5 is outside 0-1; coordinates are normalized',
  );
  refuses(
    t,
    'segment',
    [{ classId: 0, segments: [0, 0, 1, 0, 1, 1], bbox: [0.5, 0.5, 0.1] }],
    'labels[0].bbox: must be 4 numbers [x_center, y_center, width, height]',
  );
  refuses(
    t,
    'segment',
    [{ classId: 0, segments: [0, 0, 1, 0, 1, 1], obb: [0, 0, 1, 0, 1, 1, 0, 1] }],
    'labels[0].obb: not used by segment datasets',
  );
});

t.test('semantic: a polygon or an RLE mask whose runs cover the whole image', async (t) => {
  const { labels, shapes } = validateLabels('semantic', 3, [
    { classId: 2, mask: { size: [2, 3], counts: [1, 4, 1] } },
    { classId: 0, segments: [0, 0, 0.5, 0, 0.5, 0.5] },
  ]);
  t.same(labels, [
    { classId: 2, mask: { size: [2, 3], counts: [1, 4, 1] } },
    { classId: 0, segments: [0, 0, 0.5, 0, 0.5, 0.5] },
  ]);
  t.same(shapes, [null, { cx: 0.25, cy: 0.25, w: 0.5, h: 0.5, points: 3 }]);
  refuses(
    t,
    'semantic',
    [{ classId: 0, mask: { size: [2, 3], counts: [1, 4] } }],
    'labels[0].mask.counts: add up to 5, but size [2, 3] has 6 pixels',
  );
  refuses(t, 'semantic', [{ classId: 0 }], 'labels[0]: a semantic label needs either segments or mask');
  refuses(
    t,
    'semantic',
    [{ classId: 0, segments: [0, 0, 1, 0, 1, 1], mask: { size: [1, 1], counts: [1] } }],
    'labels[0]: a semantic label needs either segments or mask',
  );
  refuses(
    t,
    'semantic',
    [{ classId: 0, bbox: [0.5, 0.5, 0.1, 0.1], mask: { size: [1, 1], counts: [1] } }],
    'labels[0].bbox: not used by semantic datasets',
  );
});

t.test('obb: 4 corners, the box from their extents, 4 points', async (t) => {
  const { labels, shapes } = validateLabels('obb', 1, [{ classId: 0, obb: [0.2, 0.1, 0.6, 0.3, 0.5, 0.5, 0.1, 0.3] }]);
  t.same(labels, [{ classId: 0, obb: [0.2, 0.1, 0.6, 0.3, 0.5, 0.5, 0.1, 0.3] }]);
  t.same(shapes, [{ cx: 0.35, cy: 0.3, w: 0.5, h: 0.4, points: 4 }]);
  refuses(t, 'obb', [{ classId: 0 }], 'labels[0].obb: required for obb datasets');
  refuses(
    t,
    'obb',
    [{ classId: 0, obb: [0.2, 0.1, 0.6, 0.3, 0.5, 0.5] }],
    'labels[0].obb: must be 8 numbers, the corners [x1, y1, x2, y2, x3, y3, x4, y4]',
  );
  refuses(
    t,
    'obb',
    [{ classId: 0, obb: [0.2, 0.1, 0.6, 0.3, 0.5, 0.5, 0.1, 2] }],
    'labels[0].obb[7]: 2 is outside 0-1; coordinates are normalized',
  );
  refuses(
    t,
    'obb',
    [{ classId: 0, obb: [0, 0, 1, 0, 1, 1, 0, 1], bbox: [0.5, 0.5, 1, 1] }],
    'labels[0].bbox: not used by obb datasets',
  );
});

t.test('classify: one class and no geometry; depth: no labels at all', async (t) => {
  t.same(validateLabels('classify', 4, [{ classId: 3 }]), { labels: [{ classId: 3 }], shapes: [null] });
  t.same(validateLabels('classify', 4, []), { labels: [], shapes: [] });
  refuses(t, 'classify', [{ classId: 0 }, { classId: 1 }], 'labels: a classify image has at most one class');
  refuses(t, 'classify', [{ classId: 0, bbox: [0.5, 0.5, 0.1, 0.1] }], 'labels[0].bbox: not used by classify datasets');
  refuses(t, 'classify', [{ classId: 4 }], 'labels[0].classId: 4 is out of range; the dataset has 4 classes', 4);

  t.same(validateLabels('depth', 0, []), { labels: [], shapes: [] });
  refuses(t, 'depth', [{ classId: 0 }], 'labels: depth datasets have no classes or labels', 0);
  refuses(
    t,
    'depth',
    [{ classId: 0, bbox: [0.5, 0.5, 0.1, 0.1] }],
    'labels: depth datasets have no classes or labels',
    3,
  );
});

t.test('pose: a bbox plus keypoints; triples inferred when every third value is a visibility', async (t) => {
  const { labels, shapes } = validateLabels('pose', 1, [
    { classId: 0, bbox: [0.5, 0.5, 0.4, 0.4], keypoints: [0.4, 0.4, 2, 0.6, 0.6, 0, 0.5, 0.123456, 1] },
    { classId: 0, bbox: [0.3, 0.3, 0.2, 0.2], keypoints: [0.3, 0.3, 1, 0, 0, 0, 0, 0, 0] },
  ]);
  t.same(labels[0], { classId: 0, bbox: [0.5, 0.5, 0.4, 0.4], keypoints: [0.4, 0.4, 2, 0.6, 0.6, 0, 0.5, 0.12346, 1] });
  t.same(shapes, [
    { cx: 0.5, cy: 0.5, w: 0.4, h: 0.4, points: 3 },
    { cx: 0.3, cy: 0.3, w: 0.2, h: 0.2, points: 3 },
  ]);
});

t.test('pose: pairs inferred when the values are not all triples', async (t) => {
  // 6 values: triples would need 0, 1 or 2 at index 2 and 5; 0.5 there makes them pairs (3 keypoints).
  const box = [0.5, 0.5, 0.4, 0.4];
  const { shapes } = validateLabels('pose', 1, [
    { classId: 0, bbox: box, keypoints: [0.1, 0.2, 1, 0.4, 0.5, 0] },
    { classId: 0, bbox: box, keypoints: [0.1, 0.2, 0.5, 0.4, 0.5, 0.6] },
  ]);
  t.same(
    shapes.map((shape) => shape?.points),
    [3, 3],
    'one layout decided for the whole image',
  );
  t.same(
    validateLabels('pose', 1, [{ classId: 0, bbox: box, keypoints: [0.1, 0.2, 0.3, 0.4] }]).shapes[0]?.points,
    2,
    'length 4 is pairs',
  );
  t.same(
    validateLabels('pose', 1, [{ classId: 0, bbox: box, keypoints: [0.1, 0.2, 1, 0.3, 0.4, 2] }]).shapes[0]?.points,
    2,
    'triples preferred when ambiguous',
  );
  // As pairs, a visibility-looking 2 is an out-of-range coordinate.
  refuses(
    t,
    'pose',
    [{ classId: 0, bbox: box, keypoints: [0.1, 0.2, 2, 0.4, 0.5, 0.6] }],
    'labels[0].keypoints[2]: 2 is outside 0-1; coordinates are normalized',
    1,
  );
});

t.test('pose refusals: layout, visibility, missing geometry', async (t) => {
  const box = [0.5, 0.5, 0.4, 0.4];
  refuses(
    t,
    'pose',
    [
      { classId: 0, bbox: box, keypoints: [0.1, 0.2, 1] },
      { classId: 0, bbox: box, keypoints: [0.1, 0.2] },
    ],
    'labels[1].keypoints: every label of an image must have the same keypoint layout (3 values, like labels[0])',
  );
  refuses(
    t,
    'pose',
    [{ classId: 0, bbox: box, keypoints: [0.1, 0.2, 0.7] }],
    /^labels\[0\]\.keypoints: 3 values are neither x, y pairs nor x, y, v triples/,
  );
  refuses(
    t,
    'pose',
    [
      { classId: 0, bbox: box, keypoints: [0.1, 0.2, 1] },
      { classId: 0, bbox: box, keypoints: [0.1, 0.2, 3] },
    ],
    /^labels\[1\]\.keypoints: 3 values are neither/,
  );
  refuses(
    t,
    'pose',
    [{ classId: 0, bbox: box, keypoints: [0.1, 0.2, 0.3, 0.4, 0.5] }],
    /^labels\[0\]\.keypoints: 5 values are neither/,
  );
  refuses(
    t,
    'pose',
    [{ classId: 0, bbox: box, keypoints: [] }],
    'labels[0].keypoints: must list at least one keypoint',
  );
  refuses(t, 'pose', [{ classId: 0, bbox: box }], 'labels[0].keypoints: required for pose datasets');
  refuses(t, 'pose', [{ classId: 0, keypoints: [0.1, 0.2] }], 'labels[0].bbox: required for pose datasets');
  refuses(
    t,
    'pose',
    [{ classId: 0, bbox: box, keypoints: [0.1, 1.2, 1] }],
    'labels[0].keypoints[1]: 1.2 is outside 0-1; coordinates are normalized',
  );
  refuses(
    t,
    'pose',
    [{ classId: 0, bbox: box, keypoints: [0.1, 0.2], segments: [0, 0, 1, 0, 1, 1] }],
    'labels[0].segments: not used by pose datasets',
  );
});

t.test('pose with the dataset kpt_shape: the length is fixed, and so is pairs or triples', async (t) => {
  const box = [0.5, 0.5, 0.4, 0.4];
  // Inferred, these 6 values would be 2 triples; kpt_shape [3, 2] reads them as 3 pairs.
  t.same(
    validateLabels('pose', 1, [{ classId: 0, bbox: box, keypoints: [0.1, 0.2, 1, 0.3, 0.4, 1] }], { kptShape: [3, 2] })
      .shapes[0]?.points,
    3,
  );
  t.same(
    validateLabels('pose', 1, [{ classId: 0, bbox: box, keypoints: [0.1, 0.2, 1, 0.3, 0.4, 0] }], { kptShape: [2, 3] })
      .shapes[0]?.points,
    2,
  );
  t.same(
    validateLabels('pose', 1, [{ classId: 0, bbox: box, keypoints: [0.1, 0.2, 0.3, 0.4] }], { kptShape: null })
      .shapes[0]?.points,
    2,
    'null: inferred',
  );
  refuses(
    t,
    'pose',
    [{ classId: 0, bbox: box, keypoints: [0.1, 0.2, 1, 0.3, 0.4, 2] }],
    'labels[0].keypoints[5]: 2 is outside 0-1; coordinates are normalized',
    1,
    {
      kptShape: [3, 2],
    },
  );
  refuses(
    t,
    'pose',
    [{ classId: 0, bbox: box, keypoints: [0.1, 0.2, 1] }],
    'labels[0].keypoints: must be 6 values (kpt_shape [2, 3])',
    1,
    { kptShape: [2, 3] },
  );
  refuses(
    t,
    'pose',
    [{ classId: 0, bbox: box, keypoints: [0.1, 0.2, 1, 0.3, 0.4, 0.5] }],
    'labels[0].keypoints: visibility (every third value) must be 0, 1 or 2',
    1,
    {
      kptShape: [2, 3],
    },
  );
});
