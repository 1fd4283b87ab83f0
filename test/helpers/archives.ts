import { createHash } from 'node:crypto';
import { constants, crc32, createDeflateRaw, createGzip } from 'node:zlib';
import type { Test } from 'tap';
import tar from 'tar-stream';
import yazl from 'yazl';
import { call } from './server.ts';

/** Where the archive helpers send their requests: a test world, or any control plane by its base URL. */
export interface ApiTarget {
  server: { url: string };
}

/** An archive's files by path, or as a list of entries (which may repeat a path). */
export type ArchiveEntries = Record<string, Buffer | string> | Array<[string, Buffer | string]>;

const entriesOf = (files: ArchiveEntries) =>
  (Array.isArray(files) ? files : Object.entries(files)).map(
    ([path, content]) => [path, Buffer.isBuffer(content) ? content : Buffer.from(content)] as const,
  );

/**
 * A ZIP holding the given files. yazl refuses unsafe names, so `unsafe` maps a safe placeholder name
 * to the hostile name of the same length, patched into the finished archive's headers.
 */
export async function zipOf(files: ArchiveEntries, unsafe: Record<string, string> = {}): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  for (const [path, content] of entriesOf(files)) zip.addBuffer(content, path);
  zip.end();
  let archive = await new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    zip.outputStream.on('data', (chunk: Buffer) => chunks.push(chunk));
    zip.outputStream.on('end', () => resolve(Buffer.concat(chunks)));
    zip.outputStream.on('error', reject);
  });
  for (const [placeholder, hostile] of Object.entries(unsafe)) {
    if (placeholder.length !== hostile.length) throw new Error('a hostile name must be as long as its placeholder');
    archive = Buffer.from(archive.toString('latin1').split(placeholder).join(hostile), 'latin1');
  }
  return archive;
}

/** A TAR (gzipped: a TAR.GZ) holding the given files. */
export async function tarOf(files: ArchiveEntries, gzip: boolean): Promise<Buffer> {
  const pack = tar.pack();
  for (const [name, content] of entriesOf(files)) pack.entry({ name }, content);
  pack.finalize();
  const stream = gzip ? pack.pipe(createGzip()) : pack;
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** A ZIP entry given as it is stored: raw deflate data (method 8) or the bytes themselves (method 0). */
export interface RawZipEntry {
  name: string;
  method: 0 | 8;
  data: Buffer;
  /** Uncompressed size and CRC-32. */
  size: number;
  crc: number;
}

/**
 * A ZIP written field by field from entries already compressed: for entries far too large to compress in a
 * test (see `deflatedZeros`). Sizes under 4 GiB each, no ZIP64.
 */
export function zipOfRaw(entries: RawZipEntry[]): Buffer {
  const parts: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  for (const { name, method, data, size, crc } of entries) {
    const nameBytes = Buffer.from(name);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4); // version needed
    local.writeUInt16LE(method, 8);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(data.length, 18);
    local.writeUInt32LE(size, 22);
    local.writeUInt16LE(nameBytes.length, 26);
    const header = Buffer.alloc(46);
    header.writeUInt32LE(0x02014b50, 0);
    header.writeUInt16LE(20, 4); // made by: MS-DOS (no Unix file type), version 2.0
    header.writeUInt16LE(20, 6);
    header.writeUInt16LE(method, 10);
    header.writeUInt32LE(crc, 16);
    header.writeUInt32LE(data.length, 20);
    header.writeUInt32LE(size, 24);
    header.writeUInt16LE(nameBytes.length, 28);
    header.writeUInt32LE(offset, 42);
    parts.push(local, nameBytes, data);
    central.push(header, nameBytes);
    offset += local.length + nameBytes.length + data.length;
  }
  const directory = Buffer.concat(central);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...parts, directory, end]);
}

/**
 * `mib` MiB of zeros as a raw deflate stream, in milliseconds: zlib compresses one MiB with a sync flush, the
 * block it writes for each further MiB of zeros is the same, so it is repeated instead of computed (deflating
 * gigabytes takes a minute here), then an empty final block ends the stream.
 */
