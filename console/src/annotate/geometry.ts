import type { paths } from '../api/schema.d.ts';

type ImagePatch = NonNullable<paths['/api/images/{imageId}']['patch']['requestBody']>['content']['application/json'];
/** One label as the image API reads and writes it: a class and the geometry of the dataset's task, in 0-1. */
export type Label = NonNullable<ImagePatch['labels']>[number];
export interface Point {
  x: number;
  y: number;
}

const clamp = (value: number) => Math.min(1, Math.max(0, value));
const round = (value: number) => Math.round(value * 1e5) / 1e5;

/** The label of the dataset's task for a rectangle dragged from one corner to the other (0-1 coordinates). */
export function labelFromRectangle(task: string, classId: number, from: Point, to: Point): Label {
  const [left, right] = [clamp(Math.min(from.x, to.x)), clamp(Math.max(from.x, to.x))];
  const [top, bottom] = [clamp(Math.min(from.y, to.y)), clamp(Math.max(from.y, to.y))];
  const corners = [left, top, right, top, right, bottom, left, bottom].map(round);
  if (task === 'obb') return { classId, obb: corners };
  if (task === 'segment') return { classId, segments: corners };
  return { classId, bbox: [(left + right) / 2, (top + bottom) / 2, right - left, bottom - top].map(round) };
}

/** A polygon label from its vertices (segment datasets). */
export function labelFromPolygon(classId: number, points: Point[]): Label {
  return { classId, segments: points.flatMap((point) => [round(clamp(point.x)), round(clamp(point.y))]) };
}

/** Moves a label by (dx, dy), every geometry it has, kept inside the image. */
export function moveLabel(label: Label, dx: number, dy: number): Label {
  const shiftPairs = (flat: number[] | undefined, stride: number) =>
    flat?.map((value, index) => {
      const axis = index % stride;
      if (axis > 1) return value; // a keypoint's visibility
      return round(clamp(value + (axis === 0 ? dx : dy)));
    });
  const moved: Label = { ...label };
  if (label.bbox) {
    const [cx = 0, cy = 0, w = 0, h = 0] = label.bbox;
    moved.bbox = [round(clamp(cx + dx)), round(clamp(cy + dy)), w, h];
  }
  if (label.segments) moved.segments = shiftPairs(label.segments, 2);
  if (label.obb) moved.obb = shiftPairs(label.obb, 2);
  if (label.keypoints) moved.keypoints = shiftPairs(label.keypoints, label.keypoints.length % 3 === 0 ? 3 : 2);
  return moved;
}

/** Grows or shrinks a box (or an oriented box or polygon, about its centre) by (dw, dh). */
export function resizeLabel(label: Label, dw: number, dh: number): Label {
  if (label.bbox) {
    const [cx = 0, cy = 0, w = 0, h = 0] = label.bbox;
    return { ...label, bbox: [cx, cy, round(clamp(Math.max(0.005, w + dw))), round(clamp(Math.max(0.005, h + dh)))] };
  }
  const flat = label.segments ?? label.obb;
  if (!flat) return label;
  const xs = flat.filter((_, index) => index % 2 === 0);
  const ys = flat.filter((_, index) => index % 2 === 1);
  const center = { x: (Math.min(...xs) + Math.max(...xs)) / 2, y: (Math.min(...ys) + Math.max(...ys)) / 2 };
  const spanX = Math.max(...xs) - Math.min(...xs) || 1;
  const spanY = Math.max(...ys) - Math.min(...ys) || 1;
  const scaled = flat.map((value, index) =>
    index % 2 === 0
      ? round(clamp(center.x + (value - center.x) * (1 + dw / spanX)))
      : round(clamp(center.y + (value - center.y) * (1 + dh / spanY))),
  );
  return label.segments ? { ...label, segments: scaled } : { ...label, obb: scaled };
}

/** "x,y x,y …" for an SVG polygon from flat pairs (a keypoint layout's third values skipped). */
export function pointsOf(flat: number[], stride = 2): string {
  const points: string[] = [];
  for (let index = 0; index + 1 < flat.length; index += stride) points.push(`${flat[index]},${flat[index + 1]}`);
  return points.join(' ');
}

