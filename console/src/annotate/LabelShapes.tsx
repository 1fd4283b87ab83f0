import type { PointerEvent } from 'react';
import { pointsOf, type Label } from './geometry.ts';

const FALLBACK_COLOR = '#0969da';

/** The labels drawn in the image's 0-1 coordinates: boxes, oriented boxes, polygons and keypoints; one selected. */
export function LabelShapes({
  labels,
  selected,
  classColors,
  onShapeDown,
}: {
  labels: Label[];
  selected: number | undefined;
  classColors: Record<string, string>;
  onShapeDown: (index: number, event: PointerEvent<SVGElement>) => void;
}) {
  return (
    <>
      {labels.map((label, index) => {
        const color = classColors[String(label.classId)] ?? FALLBACK_COLOR;
        const props = {
          stroke: color,
          className: index === selected ? 'shape selected' : 'shape',
          vectorEffect: 'non-scaling-stroke',
          'data-label-index': index,
          onPointerDown: (event: PointerEvent<SVGElement>) => onShapeDown(index, event),
        } as const;
        const keypoints = label.keypoints ? <Keypoints flat={label.keypoints} color={color} /> : null;
        if (label.segments && label.segments.length >= 6)
          return (
            <g key={index}>
              <polygon points={pointsOf(label.segments)} {...props} />
              {keypoints}
            </g>
          );
        if (label.obb && label.obb.length === 8) return <polygon key={index} points={pointsOf(label.obb)} {...props} />;
        if (label.bbox && label.bbox.length === 4) {
          const [cx = 0, cy = 0, w = 0, h = 0] = label.bbox;
          return (
            <g key={index}>
              <rect x={cx - w / 2} y={cy - h / 2} width={w} height={h} {...props} />
              {keypoints}
            </g>
          );
        }
        return keypoints ? <g key={index}>{keypoints}</g> : null;
      })}
    </>
  );
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
