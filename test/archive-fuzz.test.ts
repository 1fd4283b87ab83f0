// Hostile input for the ingest API of a real control plane running in its own process, as `npm start` runs
// it: the security review's archive of huge zero-filled entries under the expansion ratio, image
// decompression bombs, images too large to hold in memory, and a seeded fuzz of mutated ZIP, TAR, TAR.GZ,
// NDJSON, COCO and YOLO inputs. After every case: the server answers, nothing answered 5xx nor did a job fail
// with an internal error, a failed job left its dataset as it was, and the process's peak RSS (VmHWM from
// /proc) stayed under RSS_BOUND_MB. ARCHIVE_FUZZ_SEED, ARCHIVE_FUZZ_CASES and ARCHIVE_FUZZ_ZERO_MIB (the size
// of each of the four zero-filled entries) change the run.
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32, deflateSync, gzipSync } from 'node:zlib';
import sharp from 'sharp';
import t, { type Test } from 'tap';
import { DatasetRead } from '../control-plane/src/datasets/dataset.schemas.ts';
import { ImageList } from '../control-plane/src/images/image.schemas.ts';
import {
  deflatedZeros,
  tarOf,
  uploadArchive,
  waitForJob,
  zipOf,
  zipOfRaw,
  type ApiTarget,
  type JobView,
  type RawZipEntry,
} from './helpers/archives.ts';
import { createTestDatabase } from './helpers/db.ts';
import { shapeImage } from './helpers/images.ts';
import { startMain } from './helpers/main-process.ts';
import { seededRandom, type SeededRandom } from './helpers/random.ts';
import { call } from './helpers/server.ts';

const MiB = 2 ** 20;
/** The issue's target for the control plane's peak RSS while it ingests all of this. */
const RSS_BOUND_MB = 600;
const SEED = Number(process.env.ARCHIVE_FUZZ_SEED ?? 1409);
const CASES = Number(process.env.ARCHIVE_FUZZ_CASES ?? 36);
const ZERO_ENTRY_MIB = Number(process.env.ARCHIVE_FUZZ_ZERO_MIB ?? 512);

const db = await createTestDatabase();
const dataDir = mkdtempSync(join(tmpdir(), 'vp-fuzz-'));
const main = await startMain(t, {
  DATABASE_URL: db.url,
  DATA_DIR: dataDir,
  PORT: '0',
  LOG_LEVEL: 'warn',
  // As `npm start` and the container image run it (README, Memory).
  MALLOC_ARENA_MAX: '2',
  MALLOC_MMAP_THRESHOLD_: '131072',
  RATE_LIMIT_DEFAULT: '1000000',
  RATE_LIMIT_UPLOAD: '1000000',
  // The NDJSON cases link to this test's own file server on loopback.
  OUTBOUND_ALLOWED_NETWORKS: '127.0.0.1/32',
});
t.teardown(async () => {
  await main.stop();
  rmSync(dataDir, { recursive: true, force: true });
  await db.drop();
});
const target: ApiTarget = { server: { url: main.url } };
// The first start on an empty database wrote the owner key of user `admin`.
const key = readFileSync(join(dataDir, 'initial-api-key'), 'utf8').trim();

/** Peak RSS of the control plane since it started or since `resetPeak` (VmHWM), and now (VmRSS), in MB (10^6 bytes). */
function memory(): { peak: number; now: number } {
  const status = readFileSync(`/proc/${main.child.pid}/status`, 'utf8');
  const mb = (field: string) =>
    Math.round((Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0) * 1024) / 1e6);
  return { peak: mb('VmHWM'), now: mb('VmRSS') };
}

let overallPeak = 0;
/** Starts a new peak (Linux resets VmHWM to the current RSS), so each test is held to the bound on its own. */
function resetPeak(): void {
  overallPeak = Math.max(overallPeak, memory().peak);
  writeFileSync(`/proc/${main.child.pid}/clear_refs`, '5');
}

