// The folders this host's operator shares with the control plane (VP_WORKER_SHARED_FOLDERS), read-only. Every path
// comes from a user: it is resolved to its real path (symlinks followed) and refused unless it stays inside the root
// it was asked under, and the root inside a shared folder. A folder on the way may be swapped for a symlink after that
// check: every file and folder is opened first and read through its descriptor, and refused unless what was opened
// (its real path, /proc/self/fd) is still inside the root. Listings are bounded in entries visited and depth.
import { constants, type Dirent } from 'node:fs';
import { open, readdir, readlink, realpath, stat, type FileHandle } from 'node:fs/promises';
import { isAbsolute, join, relative, sep } from 'node:path';
import type { FolderEntry, FolderObject } from '@vp/protocol';

/** Directory entries one listing request may look at before it gives up (a huge tree, a slow disk). */
export const MAX_ENTRIES_VISITED = 200_000;
const MAX_DEPTH = 64;

export class FolderError extends Error {
  readonly kind: 'denied' | 'missing' | 'tooLarge' | 'failed';

  constructor(kind: FolderError['kind'], message: string) {
    super(message);
    this.kind = kind;
  }
}

type Entry = { kind: 'folder' | 'file'; name: string; key: string; size?: number; mtime?: Date };

export class SharedFolders {
  readonly folders: string[];
  /** Runs between a path's check and its open (tests swap a folder for a symlink there). */
  readonly #checked: (path: string) => Promise<void> | void;

  /** `folders`: absolute paths, as configured. */
  constructor(folders: string[], options: { checked?: (path: string) => Promise<void> | void } = {}) {
    this.folders = folders;
    this.#checked = options.checked ?? (() => {});
  }

  /** The real path of `root`, which must be a shared folder or a folder inside one. */
  async resolveRoot(root: string): Promise<string> {
    if (!this.folders.length)
      throw new FolderError('denied', 'this host shares no folder (its operator sets VP_WORKER_SHARED_FOLDERS)');
    const real = await realOf(root, root);
    for (const folder of this.folders) {
      const shared = await realpath(folder).catch(() => undefined);
      if (shared && inside(shared, real)) {
        if (!(await stat(real)).isDirectory()) throw new FolderError('missing', `${root} is not a folder`);
        return real;
      }
    }
    throw new FolderError('denied', `${root} is not a folder this host shares (${this.folders.join(', ')})`);
  }

  /** A key under a root (real path) to its real path, refused when it leaves the root (.., an absolute path, a symlink). */
  async resolveKey(root: string, key: string): Promise<string> {
    // Plain segments only, so every file has one key (no "a//b" or "./a" twins of "a/b").
    const segments = key.replace(/\/$/, '').split('/');
    if (
      isAbsolute(key) ||
      key.includes('\0') ||
      segments.some((segment) => segment === '..' || segment === '.' || segment === '')
    ) {
      throw new FolderError('denied', `${key}: must be a path inside the folder, without .. (or . or empty segments)`);
    }
    const real = await realOf(join(root, key), key);
    if (!inside(root, real)) throw new FolderError('denied', `${key} leads outside the folder`);
    return real;
  }

  /** One page of the folders and files directly beneath `prefix` (a folder, ending in /, or empty). */
  async browse(
    root: string,
    prefix: string,
    cursor: string | undefined,
    limit: number,
  ): Promise<{ entries: FolderEntry[]; cursor?: string }> {
    const { dir, start } = splitPrefix(prefix);
    const base = dir ? await this.resolveKey(root, dir) : root;
    const entries: Entry[] = [];
    for (const candidate of await this.entriesOf(root, base, dir.replace(/\/$/, ''), { visited: 0 })) {
      if (!candidate.name.startsWith(start) || (cursor && sortKey(candidate) <= cursor)) continue;
      const entry = await described(root, base, candidate);
      if (entry) entries.push(entry);
      if (entries.length > limit) break;
    }
    const page = entries.slice(0, limit);
    return {
      entries: page.map((entry) => ({
        kind: entry.kind,
        name: entry.name,
        key: sortKey(entry),
        size: entry.size,
        updatedAt: entry.mtime?.toISOString(),
      })),
      cursor: entries.length > limit ? sortKey(page.at(-1)!) : undefined,
    };
  }

  /** One page of every file beneath `prefix`, at any depth, in key order; the cursor is the last key given. */
  async list(
    root: string,
    prefix: string,
    cursor: string | undefined,
    limit: number,
  ): Promise<{ objects: FolderObject[]; cursor?: string }> {
    const { dir } = splitPrefix(prefix);
    const base = dir ? await this.resolveKey(root, dir).catch(missingIsEmpty) : root;
    const objects: FolderObject[] = [];
    if (base === undefined) return { objects };
    const budget = { visited: 0 };
    let more = false;
    const walk = async (folder: string, key: string, depth: number): Promise<void> => {
      if (depth > MAX_DEPTH) throw new FolderError('failed', `${key}: folders nested deeper than ${MAX_DEPTH}`);
      for (const candidate of await this.entriesOf(root, folder, key, budget)) {
        if (more) return;
        const entryKey = sortKey(candidate);
        const isFolder = candidate.kind === 'folder';
        // A folder's keys all sort right after its own: one wholly before the cursor is skipped unread.
        if (cursor && entryKey <= cursor && !(isFolder && cursor.startsWith(entryKey))) continue;
        if (!entryKey.startsWith(prefix) && !(isFolder && prefix.startsWith(entryKey))) continue;
        if (isFolder) {
          await walk(join(folder, candidate.name), candidate.key, depth + 1);
          continue;
        }
        const entry = await described(root, folder, candidate);
        if (!entry) continue;
        if (objects.length === limit) more = true;
        else
          objects.push({
            key: entry.key,
            size: entry.size!,
            version: `${entry.mtime!.getTime()}-${entry.size}`,
            updatedAt: entry.mtime!.toISOString(),
          });
      }
    };
    await walk(base, dir.replace(/\/$/, ''), 0);
    return { objects, cursor: more ? objects.at(-1)!.key : undefined };
  }

