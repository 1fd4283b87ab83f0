import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setImmediate } from 'node:timers/promises';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Index } from 'usearch';
import { vectorOf, vectorsAfter } from './embeddings.store.ts';

/** Rows read at a time while catching up. */
const PAGE = 1024;
/**
 * Rows added to the index at a time, the event loop getting a turn between: an insert into a large graph is costly
 * (about 1 ms a vector at a million on 2 cores), and the first build of a large index must not stall requests.
 */
const ADD_SLICE = 32;
/** Where a search finds fewer vectors than asked, usearch pads its answer with this key (-1 as u64). */
const NO_KEY = 2n ** 64n - 1n;

/** Neighbours asked for first, per result wanted: most are filtered out by the caller. */
const OVERSAMPLE = 8;
/** Each pass that finds too few asks this many times more (beyond the last, the answer is shorter). */
const WIDEN = 8;
/** The most neighbours asked for per query vector, whatever the count: bounds a search's work. */
const MAX_ASKED = 65_536;

/** A stored vector near the query: its seq (image_embeddings.seq) and its cosine similarity. */
export interface Neighbour {
  seq: bigint;
  similarity: number;
}

/** What a caller knows of a stored vector: absent when it is gone from PostgreSQL, shown when its filter keeps it. */
export interface Kept {
  seq: string;
  shown: boolean;
}

interface State {
  modelId: string;
  index: Index | undefined;
  /** The highest seq added: the next catch-up reads from there. */
  watermark: bigint;
  /** Vectors added (or forgotten) since the index was last saved to or loaded from its file. */
  unsaved: number;
  /** The digest of the vector at the watermark. */
  watermarkDigest: string;
}

/** Where an index is kept between runs, beside what it holds (the model's identity, its watermark). */
interface SavedIndex {
  modelId: string;
  watermark: string;
  dimensions: number;
  /** The digest of the watermark's vector: another database (a backup restored over this one) has another there. */
  watermarkDigest: string;
}

/** The rows found for several queries, each once with its best similarity, most similar first, up to `count`. */
export function nearestFirst<R extends Kept & { similarity: number }>(lists: R[][], count: number): R[] {
  const best = new Map<string, R>();
  for (const row of lists.flat())
    if (row.similarity > (best.get(row.seq)?.similarity ?? -Infinity)) best.set(row.seq, row);
  return [...best.values()]
    .sort((a, b) => b.similarity - a.similarity || (BigInt(a.seq) < BigInt(b.seq) ? -1 : 1))
    .slice(0, count);
}

/**
 * The approximate nearest-neighbour index (usearch HNSW, inner product over unit vectors stored as f16) of the current
 * model's image vectors, held by this process. It is loaded from PostgreSQL on first use and, before each search, adds the
 * vectors written since (by any replica: seqs commit in order, see saveEmbeddings). Vectors deleted or replaced stay in
 * it until a search meets them and the caller forgets them; seqs are never reused, so a gone seq never comes back.
 * With a `dir`, the index is saved there (after a catch-up that changed a tenth of it, and at least `saveAfter` vectors)
 * and a restarted process loads it and reads only the vectors written since: at a million vectors a rebuild from
 * PostgreSQL takes minutes, a load seconds. The file is this process's cache: anything wrong with it, it is rebuilt.
 */
export class VectorIndex {
  private readonly fork: () => EntityManager;
  private state: State | undefined;
  private running: Promise<State> | undefined;
  private queued: Promise<State> | undefined;
  private wanted = '';
  private readonly saving: { dir: string; saveAfter: number } | undefined;

  constructor(fork: () => EntityManager, saving?: { dir: string; saveAfter?: number }) {
    this.fork = fork;
    this.saving = saving && { dir: saving.dir, saveAfter: saving.saveAfter ?? 10_000 };
  }

