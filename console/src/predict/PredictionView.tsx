import { COLOR_BLIND_SAFE } from '../app/palette.ts';
import type { PredictedImage, ResultRow } from './queries.ts';

const colorOf = (row: ResultRow) => COLOR_BLIND_SAFE[row.class % COLOR_BLIND_SAFE.length]!;

/** The corners of a row's box: four for an oriented box, else the upright rectangle's. */
function corners(box: NonNullable<ResultRow['box']>): Array<[number, number]> {
  if (box.x3 !== undefined && box.y3 !== undefined && box.x4 !== undefined && box.y4 !== undefined)
    return [
      [box.x1, box.y1],
      [box.x2, box.y2],
      [box.x3, box.y3],
      [box.x4, box.y4],
    ];
  return [
    [box.x1, box.y1],
    [box.x2, box.y1],
    [box.x2, box.y2],
    [box.x1, box.y2],
  ];
}

const points = (xy: Array<[number, number]>) => xy.map(([x, y]) => `${x},${y}`).join(' ');

/** One result drawn in image pixels: its mask outline, box and keypoints. */
function ResultShape({ row, stroke }: { row: ResultRow; stroke: number }) {
  const color = colorOf(row);
  const segment = row.segments?.x.map((x, index): [number, number] => [x, row.segments!.y[index] ?? 0]) ?? [];
  return (
    <g className="prediction" data-class={row.name}>
      {segment.length > 2 ? (
        <polygon points={points(segment)} fill={color} fillOpacity={0.3} stroke={color} strokeWidth={stroke} />
      ) : null}
      {row.box ? <polygon points={points(corners(row.box))} fill="none" stroke={color} strokeWidth={stroke} /> : null}
      {row.keypoints?.x.map((x, index) =>
        (row.keypoints!.visible?.[index] ?? 1) > 0.5 ? (
          <circle key={index} cx={x} cy={row.keypoints!.y[index]} r={stroke * 1.5} fill={color} />
        ) : null,
      )}
    </g>
  );
}

/**
 * The image with its predictions over it (boxes, oriented boxes, masks, keypoints), and every result as text: the
 * drawing says nothing to a screen reader, the list says it all.
 */
export function PredictionView({ src, image }: { src: string; image: PredictedImage }) {
  const [height = 1, width = 1] = image.shape;
  const stroke = Math.max(1, Math.round(Math.max(width, height) / 300));
  const drawn = image.results.filter((row) => row.box || row.segments || row.keypoints);
  return (
    <div className="prediction-view">
      <figure className="prediction-image">
        <img src={src} alt="The image predicted on" width={width} height={height} />
        <svg
          viewBox={`0 0 ${width} ${height}`}
          preserveAspectRatio="none"
          aria-hidden="true"
          data-shapes={drawn.length}
        >
          {drawn.map((row, index) => (
            <ResultShape key={index} row={row} stroke={stroke} />
          ))}
        </svg>
      </figure>
      <table className="models" aria-label="Predictions">
        <thead>
          <tr>
            <th scope="col">Class</th>
            <th scope="col">Confidence</th>
          </tr>
        </thead>
        <tbody>
          {image.results.map((row, index) => (
            <tr key={index}>
              <th scope="row">
                <span className="swatch" style={{ background: colorOf(row) }} aria-hidden="true" /> {row.name}
              </th>
              <td>{row.confidence === undefined ? '—' : row.confidence.toFixed(3)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
