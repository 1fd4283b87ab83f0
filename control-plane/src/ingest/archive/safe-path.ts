// The path rules for entries of an untrusted archive: a name either becomes a safe relative path under the
// extraction root, or is refused with a reason the ingest report shows.

export const MAX_ARCHIVE_PATH = 1024;

/** Linux refuses longer file names (ENAMETOOLONG); refusing the entry keeps that from failing the whole job. */
const MAX_NAME_BYTES = 255;

/** Files that macOS Finder and Windows Explorer leave in archives; never dataset content. */
const OS_JUNK = new Set(['.DS_Store', 'Thumbs.db']);

/**
 * Normalizes an archive entry name to a relative `a/b/c` path, or says why the entry is skipped. Directory
 * entries (trailing `/`) are skipped with reason `directory`, which callers do not report.
 */
export function normalizeEntryPath(raw: string): { path: string } | { skip: string } {
  const name = raw.replaceAll('\\', '/'); // archives made on Windows separate with backslashes
  // oxlint-disable-next-line no-control-regex -- control characters are exactly what this refuses
  if (/[\u0000-\u001f\u007f-\u009f]/.test(name)) return { skip: 'control character in name' };
  if (name.startsWith('/') || /^[a-z]:/i.test(name)) return { skip: 'absolute path' };
  const segments = name.split('/').filter((segment) => segment !== '' && segment !== '.');
  // Refused even where it would stay inside (`a/../b`): no legitimate dataset archive needs one.
  if (segments.includes('..')) return { skip: 'parent directory (..) in path' };
  if (name.endsWith('/')) return { skip: 'directory' };
  if (segments.length === 0) return { skip: 'empty name' };
  const path = segments.join('/');
  if (path.length > MAX_ARCHIVE_PATH) return { skip: `path longer than ${MAX_ARCHIVE_PATH} characters` };
  if (segments.some((segment) => Buffer.byteLength(segment) > MAX_NAME_BYTES))
    return { skip: `name longer than ${MAX_NAME_BYTES} bytes` };
  const base = segments[segments.length - 1];
  if (segments[0] === '__MACOSX' || base.startsWith('._') || OS_JUNK.has(base)) return { skip: 'ignored' };
  return { path };
}