/** Any API call; a 5xx fails the test at once. */
async function api<T = Record<string, unknown>>(method: string, path: string, body?: unknown) {
  const response = await call<T>(target.server, method, path, { key, body });
  if (response.status >= 500) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(response.body)}`);
  return response;
}

async function createDataset(slug: string): Promise<string> {
  const created = await api<{ id: string }>('POST', '/api/datasets', { dataset: slug, name: slug });
  if (created.status !== 201) throw new Error(`create ${slug}: ${created.status}`);
  return created.body.id;
}

/** What a failed ingest must leave alone: counters, classes, and every image with its split and labels. */
async function snapshot(slug: string) {
  const { dataset } = DatasetRead.parse((await api('GET', `/api/datasets/admin/${slug}`)).body);
  const listing = ImageList.parse(
    (await api('GET', `/api/datasets/admin/${slug}/images?limit=1000&includeLabels=true&includeThumbnails=false`)).body,
  );
  const images = listing.images
    .map(({ id, hash, name, split, labels, error }) => ({ id, hash, name, split, labels, error }))
    .sort((a, b) => (a.id < b.id ? -1 : 1));
  const { task, classNames, imageCount, annotationCount, splits, errorCount } = dataset;
  return { task, classNames, imageCount, annotationCount, splits, errorCount, images };
}

let cases = 0;

/**
 * Ingests `bytes` as `filename` into dataset `slug` and checks what must hold whatever the input: the job
 * ends (completed, or failed with a message for the user), a failure changes nothing, the server answers,
 * and the peak RSS is under the bound.
 */
async function ingestCase(t: Test, slug: string, filename: string, bytes: Buffer, seconds = 60): Promise<JobView> {
  cases += 1;
  const before = await snapshot(slug);
  const sessionId = await uploadArchive(target, key, datasetIds[slug], filename, bytes);
  const started = await api<{ jobId: string }>('POST', `/api/datasets/admin/${slug}/ingest`, { sessionId });
  t.equal(started.status, 201, `${filename}: ingest accepted`);
  const job = await waitForJob(t, target, key, started.body.jobId, { seconds });
  t.ok(
    job.status === 'completed' || job.status === 'failed',
    `${filename}: the job ended (${job.status}${job.error ? `: ${job.error.slice(0, 200)}` : ''})`,
  );
  t.notMatch(job.error ?? '', /internal error/, `${filename}: no internal error`);
  const after = await snapshot(slug);
  if (job.status === 'failed') t.same(after, before, `${filename}: the failed job left the dataset as it was`);
  else {
    const { train, val, test } = after.splits;
    t.same(
      [after.imageCount, after.errorCount, train + val + test],
      [after.images.length, after.images.filter((image) => image.error).length, after.images.length],
      `${filename}: the counters match the images`,
    );
  }
  t.equal((await api('GET', '/api/health')).status, 200, `${filename}: the server answers`);
  const { peak } = memory();
  t.ok(peak < RSS_BOUND_MB, `${filename}: peak RSS ${peak} MB < ${RSS_BOUND_MB} MB`);
  return job;
}

/** A PNG that declares `width`×`height` px and holds almost no pixel data: only its header is read. */
function pngHeaderOnly(width: number, height: number): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([length, body, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8); // 8-bit RGB, no interlace
  return Buffer.concat([
    Buffer.from('\x89PNG\r\n\x1a\n', 'latin1'),
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(Buffer.alloc(64 * 1024))),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

t.comment(`control plane started: RSS ${memory().now} MB`);
t.beforeEach(resetPeak);
const datasetIds: Record<string, string> = {};
for (const slug of ['finding', 'bombs', 'large', 'fuzz-yolo', 'fuzz-coco', 'fuzz-ndjson'])
  datasetIds[slug] = await createDataset(slug);

t.test(
  `the review's finding: ${ZERO_ENTRY_MIB} MiB zero-filled entries under the 200:1 ratio are neither held in memory nor kept`,
  async (t) => {
    const zeros = await deflatedZeros(ZERO_ENTRY_MIB);
    const blobs: RawZipEntry[] = [0, 1, 2, 3].map((i) => ({ ...zeros, name: `images/blob${i}.png` }));
    const ok = await shapeImage();
    // Incompressible padding keeps the archive above 1/190 of what it expands to.
    const padding = seededRandom(SEED).bytes(Math.ceil((4 * zeros.size) / 190));
    const stored = (name: string, data: Buffer): RawZipEntry => ({
      name,
      method: 0,
      data,
      size: data.length,
      crc: crc32(data),
    });
    const zip = zipOfRaw([...blobs, stored('images/ok.png', ok.bytes), stored('padding.bin', padding)]);
    const expanded = 4 * zeros.size + ok.bytes.length + padding.length;
    t.ok(expanded / zip.length < 200, `expansion ratio ${(expanded / zip.length).toFixed(0)}:1, under the limit`);
    const storedBefore =
      (await api<{ byKind: Record<string, number> }>('GET', '/api/storage')).body.byKind.datasetImages ?? 0;

    const job = await ingestCase(t, 'finding', 'zeros.zip', zip, 300);
    t.match(job, { status: 'completed', result: { imagesAdded: 1 } });
    const undecodable = Object.entries(job.result!.skippedReasons as Record<string, number>).filter(([reason]) =>
      reason.startsWith('undecodable and larger than 4 MiB'),
    );
    t.equal(
      undecodable.reduce((sum, [, count]) => sum + count, 0),
      4,
      'the four blobs are skipped as undecodable junk',
    );
    const storedAfter =
      (await api<{ byKind: Record<string, number> }>('GET', '/api/storage')).body.byKind.datasetImages ?? 0;
    t.ok(storedAfter - storedBefore < MiB, `only the real image was stored (${storedAfter - storedBefore} bytes)`);
    t.match(await snapshot('finding'), { imageCount: 1, errorCount: 0 });
  },
);

