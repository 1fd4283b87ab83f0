import type { EntityManager } from '@mikro-orm/postgresql';
import type { Dataset } from '../datasets/dataset.entity.ts';
import { pgArray, query } from '../db/sql.ts';
import { Invalid } from '../http/errors.ts';
import type { ImageListOptions, ImageSort } from './image.schemas.ts';
import { containsPattern } from './image-search.ts';
import { cachedTotal } from './list-totals.ts';

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

export interface ImageRow {
  id: string;
  hash: string;
  ext: string;
  name: string;
  width: number;
  height: number;
  split: 'train' | 'val' | 'test';
  label_count: number;
  class_ids: number[];
  bytes: string | number;
  error: string | null;
  /** ISO 8601, formatted by PostgreSQL (the driver hands timestamps over as text). */
  created_at: string;
  updated_at: string;
}

const iso = (column: string) => `to_char(${column} at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as ${column.replace('i.', '')}`;
const COLUMNS = `i.id, i.hash, i.ext, i.name, i.width, i.height, i.split, i.label_count, i.class_ids, i.bytes, i.error, ${iso('i.created_at')}, ${iso('i.updated_at')}`;

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
  if (classIds.length) where.add('(i.search_text like ? or i.class_ids && ?::int[])', containsPattern(term), pgArray(classIds));
  else where.add('i.search_text like ?', containsPattern(term));
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

  constructor(em: EntityManager, dataset: Dataset, options: ImageListOptions, imageIds?: string[]) {
    this.em = em;
    this.dataset = dataset;
    this.options = options;
    this.imageIds = imageIds;
  }

  private filters(): Conditions {
    const { split, hasLabel, hasError, classIds, search } = this.options;
    const where = new Conditions();
    where.add('i.dataset_id = ?', this.dataset.id);
    if (this.imageIds) where.add('i.id = any(?::text[])', pgArray(this.imageIds));
    if (split) where.add('i.split = ?', split);
    if (hasLabel !== undefined) where.add(hasLabel ? 'i.label_count > 0' : 'i.label_count = 0');
    if (hasError !== undefined) where.add(hasError ? 'i.error is not null' : 'i.error is null');
    if (classIds) where.add('i.class_ids && ?::int[]', pgArray(classIds));
    if (search) textMatch(where, this.dataset, search);
    return where;
  }

  /** limit + 1 rows, so the caller knows whether there are more. */
  async page(): Promise<ImageRow[]> {
    const { q, cursor, offset, limit } = this.options;
    const where = this.filters();
    let order: string;
    const orderParams: unknown[] = [];
    if (q) {
      if (cursor) throw Invalid('cursor: q ranks by relevance; page it with offset');
      order = this.relevance(where, q, orderParams);
    } else {
      const [column, direction] = ORDER[this.options.sort];
      order = `i.${column} ${direction}, i.id ${direction}`;
      if (cursor) await this.afterCursor(where, cursor, column, direction);
    }
    const skip = cursor ? 0 : offset;
    return query<ImageRow>(
      this.em,
      `select ${COLUMNS} from images i
       join (select i.id from images i where ${where.sql} order by ${order} limit ? offset ?) page on page.id = i.id
       order by ${order}`,
      [...where.params, ...orderParams, limit + 1, skip, ...orderParams],
    );
  }

  private async afterCursor(where: Conditions, cursor: string, column: string, direction: 'asc' | 'desc'): Promise<void> {
    const [found] = await query<{ found: boolean }>(this.em, 'select exists (select 1 from images where id = ? and dataset_id = ?) as found', [cursor, this.dataset.id]);
    if (!found.found) throw Invalid('cursor: that image is no longer in the dataset; start again from the first page');
    // Compared in SQL against the cursor row itself, so timestamps keep their full precision.
    where.add(`(i.${column}, i.id) ${direction === 'desc' ? '<' : '>'} (select c.${column}, c.id from images c where c.id = ?)`, cursor);
  }

  /** q: an ID or hash finds that image; text ranks exact, then prefix file-name matches, then by similarity. */
  private relevance(where: Conditions, q: string, orderParams: unknown[]): string {
    if (/^[0-9a-f]{24}$/i.test(q)) {
      where.add('i.id = ?', q.toLowerCase());
      return 'i.id';
    }
    if (/^[0-9a-f]{64}$/i.test(q)) {
      where.add('i.hash = ?', q.toLowerCase());
      return 'i.created_at desc, i.id desc';
    }
    textMatch(where, this.dataset, q);
    orderParams.push(q.toLowerCase(), `${q.toLowerCase().replace(/[\\%_]/g, '\\$&')}%`, q.toLowerCase());
    return '(lower(i.name) = ?) desc, (lower(i.name) like ?) desc, similarity(i.search_text, ?) desc, i.created_at desc, i.id desc';
  }

  /** Images matching the filters; the counters answer when the only filter is one they keep. */
  async total(): Promise<number> {
    const { split, hasLabel, hasError, classIds, search, q } = this.options;
    const dataset = this.dataset;
    const filtered = [hasLabel, hasError, classIds, search, q, this.imageIds].some((value) => value !== undefined);
    if (!filtered) return split ? dataset[`${split}Count`] : dataset.imageCount;
    if (!split && !q && !this.imageIds && [hasError, classIds, search].every((value) => value === undefined)) {
      return hasLabel ? dataset.labeledCount : dataset.imageCount - dataset.labeledCount;
    }
    const count = async () => {
      const where = this.filters();
      if (q) this.relevance(where, q, []);
      const [row] = await query<{ total: number }>(this.em, `select count(*)::int as total from images i where ${where.sql}`, where.params);
      return row.total;
    };
    if (this.imageIds) return count();
    return cachedTotal(`${dataset.id}:${dataset.revision}:${JSON.stringify([split, hasLabel, hasError, classIds, search, q])}`, count);
  }
}
