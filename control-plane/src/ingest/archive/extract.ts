// Opens an untrusted dataset archive (ZIP, TAR, TAR.GZ) for reading by path. A ZIP is read in place (its
// central directory says where each entry is; an entry too large for memory is extracted when asked for); a
// TAR has no index, so it is extracted into a fresh directory, streaming. Either way every entry path goes
// through normalizeEntryPath, only regular files are listed, and sizes are checked against the limits, declared
// ones first and then the bytes themselves, so that neither a bomb nor a header lying about sizes gets past them.
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readFile, stat } from 'node:fs/promises';
import { dirname, resolve, sep } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import tar, { type Header as TarHeader } from 'tar-stream';
import yauzl, { type Entry as ZipEntry } from 'yauzl';
import { MAX_ARCHIVE_PATH, normalizeEntryPath } from './safe-path.ts';

export type ArchiveKind = 'zip' | 'tar' | 'tgz';

export interface ExtractLimits {
  maxEntries: number;
  maxEntryBytes: number;
  maxTotalBytes: number;
  /** Uncompressed bytes over the archive file's size, for the whole archive. */
  maxRatio: number;
}

/** The regular files of an archive, readable by their normalized path, and the entries that were skipped. */
export interface ArchiveFiles {
  files: Array<{ path: string; size: number }>;
  skipped: Array<{ path: string; reason: string }>;
  /** The whole file (an ArchiveError when its bytes turn out bad: corrupt, or not the size its header says). */
  read(path: string): Promise<Buffer>;
  /** The file as a stream of chunks, for a file too large to hold (errors as for `read`, from the stream). */
  stream(path: string): Promise<AsyncIterable<Uint8Array>>;
  /**
   * A local file holding it, for a file too large to read into memory: a TAR's is where it was extracted; a
   * ZIP entry is extracted now, streaming, into the work folder (errors as for `read`).
   */
  localFile(path: string): Promise<string>;
  close(): Promise<void>;
}

export interface ExtractOptions {
  limits?: Partial<ExtractLimits>;
  signal?: AbortSignal;
  /** Called after each file listed with the entries seen and the bytes (written, or declared for a ZIP) so far. */
  onProgress?: (progress: { entries: number; bytes: number }) => void;
}

/** A bad archive (corrupt, truncated, not of its named kind, or over a limit); its message is shown to the user. */
export class ArchiveError extends Error {}

const KiB = 1024;
const MiB = 1024 * KiB;
const GiB = 1024 * MiB;

export const DEFAULT_LIMITS: ExtractLimits = {
  maxEntries: 1_000_000,
  maxEntryBytes: 512 * MiB,
  maxTotalBytes: 64 * GiB,
  maxRatio: 200,
};

/** Below this much output the ratio is not checked: a small archive of text or zeros can legitimately pass 200:1. */
const RATIO_EXEMPT_BYTES = MiB;

const FORMAT_NAMES: Record<ArchiveKind, string> = { zip: 'ZIP', tar: 'TAR', tgz: 'TAR.GZ' };

/** What an entry is: `file` and `directory`, or the reason any other kind of entry is skipped. */
type EntryType = 'file' | 'directory' | (string & {});

export function archiveKindOf(filename: string): ArchiveKind | 'ndjson' | null {
  const name = filename.toLowerCase();
  if (name.endsWith('.zip')) return 'zip';
  if (name.endsWith('.tar')) return 'tar';
  if (name.endsWith('.tar.gz') || name.endsWith('.tgz')) return 'tgz';
  if (name.endsWith('.ndjson')) return 'ndjson';
  return null;
}

/** Opens `file` for reading; TAR and TAR.GZ entries are extracted under `workDir` (which the caller removes). */
export async function openArchive(
  file: string,
  kind: ArchiveKind,
  workDir: string,
  options: ExtractOptions = {},
): Promise<ArchiveFiles> {
  options.signal?.throwIfAborted();
  const root = resolve(workDir);
  const extraction = new Extraction(root, { ...DEFAULT_LIMITS, ...options.limits }, (await stat(file)).size, options);
  try {
    if (kind === 'zip') return await indexZip(file, extraction);
    await mkdir(root, { recursive: true });
    await extractTar(file, kind === 'tgz', extraction);
  } catch (error) {
    if (options.signal?.aborted) throw options.signal.reason; // streams fail with their own AbortError
    throw asArchiveError(kind, error);
  }
  return {
    files: extraction.files,
    skipped: extraction.skipped,
    read: (path) => readFile(extraction.fileOf(path)),
    stream: async (path) => createReadStream(extraction.fileOf(path)),
    localFile: async (path) => extraction.fileOf(path),
    close: async () => undefined,
  };
}