t.test('image decompression bombs are refused from their header, never decoded; the ingest goes on', async (t) => {
  const solid = (width: number, height: number) =>
    sharp({ create: { width, height, channels: 3, background: '#336699' } });
  const bombs: Record<string, Buffer> = {
    // Each file is tiny; decoded, each would take hundreds of MB to GBs.
    'images/avif-8000.avif': await solid(8000, 8000).avif({ effort: 0 }).toBuffer(),
    'images/progressive-8000.jpg': await solid(8000, 8000).jpeg({ progressive: true }).toBuffer(),
    'images/wide-16bit.png': await sharp({
      create: { width: 4_000_000, height: 1, channels: 4, background: '#336699' },
    })
      .png()
      .toColourspace('rgb16')
      .toBuffer(),
    // Over libvips' own pixel limit, which refuses it first.
    'images/declared-50000.png': pngHeaderOnly(50_000, 50_000),
  };
  const ok = await shapeImage();
  const job = await ingestCase(t, 'bombs', 'bombs.zip', await zipOf({ ...bombs, 'images/ok.png': ok.bytes }));
  t.match(job, { status: 'completed', result: { imagesAdded: 5, imagesWithErrors: 4 } });
  const { images } = await snapshot('bombs');
  for (const name of Object.keys(bombs).map((path) => path.split('/').pop())) {
    t.match(
      images.find((image) => image.name === name),
      { error: /would take about \d+ MiB to decode, more than 256 MiB|too many pixels \(more than 268 million\)/ },
      `${name}: not decoded, kept with the reason`,
    );
  }
  t.match(
    images.find((image) => image.name === 'ok.png'),
    { error: null },
  );
});

t.test('images over the in-memory size are decoded and stored from disk, byte for byte (ZIP and TAR)', async (t) => {
  const noise = await sharp({
    create: {
      width: 2600,
      height: 2600,
      channels: 3,
      background: '#000',
      noise: { type: 'gaussian', mean: 128, sigma: 60 },
    },
  })
    .png({ compressionLevel: 1 })
    .toBuffer();
  t.ok(noise.length > 16 * MiB, `the photo is ${(noise.length / MiB).toFixed(1)} MiB`);
  for (const [filename, archive] of [
    ['large.zip', await zipOf({ 'photos/large.png': noise })],
    ['large.tar', await tarOf({ 'photos/large.png': noise }, false)],
  ] as const) {
    const job = await ingestCase(t, 'large', filename, archive);
    t.match(job, { status: 'completed', result: { imagesWithErrors: 0 } }, filename);
  }
  const { images } = await snapshot('large');
  t.equal(images.length, 1, 'the same file twice is one image');
  t.match(images[0], { name: 'large.png', hash: sha256(noise), error: null });
  const read = await api<{ properties: Record<string, unknown>; imageUrl: string }>(
    'GET',
    `/api/images/${images[0].id}`,
  );
  t.match(read.body.properties, { width: 2600, height: 2600, bytes: noise.length });
  const download = Buffer.from(await (await fetch(read.body.imageUrl)).arrayBuffer());
  t.equal(sha256(download), sha256(noise), 'the stored file is the archive entry, byte for byte');
});

