// Roboflow on an appliance without internet: its preview and import endpoints answer that they cannot work here and
// what to do instead, and Roboflow's export archives (YOLO and COCO layouts, built here) go through the normal upload
// and ingest: `valid` is the val split, the COCO project placeholder category is no class, and a data.yaml pointing
// outside the archive reads nothing there.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import t, { type Test } from 'tap';
import { createLogger } from '../control-plane/src/server.ts';
import { adminQuery } from './helpers/db.ts';
import { ingestArchive, zipOf } from './helpers/archives.ts';
import { checkDatasetInvariants } from './helpers/dataset-invariants.ts';
import { expectError } from './helpers/expect.ts';
import { shapeImage } from './helpers/images.ts';
import { call } from './helpers/server.ts';
import { createDataset, startWorld } from './helpers/world.ts';

/** Every line the control plane logged, at every level. */
const logged: string[] = [];
const log = createLogger(
  { logLevel: 'trace' },
  new Writable({ write: (chunk, _encoding, done) => (logged.push(String(chunk)), done()) }),
);
const world = await startWorld(t, { RATE_LIMIT_MUTATION: '1000000' }, { log });
const CLASSES = ['circle', 'square'];
const PROJECT = 'shapes-x7k2p';

interface Box {
  classId: number;
  /** Pixels, as COCO writes them: left, top, width, height. */
  pixels: [number, number, number, number];
  /** Normalized, as YOLO writes them: x centre, y centre, width, height. */
  bbox: [number, number, number, number];
}
interface Drawn {
  /** Roboflow's file name: the original's, a hash and the format. */
  name: string;
  /** Roboflow's folder, and the split it stands for. */
  folder: 'train' | 'valid' | 'test';
  split: 'train' | 'val' | 'test';
  bytes: Buffer;
  boxes: Box[];
}

const WIDTH = 80;
const HEIGHT = 60;

/** Six JPEGs: three train, two valid (one a background without labels), one test; the first has two boxes. */
async function drawExport(): Promise<Drawn[]> {
  const folders = ['train', 'train', 'train', 'valid', 'valid', 'test'] as const;
  const drawn: Drawn[] = [];
  for (const [index, folder] of folders.entries()) {
    const pixels: [number, number, number, number] = [6 + 3 * index, 8 + index, 20, 16];
    const image = await shapeImage({ width: WIDTH, height: HEIGHT, box: pixels, format: 'jpeg' });
    const boxes: Box[] = index === 4 ? [] : [{ classId: index % 2, pixels, bbox: image.bbox }];
    if (index === 0)
      boxes.push({ classId: 1, pixels: [40, 30, 32, 24], bbox: [56 / WIDTH, 42 / HEIGHT, 32 / WIDTH, 24 / HEIGHT] });
    drawn.push({
      name: `shot${index}_jpg.rf.${(index * 7919).toString(16).padStart(8, '0')}.jpg`,
      folder,
      split: folder === 'valid' ? 'val' : folder,
      bytes: image.bytes,
      boxes,
    });
  }
  return drawn;
}

const README = {
  'README.dataset.txt': `# ${PROJECT} > 2024-05-01\nhttps://universe.roboflow.com/acme/${PROJECT}\n`,
  'README.roboflow.txt': 'This dataset was exported via roboflow.com\n',
};

/** Roboflow's "YOLOv8" export: data.yaml with ../ split entries, <folder>/images and <folder>/labels. */
function yoloExport(drawn: Drawn[], dataYaml?: string): Record<string, Buffer | string> {
  const files: Record<string, Buffer | string> = {
    ...README,
    'data.yaml':
      dataYaml ??
      `train: ../train/images\nval: ../valid/images\ntest: ../test/images\n\nnc: 2\nnames: ['circle', 'square']\n\n` +
        `roboflow:\n  workspace: acme\n  project: ${PROJECT}\n  version: 3\n  license: CC BY 4.0\n  url: https://universe.roboflow.com/acme/${PROJECT}/dataset/3\n`,
  };
  for (const image of drawn) {
    files[`${image.folder}/images/${image.name}`] = image.bytes;
    files[`${image.folder}/labels/${image.name.replace(/\.jpg$/, '.txt')}`] = image.boxes
      .map((box) => `${box.classId} ${box.bbox.map((value) => value.toFixed(6)).join(' ')}\n`)
      .join('');
  }
  return files;
}

