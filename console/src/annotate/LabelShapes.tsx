import { memo, type PointerEvent } from 'react';
import { pointsOf, type Label } from './geometry.ts';

const FALLBACK_COLOR = '#0969da';

type ShapeDown = (index: number, event: PointerEvent<SVGElement>) => void;
type VertexDown = (index: number, vertex: number, event: PointerEvent<SVGElement>) => void;

/**
 * The labels drawn in the image's 0-1 coordinates: boxes, oriented boxes, polygons and keypoints; one selected, its
 * vertices (polygons, oriented boxes) as handles to drag. Each label is its own memoised element, so an edit of one
 * repaints one of thousands (the handlers must be stable).
 */
export function LabelShapes({
  labels,
  selected,
  vertex,
  classColors,
  onShapeDown,
  onVertexDown,
}: {
  labels: Label[];
  selected: number | undefined;
  /** The selected shape's vertex picked by the keyboard. */
  vertex: number | undefined;
  classColors: Record<string, string>;
  onShapeDown: ShapeDown;
  onVertexDown: VertexDown;
}) {
  const picked = selected === undefined ? undefined : labels[selected];
  const vertices = picked && (picked.segments ?? picked.obb);
  return (
    <>
      {labels.map((label, index) => (
        <Shape
          key={index}
          index={index}
          label={label}
          selected={index === selected}
          color={classColors[String(label.classId)] ?? FALLBACK_COLOR}
          onShapeDown={onShapeDown}
        />
      ))}
      {selected !== undefined && vertices ? (
        <Handles index={selected} flat={vertices} picked={vertex} onVertexDown={onVertexDown} />
      ) : null}
    </>
  );
}

const Shape = memo(function Shape({
  index,
  label,
  selected,
  color,
  onShapeDown,
}: {
  index: number;
  label: Label;
  selected: boolean;
  color: string;
  onShapeDown: ShapeDown;
}) {
  const props = {
    stroke: color,
    className: selected ? 'shape selected' : 'shape',
    vectorEffect: 'non-scaling-stroke',
    'data-label-index': index,
    onPointerDown: (event: PointerEvent<SVGElement>) => onShapeDown(index, event),
  } as const;
  const keypoints = label.keypoints ? <Keypoints flat={label.keypoints} color={color} /> : null;
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
  picked,
  onVertexDown,
}: {
  index: number;
  flat: number[];
  picked: number | undefined;
  onVertexDown: VertexDown;
}) {
  const handles = [];
  for (let at = 0; at + 1 < flat.length; at += 2) {
    const vertex = at / 2;
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

/** Visible keypoints as small dots (a triple's third value 0 means not labelled). */
function Keypoints({ flat, color }: { flat: number[]; color: string }) {
  const stride = flat.length % 3 === 0 ? 3 : 2;
  const dots = [];
  for (let index = 0; index + 1 < flat.length; index += stride) {
    if (stride === 3 && flat[index + 2] === 0) continue;
    dots.push(<circle key={index} cx={flat[index]} cy={flat[index + 1]} r={0.006} fill={color} />);
  }
  return <>{dots}</>;
}