// ---- The seeded fuzz ----

const pictures = await Promise.all(
  [0, 1, 2, 3, 4, 5].map((i) =>
    shapeImage({ width: 48 + i, height: 40, box: [4 + i, 6, 20, 14], format: i % 2 ? 'jpeg' : 'png' }),
  ),
);
const pictureName = (i: number) => `p${i}.${i % 2 ? 'jpg' : 'png'}`;
const splitOf = (i: number) => (i % 3 === 2 ? 'val' : 'train');
const yoloLine = (classId: number, bbox: number[]) => `${classId} ${bbox.map((v) => v.toFixed(6)).join(' ')}\n`;
type Entries = Array<[string, Buffer | string]>;

/** A YOLO detect dataset: data.yaml, images/<split>/, labels/<split>/. */
function yoloEntries(): Entries {
  const entries: Entries = [['data.yaml', 'names:\n  - square\n  - circle\n']];
  pictures.forEach((picture, i) => {
    entries.push([`images/${splitOf(i)}/${pictureName(i)}`, picture.bytes]);
    entries.push([`labels/${splitOf(i)}/p${i}.txt`, yoloLine(i % 2, picture.bbox)]);
  });
  return entries;
}

/** A COCO detect dataset: annotations/instances_<split>.json and the images in <split>/. */
function cocoEntries(): Entries {
  const entries: Entries = [];
  for (const split of ['train', 'val']) {
    const mine = pictures.map((picture, i) => ({ picture, i })).filter(({ i }) => splitOf(i) === split);
    const doc = {
      images: mine.map(({ i }) => ({ id: i, file_name: pictureName(i), width: 48 + i, height: 40 })),
      annotations: mine.map(({ i }) => ({
        id: 100 + i,
        image_id: i,
        category_id: 1 + (i % 2),
        bbox: [4 + i, 6, 20, 14],
        iscrowd: 0,
      })),
      categories: [
        { id: 1, name: 'square' },
        { id: 2, name: 'circle' },
      ],
    };
    entries.push([`annotations/instances_${split}.json`, JSON.stringify(doc)]);
    for (const { i, picture } of mine) entries.push([`${split}/${pictureName(i)}`, picture.bytes]);
  }
  return entries;
}

// What the NDJSON records link to: the pictures, junk, a zero-filled file, a missing one.
const junk = seededRandom(SEED + 1).bytes(64 * 1024);
const files = createServer((req, res) => {
  const picture = /^\/img\/(\d)\.(png|jpg)$/.exec(req.url ?? '');
  const body = picture
    ? pictures[Number(picture[1])]?.bytes
    : req.url === '/junk'
      ? junk
      : req.url === '/zeros'
        ? Buffer.alloc(8 * MiB)
        : undefined;
  res.writeHead(body ? 200 : 404).end(body);
});
await new Promise<void>((resolve) => files.listen(0, '127.0.0.1', resolve));
t.teardown(() => new Promise<void>((resolve) => files.close(() => resolve())));
const filesUrl = `http://127.0.0.1:${(files.address() as AddressInfo).port}`;

function ndjsonLines(): string[] {
  const header = JSON.stringify({ type: 'dataset', task: 'detect', class_names: { 0: 'square', 1: 'circle' } });
  const records = pictures.map((picture, i) =>
    JSON.stringify({
      type: 'image',
      file: pictureName(i),
      url: `${filesUrl}/img/${pictureName(i).replace('p', '')}`,
      width: 48 + i,
      height: 40,
      split: splitOf(i),
      annotations: { boxes: [[i % 2, ...picture.bbox]] },
    }),
  );
  return [header, ...records];
}