/**
 * Roboflow's "COCO" export: each folder holds its images and an _annotations.coco.json whose category 0 is the
 * project (no annotation uses it) and whose real classes, ids 1..n, have it as their supercategory.
 */
function cocoExport(drawn: Drawn[]): Record<string, Buffer | string> {
  const files: Record<string, Buffer | string> = { ...README };
  const categories = [
    { id: 0, name: PROJECT, supercategory: 'none' },
    ...CLASSES.map((name, index) => ({ id: index + 1, name, supercategory: PROJECT })),
  ];
  for (const folder of ['train', 'valid', 'test'] as const) {
    const here = drawn.filter((image) => image.folder === folder);
    const images = here.map((image, id) => ({
      id,
      license: 1,
      file_name: image.name,
      height: HEIGHT,
      width: WIDTH,
      date_captured: '2024-05-01T10:00:00+00:00',
    }));
    const annotations = here.flatMap((image, imageId) =>
      image.boxes.map((box) => ({
        image_id: imageId,
        category_id: box.classId + 1,
        bbox: box.pixels,
        area: box.pixels[2] * box.pixels[3],
        segmentation: [],
        iscrowd: 0,
      })),
    );
    const json = {
      info: { year: '2024', version: '3', description: 'Exported from roboflow.com' },
      licenses: [{ id: 1, url: 'https://creativecommons.org/licenses/by/4.0/', name: 'CC BY 4.0' }],
      categories,
      images,
      annotations: annotations.map((annotation, id) => ({ id, ...annotation })),
    };
    files[`${folder}/_annotations.coco.json`] = JSON.stringify(json);
    for (const image of here) files[`${folder}/${image.name}`] = image.bytes;
  }
  return files;
}

interface Listed {
  name: string;
  split: string;
  labels: Array<{ classId: number; bbox: number[] }>;
  error: string | null;
}

async function listImages(slug: string): Promise<Map<string, Listed>> {
  const listing = await call<{ images: Listed[] }>(
    world.server,
    'GET',
    `/api/datasets/alice/${slug}/images?limit=1000&includeLabels=true&sort=name-asc`,
    { key: world.alice },
  );
  return new Map(listing.body.images.map((image) => [image.name, image]));
}

/** Every drawn image is in the dataset, in its split, with exactly its boxes (to the stored precision). */
async function expectImported(t: Test, slug: string, datasetId: string, drawn: Drawn[]): Promise<void> {
  const dataset = (
    await call<{ dataset: Record<string, unknown> }>(world.server, 'GET', `/api/datasets/alice/${slug}`, {
      key: world.alice,
    })
  ).body.dataset;
  t.match(dataset, { classNames: CLASSES, imageCount: 6, annotationCount: 6, splits: { train: 3, val: 2, test: 1 } });
  const images = await listImages(slug);
  t.strictSame(
    [...images.keys()].sort(),
    drawn.map((image) => image.name).sort(),
    'every image of the export, nothing else',
  );
  for (const image of drawn) {
    const listed = images.get(image.name)!;
    t.equal(listed.split, image.split, `${image.name}: ${image.folder} is ${image.split}`);
    t.equal(listed.error, null);
    t.equal(listed.labels.length, image.boxes.length, `${image.name}: its boxes`);
    for (const [index, box] of image.boxes.entries()) {
      const label = listed.labels[index];
      t.equal(label?.classId, box.classId, `${image.name}: class ${CLASSES[box.classId]}`);
      t.ok(
        label?.bbox.every((value, at) => Math.abs(value - box.bbox[at]) < 1e-5),
        `${image.name}: box ${label?.bbox.join(',')} is ${box.bbox.join(',')}`,
      );
    }
  }
  await checkDatasetInvariants(t, world.server, datasetId);
}

