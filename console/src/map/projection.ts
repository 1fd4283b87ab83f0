import type { Layout } from './queries.ts';

/** Space left around the points, as a share of the view on each side. */
export const PADDING = 0.05;

export interface Bounds {
  minX: number;
  maxX: number;
  minY: number;
  maxY: number;
}

export function boundsOf(layout: Layout): Bounds {
  let [minX, maxX, minY, maxY] = [Infinity, -Infinity, Infinity, -Infinity];
  for (let index = 0; index < layout.x.length; index++) {
    const [x, y] = [layout.x[index]!, layout.y[index]!];
    if (x < minX) minX = x;
    if (x > maxX) maxX = x;
    if (y < minY) minY = y;
    if (y > maxY) maxY = y;
  }
  if (!Number.isFinite(minX)) return { minX: 0, maxX: 1, minY: 0, maxY: 1 };
  return { minX, maxX: maxX === minX ? minX + 1 : maxX, minY, maxY: maxY === minY ? minY + 1 : maxY };
}

/** A layout point's place in the view, 0-1 from the left and from the top (y grows upwards in the layout). */
export function toView(bounds: Bounds, x: number, y: number): [number, number] {
  const span = 1 - 2 * PADDING;
  return [
    PADDING + (span * (x - bounds.minX)) / (bounds.maxX - bounds.minX),
    PADDING + (span * (bounds.maxY - y)) / (bounds.maxY - bounds.minY),
  ];
}

/**
 * Every point inside a polygon drawn in view coordinates (0-1), by ray casting, after a bounding-box test; no cap on
 * how many: a lasso over a million points answers them all.
 */
export function pointsInPolygon(layout: Layout, bounds: Bounds, polygon: [number, number][]): number[] {
  if (polygon.length < 3) return [];
  const xs = polygon.map(([x]) => x);
  const ys = polygon.map(([, y]) => y);
  const [left, right, top, bottom] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
  const inside: number[] = [];
  for (let index = 0; index < layout.x.length; index++) {
    const [px, py] = toView(bounds, layout.x[index]!, layout.y[index]!);
    if (px < left || px > right || py < top || py > bottom) continue;
    let within = false;
    for (let a = 0, b = polygon.length - 1; a < polygon.length; b = a++) {
      const [ax, ay] = polygon[a]!;
      const [bx, by] = polygon[b]!;
      if (ay > py !== by > py && px < ((bx - ax) * (py - ay)) / (by - ay) + ax) within = !within;
    }
    if (within) inside.push(index);
  }
  return inside;
}
