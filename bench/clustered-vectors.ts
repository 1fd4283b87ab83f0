/**
 * Generated stand-ins for image embeddings (bench:embed): unit vectors in clusters, the same for the same seed, any row
 * made on its own. Each of CLUSTERS clusters has a random centre and DIRECTIONS random directions of its own; a row is
 * its cluster's centre moved along those directions by Gaussian amounts, plus a little noise in every dimension, then
 * L2-normalised. Like real image embeddings, which lie near low-dimensional surfaces, a row's nearest neighbours are
 * the nearest along its cluster's directions, not a tie among everything in its cluster. Below about 50,000 rows a
 * cluster holds too few for a top 10 of its own, and the rest of it are near-ties from unrelated clusters: a recall
 * measured there says little (0.81 at 10,000 rows, 0.96 at 50,000, 1.0 at 100,000).
 */
import { seeded } from '../control-plane/src/embeddings/seeded-random.ts';

const CLUSTERS = 4096;
const DIRECTIONS = 8;
/** Standard deviation of the amount along each of a cluster's (unit) directions; the centre is a unit vector. */
const SPREAD = 0.5;
/** Half-width of the uniform noise added to every dimension (about 0.3 in norm at 1280 dimensions). */
const NOISE = 0.015;

/** A standard normal draw (Box-Muller). */
function gaussian(random: () => number): number {
  return Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
}

function normalise(vector: Float32Array): void {
  let sum = 0;
  for (let i = 0; i < vector.length; i++) sum += vector[i] * vector[i];
  const scale = 1 / Math.sqrt(sum);
  for (let i = 0; i < vector.length; i++) vector[i] *= scale;
}

export class ClusteredVectors {
  readonly dims: number;
  private readonly seed: number;
  /** Per cluster: its centre, then its directions, each `dims` long. */
  private readonly bases: Float32Array;

  constructor(dims: number, seed: number) {
    this.dims = dims;
    this.seed = seed;
    this.bases = new Float32Array(CLUSTERS * (1 + DIRECTIONS) * dims);
    const random = seeded(seed);
    for (let b = 0; b < CLUSTERS * (1 + DIRECTIONS); b++) {
      const basis = this.bases.subarray(b * dims, (b + 1) * dims);
      for (let i = 0; i < dims; i++) basis[i] = gaussian(random);
      normalise(basis);
    }
  }

  /** Rows `first` to `first + count - 1`, row-major in one buffer. */
  rows(first: number, count: number): Float32Array {
    const out = new Float32Array(count * this.dims);
    for (let n = 0; n < count; n++) this.row(first + n, out.subarray(n * this.dims, (n + 1) * this.dims));
    return out;
  }

  /** Query `n` of a set: a copy of a random one of the first `total` rows with noise of its own, so held out of them. */
  query(n: number, total: number): Float32Array {
    const random = seeded(Math.imul(this.seed ^ 0x51ed27, 0x27d4eb2f) ^ n);
    const out = new Float32Array(this.dims);
    this.row(Math.floor(random() * total), out);
    for (let i = 0; i < this.dims; i++) out[i] += (2 * random() - 1) * NOISE;
    normalise(out);
    return out;
  }

  private row(index: number, out: Float32Array): void {
    const { dims, bases } = this;
    const random = seeded(Math.imul(index + 1, 0x9e3779b1) ^ this.seed);
    const cluster = Math.floor(random() * CLUSTERS);
    const base = cluster * (1 + DIRECTIONS) * dims;
    for (let i = 0; i < dims; i++) out[i] = bases[base + i] + (2 * random() - 1) * NOISE;
    for (let d = 1; d <= DIRECTIONS; d++) {
      const amount = gaussian(random) * SPREAD;
      const offset = base + d * dims;
      for (let i = 0; i < dims; i++) out[i] += amount * bases[offset + i];
    }
    normalise(out);
  }
}
