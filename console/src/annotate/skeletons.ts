// Keypoint templates for pose datasets: where a new instance's keypoints start inside its box, which pairs are joined,
// and what each point is called. Chosen by the dataset's keypoint count: 17 (person, COCO order), 21 (hand), 68 (face,
// iBUG 300-W order), and any other count a custom ring of numbered points with no joins.
import type { Label, Point } from './geometry.ts';

export interface Skeleton {
  name: string;
  /** Each keypoint's name and its place in the instance's box (0-1 from the box's top-left). */
  points: Array<{ name: string; x: number; y: number }>;
  /** Pairs of keypoint indexes drawn as bones. */
  edges: Array<[number, number]>;
}

const PERSON: Skeleton = {
  name: 'person (17)',
  points: [
    ['nose', 0.5, 0.08],
    ['left eye', 0.54, 0.06],
    ['right eye', 0.46, 0.06],
    ['left ear', 0.58, 0.08],
    ['right ear', 0.42, 0.08],
    ['left shoulder', 0.68, 0.22],
    ['right shoulder', 0.32, 0.22],
    ['left elbow', 0.78, 0.38],
    ['right elbow', 0.22, 0.38],
    ['left wrist', 0.84, 0.52],
    ['right wrist', 0.16, 0.52],
    ['left hip', 0.62, 0.55],
    ['right hip', 0.38, 0.55],
    ['left knee', 0.63, 0.75],
    ['right knee', 0.37, 0.75],
    ['left ankle', 0.64, 0.95],
    ['right ankle', 0.36, 0.95],
  ].map(([name, x, y]) => ({ name: name as string, x: x as number, y: y as number })),
  edges: [
    [15, 13],
    [13, 11],
    [16, 14],
    [14, 12],
    [11, 12],
    [5, 11],
    [6, 12],
    [5, 6],
    [5, 7],
    [6, 8],
    [7, 9],
    [8, 10],
    [1, 2],
    [0, 1],
    [0, 2],
    [1, 3],
    [2, 4],
    [3, 5],
    [4, 6],
  ],
};

/** Wrist, then four joints per finger from the thumb to the little finger, each from its base to its tip. */
function hand(): Skeleton {
  const fingers: Array<[string, Array<[number, number]>]> = [
    [
      'thumb',
      [
        [0.3, 0.8],
        [0.2, 0.68],
        [0.14, 0.56],
        [0.1, 0.45],
      ],
    ],
    [
      'index',
      [
        [0.38, 0.55],
        [0.36, 0.38],
        [0.35, 0.24],
        [0.34, 0.1],
      ],
    ],
    [
      'middle',
      [
        [0.5, 0.52],
        [0.5, 0.33],
        [0.5, 0.18],
        [0.5, 0.04],
      ],
    ],
    [
      'ring',
      [
        [0.61, 0.55],
        [0.63, 0.38],
        [0.64, 0.25],
        [0.65, 0.13],
      ],
    ],
    [
      'little',
      [
        [0.71, 0.6],
        [0.75, 0.47],
        [0.78, 0.37],
        [0.8, 0.28],
      ],
    ],
  ];
  const joints = ['base', 'middle joint', 'end joint', 'tip'];
  const points = [{ name: 'wrist', x: 0.5, y: 0.95 }];
  const edges: Array<[number, number]> = [];
  fingers.forEach(([finger, places], f) => {
    places.forEach(([x, y], j) => {
      points.push({ name: `${finger} ${joints[j]}`, x, y });
      edges.push([j === 0 ? 0 : 1 + 4 * f + j - 1, 1 + 4 * f + j]);
    });
    if (f > 1) edges.push([1 + 4 * (f - 1), 1 + 4 * f]); // the palm, across the finger bases
  });
  return { name: 'hand (21)', points, edges };
}

