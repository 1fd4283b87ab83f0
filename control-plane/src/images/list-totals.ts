/**
 * What a filtered image list computes once per dataset revision and filter, kept per process (oldest entry out first,
 * at most `maxEntries`). Every write to a dataset's images moves its revision (read from the database with each request),
 * so keys naming it are never served after a change, on this replica or any other; paging through one filter computes
 * once, and requests arriving together share one computation.
 */
export class ListCache<T> {
  private readonly entries = new Map<string, Promise<T>>();
  private readonly maxEntries: number;

  constructor(maxEntries: number) {
    this.maxEntries = maxEntries;
  }

  get(key: string, compute: () => Promise<T>): Promise<T> {
    const known = this.entries.get(key);
    if (known) return known;
    const value = compute();
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value as string);
    this.entries.set(key, value);
    value.catch(() => this.entries.delete(key));
    return value;
  }
}

/** Filtered totals; a bound, not a tuning knob: entries are a few dozen bytes. */
export const listTotals = new ListCache<number>(10_000);