  /** The `count` nearest vectors of `modelId`, best first, searched among all the index holds when it holds fewer. */
  async nearest(
    modelId: string,
    vector: Float32Array,
    count: number,
  ): Promise<{ neighbours: Neighbour[]; size: number }> {
    this.wanted = modelId;
    const state = await this.catchUp();
    const size = state.index?.size() ?? 0;
    // Between a model change and the next catch-up, the vectors held are another model's.
    if (state.modelId !== modelId || !state.index || size === 0) return { neighbours: [], size: 0 };
    const { keys, distances } = state.index.search(vector, Math.min(count, size), 1);
    const neighbours: Neighbour[] = [];
    keys.forEach((seq: bigint, i: number) => {
      if (seq !== NO_KEY) neighbours.push({ seq, similarity: 1 - distances[i] });
    });
    return { neighbours, size };
  }

  /**
   * For each of `vectors`, its nearest stored vectors that `rows` shows, nearest first: together at least `count`
   * distinct ones where the index holds them. Asks for `count` × OVERSAMPLE neighbours of each, WIDEN times more while
   * too few are shown, at most `count` × OVERSAMPLE × WIDEN² or MAX_ASKED; the vectors `rows` does not return are gone
   * from PostgreSQL and forgotten.
   */
  async nearestShown<R extends Kept>(
    modelId: string,
    vectors: Float32Array[],
    count: number,
    rows: (seqs: bigint[]) => Promise<R[]>,
  ): Promise<Array<Array<R & { similarity: number }>>> {
    const most = Math.min(count * OVERSAMPLE * WIDEN * WIDEN, MAX_ASKED);
    for (let asked = Math.min(count * OVERSAMPLE, most); ; asked = Math.min(asked * WIDEN, most)) {
      const searched: Array<{ neighbours: Neighbour[]; size: number }> = [];
      for (const vector of vectors) searched.push(await this.nearest(modelId, vector, asked));
      const seqs = [...new Set(searched.flatMap(({ neighbours }) => neighbours.map((n) => n.seq)))];
      const known = new Map((await rows(seqs)).map((row) => [row.seq, row]));
      this.forget(seqs.filter((seq) => !known.has(seq.toString())));
      const lists = searched.map(({ neighbours }) =>
        neighbours.flatMap((n) => {
          const row = known.get(n.seq.toString());
          return row?.shown ? [{ ...row, similarity: n.similarity }] : [];
        }),
      );
      const distinct = new Set(lists.flatMap((list) => list.map((row) => row.seq))).size;
      if (distinct >= count || asked >= most || searched.every(({ size }) => asked >= size)) return lists;
    }
  }

  /** Drops vectors a search found gone from PostgreSQL. */
  private forget(seqs: bigint[]): void {
    if (seqs.length === 0 || !this.state?.index) return;
    this.state.index.remove(BigUint64Array.from(seqs));
    this.state.unsaved += seqs.length;
  }

  /** One catch-up at a time; a caller arriving during one waits for the next, which starts after it. */
  private catchUp(): Promise<State> {
    if (!this.running) {
      this.running = this.load().finally(() => (this.running = undefined));
      return this.running;
    }
    this.queued ??= this.running
      .catch(() => undefined)
      .then(() => {
        this.queued = undefined;
        return this.catchUp();
      });
    return this.queued;
  }

  private async load(): Promise<State> {
    if (this.state?.modelId !== this.wanted)
      this.state = (await this.saved(this.wanted)) ?? {
        modelId: this.wanted,
        index: undefined,
        watermark: 0n,
        unsaved: 0,
        watermarkDigest: '',
      };
    const state = this.state;
    const em = this.fork();
    for (;;) {
      const rows = await vectorsAfter(em, state.modelId, state.watermark, PAGE);
      if (rows.length > 0) {
        const dimensions = rows[0].vector.length / Float32Array.BYTES_PER_ELEMENT;
        state.index ??= await newIndex(dimensions);
        for (let first = 0; first < rows.length; first += ADD_SLICE) {
          const slice = rows.slice(first, first + ADD_SLICE);
          const vectors = new Float32Array(slice.length * dimensions);
          slice.forEach((row, i) => vectors.set(vectorOf(row.vector), i * dimensions));
          state.index.add(
            BigUint64Array.from(slice, (row) => BigInt(row.seq)),
            vectors,
          );
          await setImmediate();
        }
        state.watermark = BigInt(rows.at(-1)!.seq);
        state.watermarkDigest = digestOf(rows.at(-1)!.vector);
        state.unsaved += rows.length;
      }
      if (rows.length < PAGE) {
        this.save(state);
        return state;
      }
    }
  }