t.test(
  'a Roboflow YOLO export: valid is val, class names from data.yaml, exact boxes; its READMEs are no labels',
  async (t) => {
    const drawn = await drawExport();
    const datasetId = await createDataset(world, world.alice, { dataset: 'rf-yolo', name: 'Roboflow YOLO' });
    const job = await ingestArchive(
      t,
      world,
      world.alice,
      'alice',
      'rf-yolo',
      datasetId,
      `${PROJECT}.v3i.yolov8.zip`,
      await zipOf(yoloExport(drawn)),
    );
    t.equal(job.status, 'completed', String(job.error));
    t.match(job.result, {
      format: 'yolo',
      task: 'detect',
      imagesAdded: 6,
      labelErrors: 0,
      classesAdded: CLASSES,
      entriesSkipped: 2,
    });
    t.strictSame(
      job.result?.skippedReasons,
      { 'not an image, nor a label or metadata file of this format': 2 },
      'the READMEs are not called label files',
    );
    await expectImported(t, 'rf-yolo', datasetId, drawn);
  },
);

t.test(
  'a Roboflow COCO export: one _annotations.coco.json per folder; the project placeholder category is no class',
  async (t) => {
    const drawn = await drawExport();
    const datasetId = await createDataset(world, world.alice, { dataset: 'rf-coco', name: 'Roboflow COCO' });
    const job = await ingestArchive(
      t,
      world,
      world.alice,
      'alice',
      'rf-coco',
      datasetId,
      `${PROJECT}.v3i.coco.zip`,
      await zipOf(cocoExport(drawn)),
    );
    t.equal(job.status, 'completed', String(job.error));
    t.match(job.result, { format: 'coco', task: 'detect', imagesAdded: 6, labelErrors: 0, classesAdded: CLASSES });
    await expectImported(t, 'rf-coco', datasetId, drawn);
  },
);

t.test(
  'a COCO category that groups others is still a class when annotations use it; one that is its own supercategory too',
  async (t) => {
    const [image] = await drawExport();
    const categories = [
      { id: 1, name: 'vehicle', supercategory: 'none' },
      { id: 2, name: 'car', supercategory: 'vehicle' },
      { id: 3, name: 'truck', supercategory: 'truck' },
    ];
    const json = {
      categories,
      images: [{ id: 1, file_name: image.name, width: WIDTH, height: HEIGHT }],
      annotations: [{ id: 1, image_id: 1, category_id: 1, bbox: image.boxes[0].pixels }],
    };
    const datasetId = await createDataset(world, world.alice, { dataset: 'grouped', name: 'Grouped' });
    const job = await ingestArchive(
      t,
      world,
      world.alice,
      'alice',
      'grouped',
      datasetId,
      'grouped.zip',
      await zipOf({ 'train/_annotations.coco.json': JSON.stringify(json), [`train/${image.name}`]: image.bytes }),
    );
    t.equal(job.status, 'completed', String(job.error));
    t.match(job.result, { classesAdded: ['vehicle', 'car', 'truck'] });
    t.match((await listImages('grouped')).get(image.name), { split: 'train', labels: [{ classId: 0 }] });
  },
);