const JUNK_LABEL_LINES = [
  '0 nan 0.5 0.5 0.5',
  '99999999999999999999 0.1 0.1 0.1 0.1',
  '-1 0.5 0.5 0.2 0.2',
  '0 1e309 0.5 0.1 0.1',
  '0 0.5',
  `0 ${'0.5 '.repeat(5000)}`,
  '\u0000\u00ff\ufffd',
  'x y z',
  '1 0.5 0.5 0.2 0.2 0.1 0.1 0.3',
  '',
];
const JUNK_YAML = [
  'names: 5\n',
  'names: [\n',
  'a: &a [*a]\n',
  `names: [${'x, '.repeat(30_000)}y]\n`,
  'names: {-1: a, 1e9: b}\n',
  'kpt_shape: [1000000000, 3]\nnames: [a]\n',
  'task: pose\nnames: [a]\n',
  '\u0000\u00ff',
];
const JUNK_JSON_VALUES: unknown[] = [
  null,
  'x',
  -1,
  1e308,
  [],
  {},
  [[[[[[]]]]]],
  Array.from({ length: 5000 }, (_, i) => i),
  { counts: 'x', size: [1, 1] },
  true,
];

type EntryMutation = (entries: Entries, rng: SeededRandom) => void;

/** Mutations of the files inside an archive. */
const ENTRY_MUTATIONS: Record<string, EntryMutation> = {
  'garbage entries': (entries, rng) => {
    for (let n = 1 + rng.int(3); n > 0; n -= 1)
      entries.push([
        rng
          .pick(['images/train/g.png', 'labels/train/g.txt', 'x/y.json', 'data.yaml', 'train/g.jpg'])
          .replace('g', `g${n}`),
        rng.bytes(1 + rng.int(64 * 1024)),
      ]);
  },
  'duplicate entries': (entries, rng) => {
    const [name] = rng.pick(entries);
    entries.push([name, rng.pick([rng.bytes(1 + rng.int(4096)), pictures[rng.int(6)].bytes])]);
  },
  'deep path': (entries, rng) => {
    entries.push([`${'d/'.repeat(100 + rng.int(500))}deep.png`, pictures[rng.int(6)].bytes]);
  },
  'bad labels': (entries, rng) => {
    for (const entry of entries)
      if (entry[0].endsWith('.txt'))
        entry[1] = Array.from({ length: 1 + rng.int(4) }, () => rng.pick(JUNK_LABEL_LINES)).join('\n');
  },
  'bad yaml': (entries, rng) => {
    const yaml = entries.find(([name]) => name === 'data.yaml');
    if (yaml) yaml[1] = rng.pick(JUNK_YAML);
    else entries.push(['data.yaml', rng.pick(JUNK_YAML)]);
  },
  'wrong json': (entries, rng) => {
    const entry = entries.find(([name]) => name.endsWith('.json'));
    if (!entry)
      return void entries.push([
        'annotations/instances_train.json',
        rng.pick(['{', '[]', '{"images": 5}', '{"images": [], "annotations": [], "categories": [{"id": "x"}]}']),
      ]);
    const text = String(entry[1]);
    if (rng.int(3) === 0) return void (entry[1] = text.slice(0, rng.int(text.length)));
    const doc = JSON.parse(text) as Record<string, unknown>;
    const field = rng.pick(['images', 'annotations', 'categories'] as const);
    // The archive's own COCO file: each of these three is a list of objects.
    const list = doc[field] as Array<Record<string, unknown>>;
    const value = rng.pick(JUNK_JSON_VALUES);
    if (rng.int(2) === 0 || list.length === 0) doc[field] = value;
    else
      list[rng.int(list.length)][
        rng.pick(['id', 'image_id', 'file_name', 'bbox', 'category_id', 'segmentation', 'keypoints', 'width', 'name'])
      ] = value;
    entry[1] = JSON.stringify(doc);
  },
  'broken images': (entries, rng) => {
    for (const entry of entries) {
      if (!/\.(png|jpg)$/.test(entry[0]) || rng.int(2)) continue;
      const bytes = Buffer.from(entry[1] as Buffer);
      entry[1] = rng.int(2) ? bytes.subarray(0, rng.int(bytes.length)) : flipBits(bytes, rng, 1 + rng.int(8));
    }
  },
  'header-only huge image': (entries, rng) => {
    entries.push([
      `images/train/huge${rng.int(100)}.png`,
      pngHeaderOnly(20_000 + rng.int(60_000), 20_000 + rng.int(60_000)),
    ]);
  },
  'zero-filled large entry under the ratio': (entries, rng) => {
    const size = (17 + rng.int(24)) * MiB;
    entries.push(
      [`images/train/zeros${rng.int(100)}.png`, Buffer.alloc(size)],
      ['padding.bin', rng.bytes(Math.ceil(size / 150))],
    );
  },
};

