/** Filtered totals kept per process; a bound, not a tuning knob: entries are a few dozen bytes. */
const MAX_ENTRIES = 10_000;
const totals = new Map<string, number>();

/**
 * The total of a filtered image list, counted once per dataset revision and filter. Every write to a
 * dataset's images moves its revision (read from the database with each request), so an entry is never
 * served after a change, on this replica or any other; paging through one filter counts once.
 */
export async function cachedTotal(key: string, count: () => Promise<number>): Promise<number> {
  const known = totals.get(key);
  if (known !== undefined) return known;
  const total = await count();
  if (totals.size >= MAX_ENTRIES) totals.delete(totals.keys().next().value as string);
  totals.set(key, total);
  return total;
}
