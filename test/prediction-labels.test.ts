// Predictions (original-image pixels, as @vp/inference returns them) become labels a user can save: normalized, in the
// dataset's geometry, valid for PATCH /api/images/{id}; the class map decides which dataset class each row gets.
import t from 'tap';
import type { Prediction } from '@vp/inference';
import { HttpError } from '../control-plane/src/http/errors.ts';
import { validateLabels } from '../control-plane/src/images/labels.ts';
import { resolveClassMap } from '../control-plane/src/predict/class-map.ts';
import { labelingMismatch, predictionLabels } from '../control-plane/src/predict/prediction-labels.ts';

const base = (rows: Partial<Prediction>): Prediction => ({
  shape: [200, 400],
  speed: { preprocess: 1, inference: 2, postprocess: 3 },
  boxes: [],
  confidences: [],
  classes: [],
  ...rows,
});

t.test(
  'detect: [x1, y1, x2, y2] pixels become a normalized [cx, cy, w, h]; confidences stay index-aligned',
  async (t) => {
    const prediction = base({
      boxes: [
        [40, 20, 120, 100],
        [0, 0, 400, 200],
      ],
      confidences: [0.9, 0.4],
      classes: [1, 0],
    });
    const { labels, confidences } = predictionLabels(prediction, { task: 'detect', kptShape: null }, [2, 0]);
    t.same(labels[0], { classId: 0, bbox: [0.2, 0.3, 0.2, 0.4] });
    t.same(labels[1], { classId: 2, bbox: [0.5, 0.5, 1, 1] });
    t.same(confidences, [0.9, 0.4]);
    t.doesNotThrow(() => validateLabels('detect', 3, labels), 'the labels pass the PATCH checks');
  },
);

t.test('a class mapped to null is dropped with its confidence; a box that rounds to nothing is dropped', async (t) => {
  const prediction = base({
    boxes: [
      [40, 20, 120, 100],
      [10, 10, 10.000001, 50],
      [0, 0, 40, 20],
    ],
    confidences: [0.9, 0.8, 0.7],
    classes: [0, 1, 1],
  });
  const { labels, confidences } = predictionLabels(prediction, { task: 'detect', kptShape: null }, [null, 0]);
  t.same(labels, [{ classId: 0, bbox: [0.05, 0.05, 0.1, 0.1] }]);
  t.same(confidences, [0.7]);
});

t.test(
  'segment: polygons as normalized pairs with their box; a vanished mask is dropped; detect boxes become rectangles',
  async (t) => {
    const prediction = base({
      boxes: [
        [40, 20, 120, 100],
        [0, 0, 10, 10],
      ],
      confidences: [0.9, 0.5],
      classes: [0, 0],
      polygons: [[40, 20, 120, 20, 80, 100], []],
    });
    const { labels, confidences } = predictionLabels(prediction, { task: 'segment', kptShape: null }, [1]);
    t.same(labels, [{ classId: 1, segments: [0.1, 0.1, 0.3, 0.1, 0.2, 0.5], bbox: [0.2, 0.3, 0.2, 0.4] }]);
    t.same(confidences, [0.9]);
    t.doesNotThrow(() => validateLabels('segment', 2, labels));
    const boxes = predictionLabels(
      base({ boxes: [[40, 20, 120, 100]], confidences: [0.9], classes: [0] }),
      { task: 'segment', kptShape: null },
      [0],
    );
    t.same(boxes.labels, [
      { classId: 0, segments: [0.1, 0.1, 0.3, 0.1, 0.3, 0.5, 0.1, 0.5], bbox: [0.2, 0.3, 0.2, 0.4] },
    ]);
  },
);

t.test('obb: corners normalized and clipped to the image; a detect dataset gets their enclosing box', async (t) => {
  const prediction = base({ boxes: [[-8, 100, 200, -10, 408, 100, 200, 210]], confidences: [0.8], classes: [0] });
  const obb = predictionLabels(prediction, { task: 'obb', kptShape: null }, [0]);
  t.same(obb.labels, [{ classId: 0, obb: [0, 0.5, 0.5, 0, 1, 0.5, 0.5, 1] }]);
  t.doesNotThrow(() => validateLabels('obb', 1, obb.labels));
  t.same(predictionLabels(prediction, { task: 'detect', kptShape: null }, [0]).labels, [
    { classId: 0, bbox: [0.5, 0.5, 1, 1] },
  ]);
});