/** The axis-aligned box around a label's geometry, as [left, top, right, bottom]; undefined without one. */
export function enclosingBox(label: Label): [number, number, number, number] | undefined {
  if (label.bbox && label.bbox.length === 4) {
    const [cx = 0, cy = 0, w = 0, h = 0] = label.bbox;
    return [cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2];
  }
  const flat = label.segments ?? label.obb;
  if (!flat || flat.length < 4) return undefined;
  const xs = flat.filter((_, index) => index % 2 === 0);
  const ys = flat.filter((_, index) => index % 2 === 1);
  return [Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)];
}

/** Intersection over union of two labels' enclosing boxes (0 when either has none). */
export function iou(a: Label, b: Label): number {
  const [boxA, boxB] = [enclosingBox(a), enclosingBox(b)];
  if (!boxA || !boxB) return 0;
  const width = Math.max(0, Math.min(boxA[2], boxB[2]) - Math.max(boxA[0], boxB[0]));
  const height = Math.max(0, Math.min(boxA[3], boxB[3]) - Math.max(boxA[1], boxB[1]));
  const overlap = width * height;
  const area = (box: number[]) => (box[2]! - box[0]!) * (box[3]! - box[1]!);
  const union = area(boxA) + area(boxB) - overlap;
  return union > 0 ? overlap / union : 0;
}

/**
 * The points of a label the editor moves one at a time: a polygon's or oriented box's vertices, else its keypoints
 * (`keypointValues` per keypoint: 3 with visibility, 2 without).
 */
export function pointsOfLabel(label: Label, keypointValues = 3): { flat: number[]; stride: number } | undefined {
  if (label.segments) return { flat: label.segments, stride: 2 };
  if (label.obb) return { flat: label.obb, stride: 2 };
  if (label.keypoints) return { flat: label.keypoints, stride: keypointValues };
  return undefined;
}

/** Moves one of the label's points (see pointsOfLabel) by (dx, dy), kept inside the image. */
export function moveVertex(label: Label, vertex: number, dx: number, dy: number, keypointValues = 3): Label {
  const points = pointsOfLabel(label, keypointValues);
  if (!points || points.stride * vertex + 1 >= points.flat.length) return label;
  const at = points.stride * vertex;
  const moved = points.flat.map((value, index) =>
    index === at ? round(clamp(value + dx)) : index === at + 1 ? round(clamp(value + dy)) : value,
  );
  if (label.segments) return { ...label, segments: moved };
  if (label.obb) return { ...label, obb: moved };
  return { ...label, keypoints: moved };
}

/** A keypoint's visibility one step on: visible (2) → occluded (1) → not labelled (0) → visible. */
export function cycleVisibility(label: Label, keypoint: number): Label {
  const at = 3 * keypoint + 2;
  if (!label.keypoints || at >= label.keypoints.length) return label;
  const next = [2, 0, 1][label.keypoints[at] ?? 2] ?? 2;
  return { ...label, keypoints: label.keypoints.map((value, index) => (index === at ? next : value)) };
}

/** Turns a polygon or oriented box about the centre of its vertices by `radians` (clockwise on screen). */
export function rotateLabel(label: Label, radians: number): Label {
  const flat = label.segments ?? label.obb;
  if (!flat || flat.length < 4) return label;
  const count = flat.length / 2;
  const center = {
    x: flat.filter((_, index) => index % 2 === 0).reduce((sum, value) => sum + value, 0) / count,
    y: flat.filter((_, index) => index % 2 === 1).reduce((sum, value) => sum + value, 0) / count,
  };
  const [cos, sin] = [Math.cos(radians), Math.sin(radians)];
  const turned: number[] = [];
  for (let index = 0; index + 1 < flat.length; index += 2) {
    const [x, y] = [flat[index]! - center.x, flat[index + 1]! - center.y];
    turned.push(round(clamp(center.x + x * cos - y * sin)), round(clamp(center.y + x * sin + y * cos)));
  }
  return label.segments ? { ...label, segments: turned } : { ...label, obb: turned };
}

/** A freehand stroke thinned to vertices at least `spacing` apart (the API keeps what it is given). */
export function thinStroke(points: Point[], spacing = 0.004): Point[] {
  const kept: Point[] = [];
  for (const point of points) {
    const last = kept.at(-1);
    if (!last || Math.hypot(point.x - last.x, point.y - last.y) >= spacing) kept.push(point);
  }
  return kept;
}