/**
 * Errors from the archive readers (yauzl, zlib, tar-stream) mean a bad archive; system errors (disk full, I/O,
 * which carry a `syscall`) and our own ArchiveErrors pass through unchanged.
 */
function asArchiveError(kind: ArchiveKind, error: unknown): unknown {
  if (!(error instanceof Error) || error instanceof ArchiveError || 'syscall' in error) return error;
  return new ArchiveError(`the ${FORMAT_NAMES[kind]} archive is corrupt or truncated: ${error.message}`);
}

/** Lists a ZIP's files from its central directory, limits checked on the declared sizes; reads them in place. */
async function indexZip(file: string, extraction: Extraction): Promise<ArchiveFiles> {
  // Names are decoded here, not by yauzl, which fails the whole archive on an unsafe name rather than skip it.
  const zip = await yauzl.openPromise(file, {
    lazyEntries: true,
    autoClose: false,
    validateEntrySizes: true,
    strictFileNames: false,
    decodeStrings: false,
  });
  const entries = new Map<string, ZipEntry>();
  try {
    extraction.checkEntryCount(zip.entryCount); // the central directory says how many; refuse before reading any
    for await (const entry of zip.eachEntry()) {
      extraction.countEntry();
      const name = yauzl.getFileNameLowLevel(entry.generalPurposeBitFlag, entry.fileNameRaw, entry.extraFields, false);
      const path = extraction.target(name, zipEntryType(entry, name));
      if (path === null) continue;
      extraction.register(path, entry.uncompressedSize);
      entries.set(path, readableOnly(entry));
    }
  } catch (error) {
    zip.close();
    throw error;
  }
  const entryOf = (path: string): ZipEntry => {
    extraction.signal?.throwIfAborted();
    const entry = entries.get(path);
    if (!entry) throw new Error(`no file "${path}" in the archive`);
    return entry;
  };
  // yauzl (validateEntrySizes) fails an entry's stream when its bytes differ from the declared (checked) size.
  const read = async (path: string): Promise<Buffer> => {
    const entry = entryOf(path);
    // One buffer of the declared size: the bytes always fit.
    const bytes = Buffer.allocUnsafe(entry.uncompressedSize);
    let filled = 0;
    try {
      for await (const chunk of await zip.openReadStreamPromise(entry)) filled += (chunk as Buffer).copy(bytes, filled);
    } catch (error) {
      throw asArchiveError('zip', error);
    }
    return bytes;
  };
  async function* chunks(entry: ZipEntry): AsyncIterable<Uint8Array> {
    try {
      for await (const chunk of await zip.openReadStreamPromise(entry)) yield chunk as Buffer;
    } catch (error) {
      throw asArchiveError('zip', error);
    }
  }
  const stream = async (path: string): Promise<AsyncIterable<Uint8Array>> => chunks(entryOf(path));
  const localFile = async (path: string): Promise<string> => {
    const entry = entryOf(path);
    const file = extraction.fileOf(path);
    await mkdir(dirname(file), { recursive: true });
    try {
      await pipeline(await zip.openReadStreamPromise(entry), createWriteStream(file, { flags: 'wx' }), {
        signal: extraction.signal,
      });
    } catch (error) {
      if (extraction.signal?.aborted) throw extraction.signal.reason;
      throw asArchiveError('zip', error);
    }
    return file;
  };
  return {
    files: extraction.files,
    skipped: extraction.skipped,
    read,
    stream,
    localFile,
    close: async () => zip.close(),
  };
}

/**
 * What yauzl's openReadStream reads of an entry, without the name, comment and extra-field buffers it was listed with:
 * a ZIP of 20,000 files kept 80,000 of those Buffers alive for the whole ingest.
 */