t.test('pose: keypoints as the dataset keeps them; unsure ones are not labeled (0, 0, 0)', async (t) => {
  const prediction = base({
    boxes: [[40, 20, 120, 100]],
    confidences: [0.9],
    classes: [0],
    keypoints: [
      [
        [40, 20, 0.9],
        [120, 100, 0.2],
        [80, 60, 0.6],
      ],
    ],
  });
  const triples = predictionLabels(prediction, { task: 'pose', kptShape: [3, 3] }, [0]);
  t.same(triples.labels, [{ classId: 0, bbox: [0.2, 0.3, 0.2, 0.4], keypoints: [0.1, 0.1, 2, 0, 0, 0, 0.2, 0.3, 2] }]);
  t.doesNotThrow(() => validateLabels('pose', 1, triples.labels, { kptShape: [3, 3] }));
  const pairs = predictionLabels(prediction, { task: 'pose', kptShape: [3, 2] }, [0]);
  t.same(pairs.labels[0].keypoints, [0.1, 0.1, 0.3, 0.5, 0.2, 0.3]);
  t.same(
    predictionLabels(prediction, { task: 'pose', kptShape: [4, 3] }, [0]).labels,
    [],
    'another keypoint count gives no labels',
  );
});

t.test('classify: the most likely mapped class, one label', async (t) => {
  const prediction = base({ probs: [0.7, 0.2, 0.1] });
  t.same(predictionLabels(prediction, { task: 'classify', kptShape: null }, [0, 1, 2]), {
    labels: [{ classId: 0 }],
    confidences: [0.7],
  });
  t.same(
    predictionLabels(prediction, { task: 'classify', kptShape: null }, [null, 1, 2]),
    { labels: [{ classId: 1 }], confidences: [0.2] },
    'a dropped class is never chosen',
  );
});

t.test('which model tasks label which datasets', async (t) => {
  t.equal(labelingMismatch({ task: 'detect', kptShape: null }, { task: 'segment' }), null);
  t.equal(labelingMismatch({ task: 'segment', kptShape: null }, { task: 'detect' }), null, 'boxes as rectangles');
  t.match(
    labelingMismatch({ task: 'pose', kptShape: null }, { task: 'detect' }),
    /A detect model cannot label a pose dataset/,
  );
  t.match(labelingMismatch({ task: 'classify', kptShape: null }, { task: 'detect' }), /classify/);
  t.match(
    labelingMismatch({ task: 'pose', kptShape: [17, 3] }, { task: 'pose', kptShape: [3, 3] }),
    /3 keypoints; the dataset has 17/,
  );
});

t.test(
  'class map: by name (case ignored beyond 2 characters), or classMapping checked for length and range',
  async (t) => {
    t.same(resolveClassMap(['Disc', 'square', 'TV'], ['square', 'disc'], undefined), [1, 0]);
    const mismatch = (() => {
      try {
        resolveClassMap(['disc', 'tv'], ['disc', 'TV', 'triangle'], undefined);
      } catch (error) {
        return error as HttpError;
      }
    })();
    t.equal(mismatch?.status, 422);
    t.match(mismatch?.message, /Class mismatch: the model's classes "TV", "triangle" have no dataset class/);
    t.same(mismatch?.extra, { unmatchedClasses: ['TV', 'triangle'] });
    t.same(resolveClassMap(['a', 'b'], ['x', 'y', 'z'], [1, null, 0]), [1, null, 0]);
    t.throws(() => resolveClassMap(['a', 'b'], ['x', 'y', 'z'], [1, 0]), {
      status: 400,
      message: /classMapping: has 2 entries; the model has 3 classes/,
    });
    t.throws(() => resolveClassMap(['a', 'b'], ['x'], [2]), {
      status: 400,
      message: /classMapping\[0\]: 2 is out of range; the dataset has 2 classes/,
    });
  },
);
