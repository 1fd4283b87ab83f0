import { createHash } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Dataset } from '../datasets/dataset.entity.ts';
import { pgArray } from '../db/sql.ts';
import { datasetVectors, vectorOf } from '../embeddings/embeddings.store.ts';
import { EmbedderUnavailable, type ImageEmbedder } from '../embeddings/image-embedder.ts';
import { nearestFirst, type VectorIndex } from '../embeddings/vector-index.ts';
import { Invalid } from '../http/errors.ts';
import { LOOK_ALIKE_LIMIT, type ImageListOptions, type ImageSort } from './image.schemas.ts';
import { countByClassSets } from './image-class-set.store.ts';
import { containsPattern } from './image-search.ts';
import { ListCache, listTotals } from './list-totals.ts';
import {
  countImagesWhere,
  imagesOfVectors,
  isImageInDataset,
  listImagePage,
  listImagesInOrder,
  vectorsOfImagesWhere,
  type ImageRow,
} from './image-list.store.ts';

export type { ImageRow } from './image-list.store.ts';

/** The text matches whose vectors look-alikes are searched near, the most relevant first. */
const QUERY_IMAGES = 4;
/** Look-alike lists kept for paging: up to LOOK_ALIKE_LIMIT ids each (tens of kB). */
const lookAlikeLists = new ListCache<string[]>(200);

/** What look-alikes are searched with; a process without them lists text matches only. */
export interface VectorSearch {
  embedder: ImageEmbedder;
  index: VectorIndex;
}

const ORDER: Record<ImageSort, [column: string, direction: 'asc' | 'desc']> = {
  newest: ['created_at', 'desc'],
  oldest: ['created_at', 'asc'],
  'name-asc': ['name', 'asc'],
  'name-desc': ['name', 'desc'],
  'height-asc': ['height', 'asc'],
  'height-desc': ['height', 'desc'],
  'width-asc': ['width', 'asc'],
  'width-desc': ['width', 'desc'],
  'size-asc': ['bytes', 'asc'],
  'size-desc': ['bytes', 'desc'],
  'labels-asc': ['label_count', 'asc'],
  'labels-desc': ['label_count', 'desc'],
};

/** A WHERE clause under construction: SQL fragments and their parameters, in order. */
class Conditions {
  readonly parts: string[] = [];
  readonly params: unknown[] = [];

  add(sql: string, ...params: unknown[]): void {
    this.parts.push(sql);
    this.params.push(...params);
  }

  get sql(): string {
    return this.parts.join(' and ');
  }
}

/** Class indexes whose name contains the term, ignoring case. */
function classesMatching(dataset: Dataset, term: string): number[] {
  const needle = term.toLowerCase();
  return dataset.classNames.flatMap((name, index) => (name.toLowerCase().includes(needle) ? [index] : []));
}

function textMatch(where: Conditions, dataset: Dataset, term: string): void {
  const classIds = classesMatching(dataset, term);
  if (classIds.length)
    where.add('(i.search_text like ? or i.class_ids && ?::int[])', containsPattern(term), pgArray(classIds));
  else where.add('i.search_text like ?', containsPattern(term));
}

/** An ORDER BY clause and its parameters. */
interface Order {
  sql: string;
  params: unknown[];
}

/** q as a condition and an order: an ID or hash finds that image; text ranks exact, then prefix file-name matches, then by similarity. */
function relevance(dataset: Dataset, q: string): { match: Conditions; order: Order } {
  const match = new Conditions();
  if (/^[0-9a-f]{24}$/i.test(q)) {
    match.add('i.id = ?', q.toLowerCase());
    return { match, order: { sql: 'i.id', params: [] } };
  }
  if (/^[0-9a-f]{64}$/i.test(q)) {
    match.add('i.hash = ?', q.toLowerCase());
    return { match, order: { sql: 'i.created_at desc, i.id desc', params: [] } };
  }
  textMatch(match, dataset, q);
  const lower = q.toLowerCase();
  return {
    match,
    order: {
      sql: '(lower(i.name) = ?) desc, (lower(i.name) like ?) desc, similarity(i.search_text, ?) desc, i.created_at desc, i.id desc',
      params: [lower, `${lower.replace(/[\\%_]/g, '\\$&')}%`, lower],
    },
  };
}