function readableOnly(entry: ZipEntry): ZipEntry {
  const { compressedSize, uncompressedSize, compressionMethod, generalPurposeBitFlag, relativeOffsetOfLocalHeader } =
    entry;
  return Object.assign(Object.create(Object.getPrototypeOf(entry) as object) as ZipEntry, {
    compressedSize,
    uncompressedSize,
    compressionMethod,
    generalPurposeBitFlag,
    relativeOffsetOfLocalHeader,
  });
}

function zipEntryType(entry: ZipEntry, name: string): EntryType {
  if (name.endsWith('/')) return 'directory';
  if (entry.isEncrypted()) return 'encrypted';
  if (entry.compressionMethod !== 0 && entry.compressionMethod !== 8)
    return `unsupported compression method ${entry.compressionMethod}`;
  if (entry.versionMadeBy >> 8 !== 3) return 'file'; // only archives made on Unix carry a file type (st_mode)
  const type = (entry.externalFileAttributes >>> 16) & 0o170000;
  if (type === 0 || type === 0o100000) return 'file';
  if (type === 0o040000) return 'directory';
  return type === 0o120000 ? 'symlink' : 'special file';
}

async function extractTar(file: string, gzipped: boolean, extraction: Extraction): Promise<void> {
  const extract = tar.extract();
  let expanded = 0;
  // The ratio of a TAR.GZ is the gunzipped bytes (headers and skipped entries too) over the compressed file.
  const meter = async function* (chunks: AsyncIterable<Buffer>) {
    for await (const chunk of chunks) {
      expanded += chunk.length;
      extraction.checkRatio(expanded);
      yield chunk;
    }
  };
  const input = createReadStream(file);
  const feeding = gzipped
    ? pipeline(input, createGunzip(), meter, extract, { signal: extraction.signal })
    : pipeline(input, extract, { signal: extraction.signal });
  // A failing input (bad gzip or tar data, a limit in the meter) also fails the entry being written, with a
  // vaguer error ("Stream was destroyed"): when the input failed first, its error is the one reported.
  let inputError: unknown;
  feeding.catch((error: unknown) => (inputError = error));
  try {
    for await (const entry of extract) {
      extraction.countEntry();
      const path = extraction.target(entry.header.name, tarEntryType(entry.header.type));
      if (path === null)
        entry.resume(); // drain it, or the next entry never comes
      else await extraction.write(path, entry.header.size, entry as AsyncIterable<Buffer>); // streamx types chunks as unknown
    }
  } catch (error) {
    throw inputError ?? error;
  }
  await feeding;
}

function tarEntryType(type: TarHeader['type'] | null): EntryType {
  switch (type) {
    case 'file':
    case 'contiguous-file':
      return 'file';
    case 'directory':
      return 'directory';
    case 'symlink':
      return 'symlink';
    case 'link':
      return 'link';
    default:
      return 'special file'; // devices, FIFOs, and types tar-stream does not know (sparse files, volume labels)
  }
}

/** The state of one extraction: the limits, what was written and skipped, and which paths are taken. */
class Extraction {
  readonly files: ArchiveFiles['files'] = [];
  readonly skipped: ArchiveFiles['skipped'] = [];
  /** Every file path written and every folder created for one, so that no entry overwrites or nests in a file. */
  private readonly taken = new Map<string, 'file' | 'folder'>();
  private entries = 0;
  private bytes = 0;
  private readonly root: string;
  private readonly limits: ExtractLimits;
  private readonly archiveBytes: number;
  private readonly options: ExtractOptions;

  constructor(root: string, limits: ExtractLimits, archiveBytes: number, options: ExtractOptions) {
    this.root = root;
    this.limits = limits;
    this.archiveBytes = archiveBytes;
    this.options = options;
  }

  get signal(): AbortSignal | undefined {
    return this.options.signal;
  }

  checkEntryCount(count: number): void {
    if (count > this.limits.maxEntries)
      throw new ArchiveError(`the archive has more than ${this.limits.maxEntries} entries`);
  }

  /** Counts an entry (of any kind) and stops between entries when aborted. */
  countEntry(): void {
    this.signal?.throwIfAborted();
    this.checkEntryCount(++this.entries);
  }

