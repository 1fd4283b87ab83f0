/** Longest search text kept per image: enough for names and ordinary metadata, bounded for the index. */
const MAX_SEARCH_CHARS = 8000;

function textsOf(value: unknown, into: string[]): void {
  if (value === null || value === undefined) return;
  if (typeof value === 'object') {
    for (const [key, inner] of Object.entries(value)) {
      if (!Array.isArray(value)) into.push(key);
      textsOf(inner, into);
    }
  } else if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
    into.push(String(value));
  }
}

/** What the images search filter matches: the file name and the custom metadata's keys and values, lower-cased. */
export function searchTextOf(filename: string, metadata: Record<string, unknown>): string {
  const texts = [filename];
  textsOf(metadata, texts);
  return texts.join(' ').toLowerCase().slice(0, MAX_SEARCH_CHARS);
}

/** A LIKE pattern matching `term` anywhere, with LIKE's wildcards in the term taken literally. */
export function containsPattern(term: string): string {
  return `%${term.toLowerCase().replace(/[\\%_]/g, '\\$&')}%`;
}
