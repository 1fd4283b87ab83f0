/** Islands smaller than this (or than 0.1% of the points, when more) are scattered points, not islands. */
const MIN_ISLAND = 5;
/** Two points closer than this many times the median nearest-neighbour distance are on the same island. */
const REACH = 4;

/**
 * Islands of a 2-D layout: the connected groups of points when each point links to those within a reach scaled to the
 * layout's own spacing (its median nearest-neighbour distance). Ranked by size, 0 the largest (ties: the island whose
 * first point comes first); points of islands below the minimum size are -1. `xy` is [x0, y0, x1, y1, ...].
 */
export function islands(xy: Float32Array): Int32Array {
  const n = xy.length / 2;
  const rank = new Int32Array(n).fill(-1);
  if (n < MIN_ISLAND) return rank;
  // Images with the same vector share a place: the spacing is measured between distinct places.
  const spacing = median(nearestDistances(xy).filter((distance) => distance > 0));
  const reach = REACH * (spacing || 1e-6);
  const grid = new Grid(xy, reach);
  // Breadth-first over the points within reach: one component per unvisited point.
  const component = new Int32Array(n).fill(-1);
  const sizes: number[] = [];
  const queue = new Int32Array(n);
  for (let start = 0; start < n; start++) {
    if (component[start] !== -1) continue;
    const id = sizes.length;
    let head = 0;
    let tail = 0;
    queue[tail++] = start;
    component[start] = id;
    while (head < tail) {
      const i = queue[head++];
      grid.near(i, reach, (j) => {
        if (component[j] === -1) {
          component[j] = id;
          queue[tail++] = j;
        }
      });
    }
    sizes.push(tail);
  }
  const minimum = Math.max(MIN_ISLAND, Math.ceil(n / 1000));
  const order = sizes
    .map((size, id) => ({ size, id }))
    .filter(({ size }) => size >= minimum)
    .sort((a, b) => b.size - a.size || a.id - b.id);
  const rankOf = new Int32Array(sizes.length).fill(-1);
  order.forEach(({ id }, index) => (rankOf[id] = index));
  for (let i = 0; i < n; i++) rank[i] = rankOf[component[i]];
  return rank;
}

/** Each point's distance to its nearest other point (search rings of a grid sized to the average spacing). */
function nearestDistances(xy: Float32Array): Float64Array {
  const n = xy.length / 2;
  const side = Math.max(...extent(xy)) || 1e-6;
  const cell = side / Math.sqrt(n);
  const grid = new Grid(xy, cell);
  const nearest = new Float64Array(n);
  for (let i = 0; i < n; i++) nearest[i] = grid.nearest(i, Math.ceil(side / cell) + 1);
  return nearest;
}

function extent(xy: Float32Array): [number, number] {
  let [minX, minY, maxX, maxY] = [Infinity, Infinity, -Infinity, -Infinity];
  for (let i = 0; i < xy.length; i += 2) {
    minX = Math.min(minX, xy[i]);
    maxX = Math.max(maxX, xy[i]);
    minY = Math.min(minY, xy[i + 1]);
    maxY = Math.max(maxY, xy[i + 1]);
  }
  return [maxX - minX, maxY - minY];
}

/** The middle value; 0 when there is none. */
function median(values: Float64Array): number {
  const sorted = Float64Array.from(values).sort();
  return sorted.length ? sorted[Math.floor(sorted.length / 2)] : 0;
}

/** Points bucketed into square cells of one size, for neighbours within a radius. */
class Grid {
  private readonly xy: Float32Array;
  private readonly cell: number;
  private readonly cells = new Map<string, number[]>();

  constructor(xy: Float32Array, cell: number) {
    this.xy = xy;
    this.cell = cell;
    for (let i = 0; i < xy.length / 2; i++) {
      const key = this.key(this.cellOf(xy[2 * i]), this.cellOf(xy[2 * i + 1]));
      const members = this.cells.get(key);
      if (members) members.push(i);
      else this.cells.set(key, [i]);
    }
  }

  /** Calls `visit` with every other point within `radius` of point i. */
  near(i: number, radius: number, visit: (j: number) => void): void {
    const span = Math.ceil(radius / this.cell);
    this.ring(i, span, true, (j, distance) => distance <= radius && visit(j));
  }

  /** The distance from point i to its nearest other point within `rings` rings of cells (else Infinity). */
  nearest(i: number, rings: number): number {
    let best = Infinity;
    // A point found in ring r may still lose to one in ring r + 1, at most r + 1 cells away.
    for (let r = 0; r <= rings; r++) {
      this.ring(i, r, false, (_, distance) => (best = Math.min(best, distance)));
      if (best <= r * this.cell) break;
    }
    return best;
  }

  /** The other points in the cells `r` away from point i's (all cells within r when `filled`). */
  private ring(i: number, r: number, filled: boolean, visit: (j: number, distance: number) => void): void {
    const [x, y] = [this.xy[2 * i], this.xy[2 * i + 1]];
    const [cx, cy] = [this.cellOf(x), this.cellOf(y)];
    for (let dx = -r; dx <= r; dx++) {
      // On a ring only its top and bottom rows are whole; the columns between give their two ends.
      const step = filled || Math.abs(dx) === r ? 1 : Math.max(1, 2 * r);
      for (let dy = -r; dy <= r; dy += step) {
        for (const j of this.cells.get(this.key(cx + dx, cy + dy)) ?? []) {
          if (j !== i) visit(j, Math.hypot(this.xy[2 * j] - x, this.xy[2 * j + 1] - y));
        }
      }
    }
  }

  private cellOf(value: number): number {
    return Math.floor(value / this.cell);
  }

  private key(cx: number, cy: number): string {
    return `${cx},${cy}`;
  }
}