function flipBits(bytes: Buffer, rng: SeededRandom, count: number): Buffer {
  const flipped = Buffer.from(bytes);
  for (let n = 0; n < count && flipped.length > 0; n += 1) flipped[rng.int(flipped.length)] ^= 1 << rng.int(8);
  return flipped;
}

/** Raises the size a ZIP's central directory (or a TAR header, checksum fixed) declares for one entry. */
function hugeDeclaredSize(archive: Buffer, kind: 'zip' | 'tar', rng: SeededRandom): Buffer {
  const patched = Buffer.from(archive);
  if (kind === 'zip') {
    const headers: number[] = [];
    for (let at = patched.indexOf('PK\x01\x02'); at !== -1; at = patched.indexOf('PK\x01\x02', at + 1))
      headers.push(at);
    if (headers.length)
      patched.writeUInt32LE(
        rng.pick([0xffffffff, 0x7fffffff, 600 * MiB, 1 + rng.int(1 << 30)]),
        rng.pick(headers) + 24,
      );
    return patched;
  }
  const headers: number[] = [];
  for (let at = 0; at + 512 <= patched.length; at += 512)
    if (patched.toString('latin1', at + 257, at + 262) === 'ustar') headers.push(at);
  if (!headers.length) return patched;
  const at = rng.pick(headers);
  patched.write(
    `${rng.pick(['77777777777', '00004000000', (1 + rng.int(1 << 30)).toString(8).padStart(11, '0')])}\0`,
    at + 124,
    'latin1',
  );
  patched.fill(' ', at + 148, at + 156);
  let sum = 0;
  for (let i = at; i < at + 512; i += 1) sum += patched[i];
  patched.write(`${sum.toString(8).padStart(6, '0')}\0 `, at + 148, 'latin1');
  return patched;
}

type ByteMutation = (archive: Buffer, rng: SeededRandom) => Buffer;
const BYTE_MUTATIONS: Record<string, ByteMutation> = {
  'bit flips': (archive, rng) => flipBits(archive, rng, 1 + rng.int(32)),
  truncation: (archive, rng) => archive.subarray(0, rng.int(archive.length)),
  'garbage appended': (archive, rng) => Buffer.concat([archive, rng.bytes(1 + rng.int(4096))]),
  'garbage prepended': (archive, rng) => Buffer.concat([rng.bytes(1 + rng.int(512)), archive]),
};

/** Mutations of an NDJSON file, line by line or as bytes. */
const NDJSON_MUTATIONS: Record<string, (lines: string[], rng: SeededRandom) => string[]> = {
  'bad records': (lines, rng) => {
    const bad = [
      '{"type":"image","file":"nourl.png","split":"train"}',
      `{"type":"image","file":"gone.png","split":"train","url":"${filesUrl}/missing"}`,
      `{"type":"image","file":"junk.png","split":"val","url":"${filesUrl}/junk"}`,
      `{"type":"image","file":"zeros.png","split":"val","url":"${filesUrl}/zeros"}`,
      `{"type":"image","file":"../../etc/passwd","split":"train","url":"${filesUrl}/img/0.png"}`,
      `{"type":"image","file":"b.png","split":"train","url":"${filesUrl}/img/2.png","annotations":{"boxes":"x"}}`,
      `{"type":"image","file":"c.png","split":"train","url":"${filesUrl}/img/4.png","annotations":{"boxes":[[0,"a",1,2,3]]}}`,
      `{"type":"image","file":"d.png","split":"test","url":"${filesUrl}/img/0.png","annotations":{"boxes":[[1e308,0.5,0.5,0.1,0.1],[-1,0.5,0.5,0.1,0.1]]}}`,
      `{"type":"image","file":"e.png","split":"train","url":"${filesUrl}/img/2.png","annotations":{"boxes":${JSON.stringify(Array.from({ length: 10_000 }, () => [0, 0.5, 0.5, 0.1, 0.1]))}}}`,
      `{"type":"image","file":"f.png","split":"train","url":"not a url"}`,
      `{"type":"image","file":"g.png","split":"nowhere","url":"${filesUrl}/img/0.png"}`,
      `{"type":"image","file":"h.png","split":"train","url":"${filesUrl}/img/0.png","metadata":${JSON.stringify({ note: 'x'.repeat(600_000) })}}`,
      '{"type":"dataset","task":"detect"}',
      '[1,2,3]',
      '{"type":"image"',
      'x'.repeat(1 + rng.int(2 * MiB)),
    ];
    const out = [...lines];
    for (let n = 1 + rng.int(4); n > 0; n -= 1) out.splice(rng.int(out.length + 1), rng.int(2), rng.pick(bad));
    return out;
  },
  'bad header': (lines, rng) => [
    JSON.stringify({
      type: 'dataset',
      task: rng.pick(['detect', 'pose', 'nonsense', 5]),
      class_names: rng.pick([5, { a: 'b' }, Array.from({ length: 30_000 }, (_, i) => `c${i}`), null, { '-1': 'x' }]),
      kpt_shape: rng.pick([undefined, [1e9, 3], 'x']),
    }),
    ...lines.slice(1),
  ],
  'duplicated lines': (lines, rng) => [...lines, ...lines.slice(1, 1 + rng.int(lines.length))],
};