export async function deflatedZeros(mib: number): Promise<Omit<RawZipEntry, 'name'>> {
  const zeros = Buffer.alloc(2 ** 20);
  const deflate = createDeflateRaw();
  const output: Buffer[] = [];
  deflate.on('data', (chunk: Buffer) => output.push(chunk));
  const flushed = async (): Promise<Buffer> => {
    deflate.write(zeros);
    await new Promise<void>((resolve) => deflate.flush(constants.Z_SYNC_FLUSH, () => resolve()));
    return Buffer.concat(output.splice(0));
  };
  const first = await flushed();
  const next = await flushed();
  deflate.destroy();
  let crc = 0;
  for (let i = 0; i < mib; i += 1) crc = crc32(zeros, crc);
  const finalEmptyBlock = Buffer.from([0x03, 0x00]);
  return {
    method: 8,
    data: Buffer.concat([first, ...Array<Buffer>(mib - 1).fill(next), finalEmptyBlock]),
    size: mib * 2 ** 20,
    crc,
  };
}

/** Uploads a file for a dataset through the signed-URL API; returns the session id. */
export async function uploadArchive(
  world: ApiTarget,
  key: string,
  datasetId: string,
  filename: string,
  bytes: Buffer,
): Promise<string> {
  const ticket = await call<{ sessionId: string; uploadUrl: string; headers: Record<string, string> }>(
    world.server,
    'POST',
    '/api/upload/signed-url',
    {
      key,
      body: {
        assetType: 'datasets',
        assetId: datasetId,
        filename,
        contentType: 'application/octet-stream',
        totalBytes: bytes.length,
      },
    },
  );
  if (ticket.status !== 200) throw new Error(`signed-url: ${ticket.status} ${JSON.stringify(ticket.body)}`);
  const put = await fetch(ticket.body.uploadUrl, { method: 'PUT', headers: ticket.body.headers, body: bytes });
  if (put.status !== 200) throw new Error(`upload PUT: ${put.status} ${await put.text()}`);
  const complete = await call(world.server, 'POST', '/api/upload/complete', {
    key,
    body: { sessionId: ticket.body.sessionId, md5: createHash('md5').update(bytes).digest('hex') },
  });
  if (complete.status !== 200) throw new Error(`complete: ${complete.status}`);
  return ticket.body.sessionId;
}

export interface JobView {
  id: string;
  status: string;
  error: string | null;
  progress: { stage: string; percent: number; processed?: number; total?: number } | null;
  result: Record<string, unknown> | null;
}

/** Polls a job until it has ended (or `until` says so), failing the test after `seconds`. */
export async function waitForJob(
  t: Test,
  world: ApiTarget,
  key: string,
  jobId: string,
  options: { seconds?: number; until?: (job: JobView) => boolean } = {},
): Promise<JobView> {
  const deadline = Date.now() + (options.seconds ?? 60) * 1000;
  const until = options.until ?? ((job: JobView) => ['completed', 'failed', 'cancelled'].includes(job.status));
  for (;;) {
    const response = await call<{ job: JobView }>(world.server, 'GET', `/api/jobs/${jobId}`, { key });
    if (response.status !== 200) throw new Error(`job read: ${response.status} ${JSON.stringify(response.body)}`);
    if (until(response.body.job)) return response.body.job;
    if (Date.now() > deadline) {
      t.fail(`job ${jobId} still ${response.body.job.status} after ${options.seconds ?? 60} s`);
      return response.body.job;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Starts an ingest of an uploaded archive and waits for its job. */
export async function ingestArchive(
  t: Test,
  world: ApiTarget,
  key: string,
  owner: string,
  slug: string,
  datasetId: string,
  filename: string,
  bytes: Buffer,
  options: Record<string, unknown> = {},
): Promise<JobView> {
  const sessionId = await uploadArchive(world, key, datasetId, filename, bytes);
  const started = await call<{ jobId: string; status: string }>(
    world.server,
    'POST',
    `/api/datasets/${owner}/${slug}/ingest`,
    { key, body: { sessionId, ...options } },
  );
  if (started.status !== 201) throw new Error(`ingest: ${started.status} ${JSON.stringify(started.body)}`);
  return waitForJob(t, world, key, started.body.jobId);
}