/**
 * The dataset images list as SQL. Every sort has an index ending in id, so pages come from an index scan:
 * by offset (a deferred join keeps deep offsets to an index walk) or by keyset after the cursor image.
 */
export class ImageListQuery {
  private readonly em: EntityManager;
  private readonly dataset: Dataset;
  private readonly options: ImageListOptions;
  private readonly imageIds?: string[];
  private readonly vectors?: VectorSearch;

  constructor(
    em: EntityManager,
    dataset: Dataset,
    options: ImageListOptions,
    imageIds?: string[],
    vectors?: VectorSearch,
  ) {
    this.em = em;
    this.dataset = dataset;
    this.options = options;
    this.imageIds = imageIds;
    this.vectors = vectors;
  }

  /** With `textOutside`, the search matches only images without those classes by their text (see total()). */
  private filters(textOutside?: number[]): Conditions {
    const { split, hasLabel, hasError, classIds, search } = this.options;
    const where = new Conditions();
    where.add('i.dataset_id = ?', this.dataset.id);
    if (this.imageIds) where.add('i.id = any(?::text[])', pgArray(this.imageIds));
    if (split) where.add('i.split = ?', split);
    if (hasLabel !== undefined) where.add(hasLabel ? 'i.label_count > 0' : 'i.label_count = 0');
    if (hasError !== undefined) where.add(hasError ? 'i.error is not null' : 'i.error is null');
    if (classIds) where.add('i.class_ids && ?::int[]', pgArray(classIds));
    if (search && textOutside)
      where.add(
        'i.search_text like ? and not (i.class_ids && ?::int[])',
        containsPattern(search),
        pgArray(textOutside),
      );
    else if (search) textMatch(where, this.dataset, search);
    return where;
  }

  /** limit + 1 rows, so the caller knows whether there are more. */
  async page(): Promise<ImageRow[]> {
    const { q, cursor, offset } = this.options;
    if (q) {
      if (cursor) throw Invalid('cursor: q ranks by relevance; page it with offset');
      return this.relevantPage(q);
    }
    const where = this.filters();
    const [column, direction] = ORDER[this.options.sort];
    if (cursor) await this.afterCursor(where, cursor, column, direction);
    return this.rows(where, { sql: `i.${column} ${direction}, i.id ${direction}`, params: [] }, cursor ? 0 : offset);
  }

  private rows(where: Conditions, order: Order, skip: number): Promise<ImageRow[]> {
    return listImagePage(this.em, where, order, this.options.limit + 1, skip);
  }

  /** q: the text matches, then their look-alikes. */
  private async relevantPage(q: string): Promise<ImageRow[]> {
    const { offset, limit } = this.options;
    const [matches, lookAlikes] = await Promise.all([this.textTotal(q), this.lookAlikes(q)]);
    const { where, order } = this.textMatches(q);
    const text = offset < matches ? await this.rows(where, order, offset) : [];
    const start = Math.max(0, offset - matches);
    const ids = lookAlikes.slice(start, start + limit + 1 - text.length);
    if (ids.length === 0) return text;
    const more = await listImagesInOrder(this.em, this.dataset.id, ids);
    return [...text, ...more];
  }

  private async afterCursor(
    where: Conditions,
    cursor: string,
    column: string,
    direction: 'asc' | 'desc',
  ): Promise<void> {
    if (!(await isImageInDataset(this.em, cursor, this.dataset.id)))
      throw Invalid('cursor: that image is no longer in the dataset; start again from the first page');
    // Compared in SQL against the cursor row itself, so timestamps keep their full precision.
    where.add(
      `(i.${column}, i.id) ${direction === 'desc' ? '<' : '>'} (select c.${column}, c.id from images c where c.id = ?)`,
      cursor,
    );
  }

  /** The filters and q's match, most relevant first. */
  private textMatches(q: string): { where: Conditions; order: Order } {
    const where = this.filters();
    const { match, order } = relevance(this.dataset, q);
    where.add(match.sql, ...match.params);
    return { where, order };
  }

