import type { ObjectPage } from './provider.ts';

export interface FileRow {
  key: string;
  size: number;
  /** As the service wrote it (an HTTP date, an ISO time). */
  updatedAt?: string;
}

/** A browse page from a delimited listing: folders (common prefixes) first, then the files directly beneath `prefix`. */
export function objectPage(
  prefix: string,
  folders: string[],
  files: FileRow[],
  cursor: string | undefined,
): ObjectPage {
  return {
    entries: [
      ...folders
        .filter(Boolean)
        .map((key) => ({ kind: 'folder' as const, name: key.slice(prefix.length).replace(/\/$/, ''), key })),
      ...files
        // The prefix itself (a "folder" object some tools create) is not an entry beneath it.
        .filter((file) => file.key && file.key !== prefix)
        .map((file) => ({
          kind: 'file' as const,
          name: file.key.slice(file.key.lastIndexOf('/') + 1),
          key: file.key,
          size: file.size,
          updatedAt: isoTime(file.updatedAt),
        })),
    ],
    cursor: cursor || undefined,
  };
}

/** A time the service wrote, as ISO 8601; one that is no time is left out (it only informs). */
export function isoTime(value: string | undefined): string | undefined {
  const time = value ? new Date(value) : undefined;
  return time && !Number.isNaN(time.getTime()) ? time.toISOString() : undefined;
}