  /** The normalized path a file entry is written to, or null after recording why the entry is skipped. */
  target(name: string, type: EntryType): string | null {
    if (type === 'directory') return null; // folders are created for the files in them
    const normalized = normalizeEntryPath(name);
    if ('skip' in normalized) {
      // A refused name is reported as written, cut to the path limit: a TAR name can be megabytes long.
      if (normalized.skip !== 'directory')
        this.skipped.push({ path: name.slice(0, MAX_ARCHIVE_PATH), reason: normalized.skip });
      return null;
    }
    const reason = type === 'file' ? this.claim(normalized.path) : type;
    if (reason === null) return normalized.path;
    this.skipped.push({ path: normalized.path, reason });
    return null;
  }

  /** Takes `path` for a file, or says why it can't be: the first entry of a path wins. */
  private claim(path: string): string | null {
    const held = this.taken.get(path);
    if (held) return held === 'file' ? 'duplicate' : 'a folder of that name exists';
    const folders: string[] = [];
    for (let slash = path.indexOf('/'); slash !== -1; slash = path.indexOf('/', slash + 1))
      folders.push(path.slice(0, slash));
    if (folders.some((folder) => this.taken.get(folder) === 'file')) return 'a file is in the way of its folder';
    for (const folder of folders) this.taken.set(folder, 'folder');
    this.taken.set(path, 'file');
    return null;
  }

  /** Lists a file read in place (ZIP), checking the limits against its declared size. */
  register(path: string, declared: number): void {
    this.bytes += declared;
    this.checkSize(path, declared, this.bytes);
    this.files.push({ path, size: declared });
    this.options.onProgress?.({ entries: this.entries, bytes: this.bytes });
  }

  /** Where an extracted file is on disk. */
  fileOf(path: string): string {
    const file = resolve(this.root, path);
    if (!file.startsWith(this.root + sep)) throw new Error(`entry path escapes the extraction root: ${path}`); // normalizeEntryPath failed
    return file;
  }

  /** Streams an entry of `declared` bytes to `path`, checking the limits first against the declared size, then per chunk. */
  async write(path: string, declared: number, entry: AsyncIterable<Buffer>): Promise<void> {
    this.checkSize(path, declared, this.bytes + declared);
    const file = this.fileOf(path);
    const written = { path, size: 0 };
    await mkdir(dirname(file), { recursive: true });
    // `wx` never follows or replaces an existing file or symlink, whatever was in destDir before.
    await pipeline(entry, (chunks) => this.counted(written, chunks), createWriteStream(file, { flags: 'wx' }), {
      signal: this.signal,
    });
    this.files.push(written);
    this.options.onProgress?.({ entries: this.entries, bytes: this.bytes });
  }

  private async *counted(file: { path: string; size: number }, chunks: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
    for await (const chunk of chunks) {
      file.size += chunk.length;
      this.bytes += chunk.length;
      this.checkSize(file.path, file.size, this.bytes);
      yield chunk;
    }
  }

  /** Throws when an entry of `entryBytes`, bringing the total written to `totalBytes`, is over a limit. */
  private checkSize(path: string, entryBytes: number, totalBytes: number): void {
    const { maxEntryBytes, maxTotalBytes } = this.limits;
    if (entryBytes > maxEntryBytes)
      throw new ArchiveError(`entry "${path}" is larger than ${formatBytes(maxEntryBytes)}`);
    if (totalBytes > maxTotalBytes)
      throw new ArchiveError(`the archive expands to more than ${formatBytes(maxTotalBytes)}`);
    this.checkRatio(totalBytes);
  }

  checkRatio(expandedBytes: number): void {
    const { maxRatio } = this.limits;
    if (expandedBytes > RATIO_EXEMPT_BYTES && expandedBytes > this.archiveBytes * maxRatio) {
      throw new ArchiveError(`expansion ratio above ${maxRatio}:1 (zip bomb?)`);
    }
  }
}

/** A limit as people write it: 512 MiB, 64 GiB, 1000 bytes. */
function formatBytes(bytes: number): string {
  for (const [unit, size] of [
    ['GiB', GiB],
    ['MiB', MiB],
    ['KiB', KiB],
  ] as const) {
    if (bytes >= size && bytes % size === 0) return `${bytes / size} ${unit}`;
  }
  return `${bytes} bytes`;
}