  private textTotal(q: string): Promise<number> {
    const count = async () => {
      const { where } = this.textMatches(q);
      return countImagesWhere(this.em, where);
    };
    return this.imageIds ? count() : listTotals.get(this.key(q), count);
  }

  /**
   * Up to LOOK_ALIKE_LIMIT images passing the filters, not matching q, whose vectors are nearest those of the top
   * QUERY_IMAGES text matches (the vector index, filtered in SQL), nearest first. None without the dataset's vectors of
   * the current model. Kept per dataset revision, filter and newest vector of the dataset, so pages agree.
   */
  private async lookAlikes(q: string): Promise<string[]> {
    if (!this.vectors) return [];
    const { embedder, index } = this.vectors;
    const modelId = await embedder.modelId().catch((error: unknown) => {
      if (error instanceof EmbedderUnavailable) return null;
      throw error;
    });
    if (!modelId) return [];
    const stored = await datasetVectors(this.em, this.dataset.id, modelId);
    if (stored.count === 0) return [];
    return lookAlikeLists.get(
      createHash('sha256')
        .update(`${this.key(q)}:${JSON.stringify([modelId, stored.newest, this.imageIds])}`)
        .digest('base64url'),
      async () => {
        const { where, order } = this.textMatches(q);
        const queries = await vectorsOfImagesWhere(this.em, modelId, where, order, QUERY_IMAGES);
        if (queries.length === 0) return [];
        const others = this.filters();
        const { match } = relevance(this.dataset, q);
        others.add(`(${match.sql}) is not true`, ...match.params);
        const count = Math.min(LOOK_ALIKE_LIMIT, stored.count);
        const lists = await index.nearestShown(
          modelId,
          queries.map((row) => vectorOf(row.vector)),
          count,
          (seqs) => imagesOfVectors(this.em, modelId, others, seqs),
        );
        return nearestFirst(lists, count).map((row) => row.id);
      },
    );
  }

  /** The dataset revision and the filters: what a computed list depends on, the selection aside. */
  private key(q: string | undefined): string {
    const { split, hasLabel, hasError, classIds, search } = this.options;
    return `${this.dataset.id}:${this.dataset.revision}:${JSON.stringify([split, hasLabel, hasError, classIds, search, q])}`;
  }

  /** Images matching the filters; the counters answer when the only filter is one they keep. */
  async total(): Promise<number> {
    const { split, hasLabel, hasError, classIds, search, q } = this.options;
    if (q) {
      const [matches, lookAlikes] = await Promise.all([this.textTotal(q), this.lookAlikes(q)]);
      return matches + lookAlikes.length;
    }
    const dataset = this.dataset;
    const filtered = [hasLabel, hasError, classIds, search, this.imageIds].some((value) => value !== undefined);
    if (!filtered) return split ? dataset[`${split}Count`] : dataset.imageCount;
    if (!split && !this.imageIds && [hasError, classIds, search].every((value) => value === undefined)) {
      return hasLabel ? dataset.labeledCount : dataset.imageCount - dataset.labeledCount;
    }
    // Split, labeled and classes: summed from the counts the database keeps per class set, not counted. A search
    // that names classes matches their images (summed so too) and, by text, others (counted).
    const searched = search === undefined ? [] : classesMatching(dataset, search);
    if (!this.imageIds && hasError === undefined && (search === undefined || searched.length)) {
      const classSets = [...(classIds ? [classIds] : []), ...(searched.length ? [searched] : [])];
      const withClasses = countByClassSets(this.em, dataset.id, { split, labeled: hasLabel, classSets });
      if (search === undefined) return withClasses;
      const byText = listTotals.get(`${this.key(undefined)} by text`, () =>
        countImagesWhere(this.em, this.filters(searched)),
      );
      const [classCount, textCount] = await Promise.all([withClasses, byText]);
      return classCount + textCount;
    }
    const count = async () => {
      const where = this.filters();
      return countImagesWhere(this.em, where);
    };
    if (this.imageIds) return count();
    return listTotals.get(this.key(undefined), count);
  }
}