  /** Opens a file for reading; refused past maxBytes before a byte is read. */
  async open(root: string, key: string, maxBytes: number): Promise<{ file: FileHandle; size: number }> {
    const real = await this.resolveKey(root, key);
    await this.#checked(real);
    // O_NOFOLLOW: the file itself is no symlink; openInside: nor was a folder on its way swapped for one.
    const file = await openInside(root, real, constants.O_RDONLY | constants.O_NOFOLLOW, key);
    const info = await file.stat();
    const problem = !info.isFile()
      ? new FolderError('missing', `${key} is not a file`)
      : info.size > maxBytes
        ? tooLarge(key, maxBytes)
        : undefined;
    if (problem) {
      await file.close();
      throw problem;
    }
    return { file, size: info.size };
  }

  /** A folder's entries in key order (a folder's key with its trailing /, so "a.b" comes before "a/x"), not yet stat'ed. */
  private async entriesOf(root: string, folder: string, key: string, budget: { visited: number }): Promise<Entry[]> {
    await this.#checked(folder);
    const handle = await openInside(root, folder, constants.O_RDONLY | constants.O_DIRECTORY, key || '/');
    let dirents: Dirent[];
    try {
      // Through the descriptor: the folder checked above, whatever its path leads to now.
      dirents = await readdir(`/proc/self/fd/${handle.fd}`, { withFileTypes: true });
    } catch (error) {
      throw asFolderError(error as NodeJS.ErrnoException, key || '/');
    } finally {
      await handle.close();
    }
    budget.visited += dirents.length;
    if (budget.visited > MAX_ENTRIES_VISITED)
      throw new FolderError(
        'failed',
        `more than ${MAX_ENTRIES_VISITED} entries to look through; use a narrower prefix`,
      );
    return dirents
      .filter((dirent) => dirent.isDirectory() || dirent.isFile() || dirent.isSymbolicLink())
      .map((dirent): Entry => ({
        kind: dirent.isDirectory() ? 'folder' : 'file',
        name: dirent.name,
        key: key ? `${key}/${dirent.name}` : dirent.name,
      }))
      .sort((a, b) => (sortKey(a) < sortKey(b) ? -1 : 1));
  }
}

/**
 * A file with its size and time; a symlink as the file it points to when that stays inside the root, else nothing
 * (a symlinked folder too: listings never follow one, so they cannot loop).
 */
async function described(root: string, folder: string, entry: Entry): Promise<Entry | undefined> {
  if (entry.kind === 'folder') return entry;
  const target = await realpath(join(folder, entry.name)).catch(() => undefined);
  if (!target || !inside(root, target)) return undefined;
  const info = await stat(target).catch(() => undefined);
  return info?.isFile() ? { ...entry, size: info.size, mtime: info.mtime } : undefined;
}

const sortKey = (entry: Entry) => (entry.kind === 'folder' ? `${entry.key}/` : entry.key);

export const tooLarge = (key: string, maxBytes: number) =>
  new FolderError('tooLarge', `${key} is larger than ${maxBytes} bytes`);

/** "a/b/c" → dir "a/b/", start "c"; "a/" → dir "a/", start "". */
function splitPrefix(prefix: string): { dir: string; start: string } {
  const cut = prefix.lastIndexOf('/') + 1;
  return { dir: prefix.slice(0, cut), start: prefix.slice(cut) };
}

function inside(folder: string, path: string): boolean {
  const rel = relative(folder, path);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
}

/**
 * Opens `path` and refuses what was opened unless its real path (the kernel's, through /proc/self/fd) is inside `root`:
 * a folder on the way swapped for a symlink since the path was checked leads elsewhere.
 */
async function openInside(root: string, path: string, flags: number, shown: string): Promise<FileHandle> {
  const file = await open(path, flags).catch((error: NodeJS.ErrnoException) => {
    throw asFolderError(error, shown);
  });
  const opened = await readlink(`/proc/self/fd/${file.fd}`).catch(() => undefined);
  if (opened === undefined || !inside(root, opened)) {
    await file.close();
    throw new FolderError('denied', `${shown} leads outside the folder`);
  }
  return file;
}

async function realOf(path: string, shown: string): Promise<string> {
  try {
    return await realpath(path);
  } catch (error) {
    throw asFolderError(error as NodeJS.ErrnoException, shown);
  }
}

function missingIsEmpty(error: unknown): undefined {
  if (error instanceof FolderError && error.kind === 'missing') return undefined;
  throw error;
}

function asFolderError(error: NodeJS.ErrnoException, shown: string): FolderError {
  if (error.code === 'ENOENT' || error.code === 'ENOTDIR')
    return new FolderError('missing', `${shown}: no such file or folder`);
  if (error.code === 'EACCES' || error.code === 'EPERM')
    return new FolderError('denied', `${shown}: the agent may not read it`);
  if (error.code === 'ELOOP') return new FolderError('denied', `${shown}: a symlink`);
  return new FolderError('failed', `${shown}: ${error.code ?? 'read failed'}`);
}
