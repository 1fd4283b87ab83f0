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

/** What the view shows: the whole layout magnified `scale` times, centred on (cx, cy) in view coordinates. */
export interface Zoom {
  scale: number;
  cx: number;
  cy: number;
}

export const WHOLE_MAP: Zoom = { scale: 1, cx: 0.5, cy: 0.5 };
export const MAX_ZOOM = 64;

/** A point of the canvas (0-1 of its width and height) in view coordinates of the whole layout. */
export function unzoom(zoom: Zoom, [x, y]: [number, number]): [number, number] {
  return [(x - 0.5) / zoom.scale + zoom.cx, (y - 0.5) / zoom.scale + zoom.cy];
}

/** The centre kept where the view stays inside the whole map. */
function inside(zoom: Zoom): Zoom {
  const half = 0.5 / zoom.scale;
  const keep = (value: number) => Math.min(1 - half, Math.max(half, value));
  return { scale: zoom.scale, cx: keep(zoom.cx), cy: keep(zoom.cy) };
}

/** Magnifies by `factor` (below 1: zooms out), keeping the canvas point `at` over the same place of the map. */
export function zoomAt(zoom: Zoom, factor: number, at: [number, number] = [0.5, 0.5]): Zoom {
  const scale = Math.min(MAX_ZOOM, Math.max(1, zoom.scale * factor));
  const [x, y] = unzoom(zoom, at);
  return inside({ scale, cx: x - (at[0] - 0.5) / scale, cy: y - (at[1] - 0.5) / scale });
}

/** Moves the view by (dx, dy) shares of the canvas. */
export function pan(zoom: Zoom, dx: number, dy: number): Zoom {
  return inside({ ...zoom, cx: zoom.cx + dx / zoom.scale, cy: zoom.cy + dy / zoom.scale });
}