/** One fuzz case: which dataset, the file name, its bytes, and what was done to it. */
function fuzzCase(index: number): { slug: string; filename: string; bytes: Promise<Buffer>; what: string } {
  const rng = seededRandom(SEED * 1000 + index);
  const format = rng.pick(['yolo', 'coco', 'ndjson'] as const);
  if (format === 'ndjson') {
    const name = rng.pick(Object.keys(NDJSON_MUTATIONS));
    let text: Buffer = Buffer.from(NDJSON_MUTATIONS[name](ndjsonLines(), rng).join('\n'));
    const bytes = rng.pick([null, 'bit flips', 'truncation'] as const);
    if (bytes) text = BYTE_MUTATIONS[bytes](text, rng);
    return {
      slug: 'fuzz-ndjson',
      filename: `case${index}.ndjson`,
      bytes: Promise.resolve(text),
      what: [name, bytes].filter(Boolean).join(' + '),
    };
  }
  const kind = rng.pick(['zip', 'tar', 'tgz'] as const);
  const entries = format === 'yolo' ? yoloEntries() : cocoEntries();
  const entryMutation = rng.pick([...Object.keys(ENTRY_MUTATIONS), null, null]);
  if (entryMutation) ENTRY_MUTATIONS[entryMutation](entries, rng);
  const byteMutation = rng.pick([...Object.keys(BYTE_MUTATIONS), 'huge declared size', null, null]);
  const bytes = (async () => {
    let archive = kind === 'zip' ? await zipOf(entries) : await tarOf(entries, false);
    if (byteMutation === 'huge declared size') archive = hugeDeclaredSize(archive, kind === 'zip' ? 'zip' : 'tar', rng);
    if (kind === 'tgz') archive = gzipSync(archive);
    if (byteMutation && byteMutation !== 'huge declared size') archive = BYTE_MUTATIONS[byteMutation](archive, rng);
    return archive;
  })();
  const filename = `case${index}.${kind === 'tgz' ? 'tar.gz' : kind}`;
  return {
    slug: `fuzz-${format}`,
    filename,
    bytes,
    what: [format, entryMutation, byteMutation].filter(Boolean).join(' + '),
  };
}

t.test(`seeded fuzz (seed ${SEED}): ${CASES} mutated ZIP, TAR, TAR.GZ, NDJSON, COCO and YOLO inputs`, async (t) => {
  const outcomes: Record<string, number> = {};
  for (let index = 0; index < CASES; index += 1) {
    const fuzz = fuzzCase(index);
    const job = await ingestCase(t, fuzz.slug, fuzz.filename, await fuzz.bytes);
    t.comment(
      `case ${index} ${fuzz.filename} (${fuzz.what}): ${job.status}${job.error ? `: ${job.error.slice(0, 120)}` : ''}`,
    );
    outcomes[job.status] = (outcomes[job.status] ?? 0) + 1;
  }
  t.comment(`outcomes: ${JSON.stringify(outcomes)}`);
});

t.test('summary', async (t) => {
  t.comment(
    `archive fuzz: ${cases} ingests, control plane peak RSS ${overallPeak} MB (now ${memory().now} MB), bound ${RSS_BOUND_MB} MB`,
  );
  t.ok(overallPeak < RSS_BOUND_MB);
});
