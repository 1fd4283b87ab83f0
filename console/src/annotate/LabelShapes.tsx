import { memo, type PointerEvent } from 'react';
import { MemoChunks } from '../app/MemoChunks.tsx';
import { enclosingBox, pointsOf, pointsOfLabel, type Label } from './geometry.ts';

const FALLBACK_COLOR = '#0969da';
/** The labels at rest are drawn in GRID × GRID groups by where their centre lies, each group a layer of its own. */
const GRID = 2;
const cells = new WeakMap<Label, number>();

/** Which group a label at rest is drawn in (labels are never changed in place: their group is kept by identity). */
function cellOf(label: Label): number {
  let cell = cells.get(label);
  if (cell === undefined) {
    const box = enclosingBox(label);
    const x = box ? (box[0] + box[2]) / 2 : (label.keypoints?.[0] ?? 0);
    const y = box ? (box[1] + box[3]) / 2 : (label.keypoints?.[1] ?? 0);
    const place = (value: number) => Math.min(GRID - 1, Math.max(0, Math.floor(value * GRID)));
    cell = place(y) * GRID + place(x);
    cells.set(label, cell);
  }
  return cell;
}

type ShapeDown = (index: number, event: PointerEvent<SVGElement>) => void;
type VertexDown = (index: number, vertex: number, event: PointerEvent<SVGElement>) => void;

/**
 * The labels drawn in the image's 0-1 coordinates: boxes, oriented boxes, polygons and keypoints joined by the
 * skeleton's bones; one selected, its vertices (polygons, oriented boxes) or keypoints as handles to drag. Each label is its own memoised element, in memoised chunks, so an edit of one
 * renders one chunk (the handlers must be stable). Chromium rasters a layer's whole SVG area again when one shape in
 * it changes, so the shapes are split into layers: the selected label and its handles, drawn on top, and the labels
 * at rest by region; an edit re-rasters the selected label alone, and selecting one the region it leaves.
 */
export function LabelShapes({
  labels,
  selected,
  vertex,
  classColors,
  bones,
  keypointValues,
  onShapeDown,
  onVertexDown,
}: {
  labels: Label[];
  selected: number | undefined;
  /** The selected shape's vertex picked by the keyboard. */
  vertex: number | undefined;
  classColors: Record<string, string>;
  /** Pairs of keypoint indexes to join (the dataset's skeleton). */
  bones: ReadonlyArray<readonly [number, number]>;
  /** Values per keypoint: 3 with visibility, 2 without. */
  keypointValues: number;
  onShapeDown: ShapeDown;
  onVertexDown: VertexDown;
}) {
  const picked = selected === undefined ? undefined : labels[selected];
  const points = picked && pointsOfLabel(picked, keypointValues);
  return (
    <>
      {Array.from({ length: GRID * GRID }, (_, cell) => (
        <g key={cell} className="at-rest">
          <MemoChunks
            items={labels}
            deps={[selected, classColors, bones, keypointValues, onShapeDown]}
            renderItem={(label, index) =>
              index === selected || cellOf(label) !== cell ? null : (
                <Shape
                  key={index}
                  index={index}
                  label={label}
                  selected={false}
                  color={classColors[String(label.classId)] ?? FALLBACK_COLOR}
                  bones={bones}
                  keypointValues={keypointValues}
                  onShapeDown={onShapeDown}
                />
              )
            }
          />
        </g>
      ))}
      <g className="editing">
        {selected !== undefined && picked ? (
          <Shape
            index={selected}
            label={picked}
            selected
            color={classColors[String(picked.classId)] ?? FALLBACK_COLOR}
            bones={bones}
            keypointValues={keypointValues}
            onShapeDown={onShapeDown}
          />
        ) : null}
        {selected !== undefined && points ? (
          <Handles index={selected} {...points} picked={vertex} onVertexDown={onVertexDown} />
        ) : null}
      </g>
    </>
  );
}

const Shape = memo(function Shape({
  index,
  label,
  selected,
  color,
  bones,
  keypointValues,
  onShapeDown,
}: {
  index: number;
  label: Label;
  selected: boolean;
  color: string;
  bones: ReadonlyArray<readonly [number, number]>;
  keypointValues: number;
  onShapeDown: ShapeDown;
}) {
  const props = {
    stroke: color,
    className: selected ? 'shape selected' : 'shape',
    vectorEffect: 'non-scaling-stroke',
    'data-label-index': index,
    onPointerDown: (event: PointerEvent<SVGElement>) => onShapeDown(index, event),
  } as const;
  const keypoints = label.keypoints ? (
    <Keypoints flat={label.keypoints} stride={keypointValues} bones={bones} color={color} />
  ) : null;
  if (label.segments && label.segments.length >= 6)
    return (
      <g>
        <polygon points={pointsOf(label.segments)} {...props} />
        {keypoints}
      </g>
    );
  if (label.obb && label.obb.length === 8) return <polygon points={pointsOf(label.obb)} {...props} />;
  if (label.bbox && label.bbox.length === 4) {
    const [cx = 0, cy = 0, w = 0, h = 0] = label.bbox;
    return (
      <g>
        <rect x={cx - w / 2} y={cy - h / 2} width={w} height={h} {...props} />
        {keypoints}
      </g>
    );
  }
  return keypoints ? <g>{keypoints}</g> : null;
});

/** The selected shape's vertices, each a handle the pointer drags (the keyboard picks them with , and .). */
function Handles({
  index,
  flat,
  stride,
  picked,
  onVertexDown,
}: {
  index: number;
  flat: number[];
  stride: number;
  picked: number | undefined;
  onVertexDown: VertexDown;
}) {
  const handles = [];
  for (let at = 0; at + 1 < flat.length; at += stride) {
    const vertex = at / stride;
    handles.push(
      <circle
        key={vertex}
        className={vertex === picked ? 'vertex picked' : 'vertex'}
        data-vertex={vertex}
        cx={flat[at]}
        cy={flat[at + 1]}
        r={0.008}
        vectorEffect="non-scaling-stroke"
        onPointerDown={(event) => onVertexDown(index, vertex, event)}
      />,
    );
  }
  return <g className="vertices">{handles}</g>;
}

/** Labelled keypoints as small dots joined by the skeleton's bones (a triple's third value 0: not labelled). */
function Keypoints({
  flat,
  stride,
  bones,
  color,
}: {
  flat: number[];
  stride: number;
  bones: ReadonlyArray<readonly [number, number]>;
  color: string;
}) {
  const labelled = (point: number) => stride !== 3 || flat[point * stride + 2] !== 0;
  const count = Math.floor(flat.length / stride);
  const dots = [];
  for (let point = 0; point < count; point += 1) {
    if (!labelled(point)) continue;
    const [x, y] = [flat[point * stride], flat[point * stride + 1]];
    dots.push(<circle key={point} cx={x} cy={y} r={0.006} fill={color} />);
  }
  const lines = bones
    .filter(([a, b]) => a < count && b < count && labelled(a) && labelled(b))
    .map(([a, b]) => (
      <line
        key={`${a}-${b}`}
        x1={flat[a * stride]}
        y1={flat[a * stride + 1]}
        x2={flat[b * stride]}
        y2={flat[b * stride + 1]}
        stroke={color}
        strokeWidth={1.5}
        vectorEffect="non-scaling-stroke"
      />
    ));
  return (
    <>
      {lines}
      {dots}
    </>
  );
}