/** The 68 points of the iBUG 300-W face layout, on ellipses and lines. */
function face(): Skeleton {
  const points: Skeleton['points'] = [];
  const edges: Array<[number, number]> = [];
  const chain = (name: string, places: Point[], closed = false) => {
    const first = points.length;
    places.forEach((place, index) => {
      points.push({ name: `${name} ${index + 1}`, ...place });
      if (index > 0) edges.push([first + index - 1, first + index]);
    });
    if (closed) edges.push([first + places.length - 1, first]);
  };
  const range = (count: number, at: (t: number, index: number) => Point) =>
    Array.from({ length: count }, (_, index) => at(index / (count - 1), index));
  // From the left of the image over the top, clockwise, as the layout orders eyes and lips.
  const ring = (count: number, cx: number, cy: number, rx: number, ry: number) =>
    Array.from({ length: count }, (_, index) => {
      const angle = Math.PI - (2 * Math.PI * index) / count;
      return { x: cx + rx * Math.cos(angle), y: cy - ry * Math.sin(angle) };
    });
  chain(
    'jaw',
    range(17, (t) => ({ x: 0.5 - 0.45 * Math.cos(Math.PI * t), y: 0.4 + 0.55 * Math.sin(Math.PI * t) })),
  );
  for (const [name, left] of [
    ['brow (image left)', 0.15],
    ['brow (image right)', 0.58],
  ] as const)
    chain(
      name,
      range(5, (t) => ({ x: left + 0.27 * t, y: 0.28 - 0.05 * Math.sin(Math.PI * t) })),
    );
  chain(
    'nose bridge',
    range(4, (t) => ({ x: 0.5, y: 0.38 + 0.2 * t })),
  );
  chain(
    'nose base',
    range(5, (t) => ({ x: 0.42 + 0.16 * t, y: 0.64 + 0.02 * Math.sin(Math.PI * t) })),
  );
  chain('eye (image left)', ring(6, 0.3, 0.4, 0.08, 0.035), true);
  chain('eye (image right)', ring(6, 0.7, 0.4, 0.08, 0.035), true);
  chain('outer lip', ring(12, 0.5, 0.78, 0.17, 0.07), true);
  chain('inner lip', ring(8, 0.5, 0.78, 0.11, 0.03), true);
  return { name: 'face (68)', points, edges };
}

const HAND = hand();
const FACE = face();

/** The template for a dataset's keypoint count. */
export function skeletonFor(count: number): Skeleton {
  if (count === PERSON.points.length) return PERSON;
  if (count === HAND.points.length) return HAND;
  if (count === FACE.points.length) return FACE;
  return {
    name: `custom (${count})`,
    points: Array.from({ length: count }, (_, index) => {
      const angle = -Math.PI / 2 + (2 * Math.PI * index) / Math.max(1, count);
      return { name: `point ${index + 1}`, x: 0.5 + 0.4 * Math.cos(angle), y: 0.5 + 0.4 * Math.sin(angle) };
    }),
    edges: [],
  };
}

/**
 * A new pose instance dragged from one corner to the other: its box, and the template's keypoints placed in it, each
 * visible (2) where the dataset keeps visibility (3 values per keypoint).
 */
export function poseLabel(classId: number, from: Point, to: Point, kptShape: readonly number[]): Label {
  const [count = 17, dims = 3] = kptShape;
  const clamp = (value: number) => Math.min(1, Math.max(0, value));
  const round = (value: number) => Math.round(value * 1e5) / 1e5;
  const [left, right] = [clamp(Math.min(from.x, to.x)), clamp(Math.max(from.x, to.x))];
  const [top, bottom] = [clamp(Math.min(from.y, to.y)), clamp(Math.max(from.y, to.y))];
  const keypoints = skeletonFor(count).points.flatMap(({ x, y }) => {
    const place = [round(left + x * (right - left)), round(top + y * (bottom - top))];
    return dims === 3 ? [...place, 2] : place;
  });
  const bbox = [(left + right) / 2, (top + bottom) / 2, right - left, bottom - top].map(round);
  return { classId, bbox, keypoints };
}