t.test(
  'a data.yaml whose split entries point outside the archive reads nothing there and is no server error',
  async (t) => {
    // A real image outside the archive, named absolutely and by ../ from the yaml.
    const outside = await mkdtemp(join(tmpdir(), 'roboflow-outside-'));
    t.teardown(() => rm(outside, { recursive: true, force: true }));
    const bait = await shapeImage({ format: 'jpeg' });
    await writeFile(join(outside, 'bait.jpg'), bait.bytes);
    await writeFile(join(outside, 'bait.txt'), '0 0.5 0.5 0.1 0.1\n');
    const drawn = await drawExport();
    const climb = '../'.repeat(12);
    const dataYaml = `path: ${outside}\ntrain: ../../../etc\nval: [${outside}, ${climb}${outside.slice(1)}]\ntest: ${climb}etc/passwd\nnc: 2\nnames: [circle, square]\n`;
    const datasetId = await createDataset(world, world.alice, { dataset: 'hostile-yaml', name: 'Hostile yaml' });
    const job = await ingestArchive(
      t,
      world,
      world.alice,
      'alice',
      'hostile-yaml',
      datasetId,
      'hostile.zip',
      await zipOf(yoloExport(drawn, dataYaml)),
    );
    t.equal(job.status, 'completed', String(job.error));
    t.match(job.result, { imagesAdded: 6 });
    const images = await listImages('hostile-yaml');
    t.strictSame([...images.keys()].sort(), drawn.map((image) => image.name).sort(), "only the archive's images");
    // The yaml's entries match no folder of the archive: each image's split comes from its own folders.
    for (const image of drawn)
      t.equal(images.get(image.name)?.split, image.split, `${image.name}: split from its folder`);
    await checkDatasetInvariants(t, world.server, datasetId);
  },
);

const counts = async () =>
  (
    await adminQuery(
      'select (select count(*) from datasets)::int as datasets, (select count(*) from jobs)::int as jobs, (select count(*) from upload_sessions)::int as uploads, (select count(*) from storage_integrations)::int as integrations',
      [],
      world.server.databaseUrl,
    )
  ).rows[0] as Record<'datasets' | 'jobs' | 'uploads' | 'integrations', number>;

t.test(
  'preview and import: 501 saying Roboflow needs internet access and how to import an export instead; nothing changes',
  async (t) => {
    const before = await counts();
    const apiKey = 'rf_secret_api_key_0123456789';
    const offline =
      /Roboflow needs internet access, which this appliance does not have.*export.*YOLO.*COCO.*\/api\/upload\/signed-url.*\/ingest/s;
    for (const [path, body] of [
      ['/api/integrations/roboflow/preview', { apiKey }],
      ['/api/integrations/roboflow/import', { apiKey, items: [{ workspace: 'acme', projectId: PROJECT, version: 3 }] }],
      ['/api/integrations/roboflow/import', { items: [{ projectId: PROJECT, version: 1 }] }],
    ] as const) {
      for (const key of [world.alice, world.editor]) {
        const answer = await call(world.server, 'POST', path, { key, body });
        expectError(t, answer, 501, offline);
        t.notMatch(JSON.stringify(answer.body), apiKey, 'the Roboflow key is not echoed');
      }
    }
    t.strictSame(await counts(), before, 'no dataset, job, upload or integration was made');
    t.notOk(logged.join('').includes(apiKey), 'the Roboflow key is not logged');
  },
);

t.test('preview and import: bad input is 400, a viewer 403, no key 401, before the offline answer', async (t) => {
  const before = await counts();
  const post = (path: string, body: unknown, key = world.alice) =>
    call(world.server, 'POST', `/api/integrations/roboflow/${path}`, { key, body });
  expectError(t, await post('preview', { apiKey: 42 }), 400, /apiKey/);
  expectError(t, await post('preview', { apiKey: 'x'.repeat(1000) }), 400, /apiKey/);
  expectError(t, await post('import', { apiKey: 'k' }), 400, /items/);
  expectError(t, await post('import', { items: [] }), 400, /items/);
  expectError(
    t,
    await post('import', { items: [{ projectId: PROJECT, version: 'latest' }] }),
    400,
    /items\.0\.version/,
  );
  expectError(t, await post('import', { items: [{ version: 1 }] }), 400, /items\.0\.projectId/);
  expectError(t, await post('preview', { apiKey: 'k' }, world.viewer), 403);
  expectError(t, await post('import', { items: [{ projectId: PROJECT, version: 1 }] }, world.viewer), 403);
  expectError(
    t,
    await call(world.server, 'POST', '/api/integrations/roboflow/preview', { body: { apiKey: 'k' } }),
    401,
  );
  t.strictSame(await counts(), before);
});
