// What an ingest leaves out (files, lines, records), grouped by reason: every entry is counted, a few of each
// reason are kept as examples. A file with a million bad lines reports in a few kilobytes, and the report
// holds no text PostgreSQL would refuse.

export interface Skipped {
  /** The file (archive path, NDJSON `file` value or NDJSON file name) the entry belongs to. */
  path: string;
  /** Why; the same words for every entry skipped for the same reason, so entries group. */
  reason: string;
  /** Where in the file, when it has parts: `line 12`, `images[3]`. */
  at?: string;
}

/** Distinct reasons counted one by one; entries for further reasons are counted under OTHER_REASONS. */
export const MAX_REASONS = 50;
export const EXAMPLES_PER_REASON = 3;
export const OTHER_REASONS = 'other reasons';
const MAX_TEXT = 300;

/**
 * Text from a file as the report may show it: NUL and broken UTF-16 (which PostgreSQL refuses in text and
 * jsonb) become U+FFFD, and long text is cut.
 */
export function reportable(text: string): string {
  const cut = text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT)}…` : text;
  return cut.toWellFormed().replaceAll('\u0000', '\uFFFD');
}

export interface SkipSummary {
  entriesSkipped: number;
  /** Reason → entries skipped for it. */
  skippedReasons: Record<string, number>;
  /** Up to EXAMPLES_PER_REASON entries per reason, in the order they were found. */
  skippedEntries: Skipped[];
}

export class Skips {
  count = 0;
  private readonly groups = new Map<string, { count: number; examples: Skipped[] }>();

  /** `at` may be a function, called only for an example kept: a file can have a hundred million records to skip. */
  add(path: string, reason: string, at?: string | (() => string)): void {
    this.count += 1;
    const key = this.groups.has(reason) || this.groups.size < MAX_REASONS ? reason : OTHER_REASONS;
    let group = this.groups.get(key);
    if (!group) this.groups.set(key, (group = { count: 0, examples: [] }));
    group.count += 1;
    if (group.examples.length < EXAMPLES_PER_REASON) {
      const example: Skipped = { path: reportable(path), reason: reportable(reason) };
      if (at !== undefined) example.at = reportable(typeof at === 'string' ? at : at());
      group.examples.push(example);
    }
  }

  addAll(entries: Iterable<Skipped>): void {
    for (const entry of entries) this.add(entry.path, entry.reason, entry.at);
  }

  merge(other: Skips): void {
    for (const [reason, group] of other.groups) {
      const key = this.groups.has(reason) || this.groups.size < MAX_REASONS ? reason : OTHER_REASONS;
      const mine = this.groups.get(key) ?? { count: 0, examples: [] };
      mine.count += group.count;
      mine.examples.push(...group.examples.slice(0, EXAMPLES_PER_REASON - mine.examples.length));
      this.groups.set(key, mine);
    }
    this.count += other.count;
  }

  summary(): SkipSummary {
    const skippedReasons: Record<string, number> = {};
    for (const [reason, group] of this.groups)
      skippedReasons[reportable(reason)] = (skippedReasons[reportable(reason)] ?? 0) + group.count;
    return {
      entriesSkipped: this.count,
      skippedReasons,
      skippedEntries: [...this.groups.values()].flatMap((group) => group.examples),
    };
  }
}
