import type { ImageItem } from './queries.ts';

const FALLBACK_COLOR = '#0969da';

/** A thumbnail with its labels drawn over it in one SVG in the image's own 0-1 coordinates. */
export function ImageThumb({
  image,
  classNames,
  classColors,
}: {
  image: ImageItem;
  classNames: string[];
  classColors: Record<string, string>;
}) {
  const names = [...new Set(image.classIds.map((id) => classNames[id] ?? `class ${id}`))];
  const description = `${image.name}: ${image.labelCount} ${image.labelCount === 1 ? 'label' : 'labels'}${names.length ? ` (${names.join(', ')})` : ''}`;
  return (
    <div className="thumb" style={{ aspectRatio: `${image.width || 1} / ${image.height || 1}` }}>
      {image.thumbnailUrl ? (
        <img src={image.thumbnailUrl} alt={description} loading="lazy" decoding="async" />
      ) : (
        <span className="thumb-missing">{image.error ?? 'No preview'}</span>
      )}
      <svg viewBox="0 0 1 1" preserveAspectRatio="none" aria-hidden="true" focusable="false">
        {(image.labels ?? []).map((label, index) => {
          const color = classColors[String(label.classId)] ?? FALLBACK_COLOR;
          const common = { stroke: color, fill: 'none', vectorEffect: 'non-scaling-stroke', strokeWidth: 2 } as const;
          if (label.segments && label.segments.length >= 6)
            return <polygon key={index} points={pairs(label.segments)} {...common} />;
          if (label.obb && label.obb.length === 8) return <polygon key={index} points={pairs(label.obb)} {...common} />;
          if (label.bbox && label.bbox.length === 4) {
            const [cx = 0, cy = 0, w = 0, h = 0] = label.bbox;
            return <rect key={index} x={cx - w / 2} y={cy - h / 2} width={w} height={h} {...common} />;
          }
          return null;
        })}
      </svg>
    </div>
  );
}

function pairs(flat: number[]): string {
  const points: string[] = [];
  for (let index = 0; index + 1 < flat.length; index += 2) points.push(`${flat[index]},${flat[index + 1]}`);
  return points.join(' ');
}