  /** The files of `modelId`'s index: named by a digest of it (a model's identity is long and free-form). */
  private files(modelId: string): { index: string; about: string } | undefined {
    if (!this.saving) return undefined;
    const name = createHash('sha256').update(modelId).digest('hex').slice(0, 32);
    return { index: join(this.saving.dir, `${name}.usearch`), about: join(this.saving.dir, `${name}.json`) };
  }

  /** The index saved for `modelId`, if there is a sound one. */
  private async saved(modelId: string): Promise<State | undefined> {
    const files = this.files(modelId);
    if (!files) return undefined;
    try {
      const about = JSON.parse(readFileSync(files.about, 'utf8')) as SavedIndex;
      if (about.modelId !== modelId || !Number.isSafeInteger(about.dimensions) || about.dimensions <= 0)
        return undefined;
      // The watermark's vector deleted since, or another one there: rebuilt rather than trusted.
      const [last] = await vectorsAfter(this.fork(), modelId, BigInt(about.watermark) - 1n, 1);
      if (last?.seq.toString() !== about.watermark || digestOf(last.vector) !== about.watermarkDigest) return undefined;
      const index = await newIndex(about.dimensions);
      index.load(files.index);
      return { modelId, index, watermark: BigInt(about.watermark), unsaved: 0, watermarkDigest: about.watermarkDigest };
    } catch {
      return undefined; // none yet, or unreadable: rebuilt from PostgreSQL, and saved again
    }
  }

  /** Saves the index once enough changed since the last save: the index file, then what it holds, each renamed into place. */
  private save(state: State): void {
    const files = this.files(state.modelId);
    if (!files || !this.saving || !state.index) return;
    if (state.unsaved < Math.max(this.saving.saveAfter, state.index.size() / 10)) return;
    state.unsaved = 0;
    try {
      mkdirSync(this.saving.dir, { recursive: true });
      rmSync(files.about, { force: true });
      state.index.save(`${files.index}.partial`);
      renameSync(`${files.index}.partial`, files.index);
      const about: SavedIndex = {
        modelId: state.modelId,
        watermark: state.watermark.toString(),
        dimensions: state.index.dimensions(),
        watermarkDigest: state.watermarkDigest,
      };
      writeFileSync(`${files.about}.partial`, JSON.stringify(about));
      renameSync(`${files.about}.partial`, files.about);
    } catch {
      // A cache that cannot be written (disk full, say) only costs the next start a rebuild; tried again a tenth later.
    }
  }
}

const digestOf = (vector: Uint8Array): string => createHash('sha256').update(vector).digest('hex');

/**
 * A new index. usearch's native library loads here, at the first search: a control plane that never searches
 * keeps its memory. Exported for `npm run bench:embed`, which measures this very index.
 */
export async function newIndex(dimensions: number): Promise<Index> {
  const usearch = (await import('usearch')).default;
  // expansion_search: the candidates a search keeps (at least the neighbours asked for). 64 found 85% of the true top
  // 10 at a million clustered vectors (bench:embed, target 95%); searches cost about linearly more, 1 ms at 64.
  return new usearch.Index({
    dimensions,
    metric: usearch.MetricKind.IP,
    quantization: usearch.ScalarKind.F16,
    connectivity: 16,
    expansion_add: 128,
    expansion_search: 512,
    multi: false,
  });
}
