// Ingest plans: what an extracted archive (YOLO, COCO, classify folders, raw images) or an NDJSON file holds,
// with source class indexes and names, splits, label problems per image and the files left out.
import { createReadStream } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import t, { type Test } from 'tap';
import type { Label, Task } from '../control-plane/src/images/labels.ts';
import { MAX_MALFORMED_IMAGES } from '../control-plane/src/ingest/formats/coco.ts';
import { planArchive, planNdjson } from '../control-plane/src/ingest/formats/detect.ts';
import { fromNdjsonAnnotations, toNdjsonAnnotations } from '../control-plane/src/ingest/formats/ndjson.ts';
import type { IngestPlan } from '../control-plane/src/ingest/formats/plan.ts';

/** Writes the files (images as empty placeholders: nothing here decodes them) into a fresh temp folder. */
async function writeTree(t: Test, files: Record<string, string>): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'ingest-formats-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(root, path)), { recursive: true });
    await writeFile(join(root, path), text);
  }
  return root;
}

/** A plan with its skipped entries listed as the job reports them (grouped by reason; every one, in these small cases). */
const listed = (plan: IngestPlan) => ({ ...plan, skipped: plan.skipped.summary().skippedEntries });

/** Plans the files; `chunkBytes` sets the size of the chunks that files are streamed in. */
async function plan(t: Test, files: Record<string, string>, chunkBytes = 64 * 1024) {
  const root = await writeTree(t, files);
  const source = {
    read: (path: string) => readFile(join(root, path)),
    stream: async (path: string) => createReadStream(join(root, path), { highWaterMark: chunkBytes }),
  };
  return listed(
    await planArchive(
      source,
      Object.entries(files).map(([path, text]) => ({ path, size: Buffer.byteLength(text) })),
    ),
  );
}

const json = (value: unknown) => JSON.stringify(value);

t.test('YOLO detect: data.yaml names, images/<split> ↔ labels/<split>, backgrounds and orphans', async (t) => {
  const result = await plan(t, {
    'data.yaml': 'names: [person, car]\n',
    'images/train/a.jpg': '',
    'labels/train/a.txt': '0 0.5 0.5 0.2 0.4\n1 0.25 0.75 0.1 0.125\n',
    'images/val/b.png': '',
    'labels/val/b.txt': '',
    'images/test/c.JPG': '',
    'labels/test/orphan.txt': '0 0.5 0.5 0.1 0.1\n',
    'README.md': '# cars',
  });
  t.strictSame(result, {
    format: 'yolo',
    task: 'detect',
    classNames: ['person', 'car'],
    kptShape: null,
    items: [
      { path: 'images/test/c.JPG', labels: [], split: 'test' },
      {
        path: 'images/train/a.jpg',
        labels: [
          { classId: 0, bbox: [0.5, 0.5, 0.2, 0.4] },
          { classId: 1, bbox: [0.25, 0.75, 0.1, 0.125] },
        ],
        split: 'train',
      },
      { path: 'images/val/b.png', labels: [], split: 'val' },
    ],
    skipped: [
      { path: 'labels/test/orphan.txt', reason: 'a label file without a matching image' },
      { path: 'README.md', reason: 'not an image, nor a label or metadata file of this format' },
    ],
  });
});

t.test('YOLO: <split>/images ↔ <split>/labels, with Roboflow-style ../ split entries and a names map', async (t) => {
  const result = await plan(t, {
    'data.yaml': 'train: ../train/images\nval: ../valid/images\nnc: 2\nnames: {0: cat, 1: dog}\n',
    'train/images/a.jpg': '',
    'train/labels/a.txt': '1 0.5 0.5 0.2 0.2\n',
    'valid/images/b.jpg': '',
    'valid/labels/b.txt': '0 0.5 0.5 0.2 0.2\n',
  });
  t.strictSame(result.classNames, ['cat', 'dog']);
  t.strictSame(result.items, [
    { path: 'train/images/a.jpg', labels: [{ classId: 1, bbox: [0.5, 0.5, 0.2, 0.2] }], split: 'train' },
    { path: 'valid/images/b.jpg', labels: [{ classId: 0, bbox: [0.5, 0.5, 0.2, 0.2] }], split: 'val' },
  ]);
  t.strictSame(result.skipped, []);
});

t.test('YOLO: data.yaml train/val folders name the splits of folders that are not split names', async (t) => {
  const result = await plan(t, {
    'set/data.yaml': 'path: /home/me/set\ntrain: part1\nval: [part2]\nnames: [a]\n',
    'set/part1/x.jpg': '',
    'set/part1/x.txt': '0 0.5 0.5 0.2 0.2\n',
    'set/part2/y.jpg': '',
  });
  t.strictSame(
    result.items.map((item) => [item.path, item.split]),
    [
      ['set/part1/x.jpg', 'train'],
      ['set/part2/y.jpg', 'val'],
    ],
  );
});

t.test('YOLO flat layout without a yaml: class names are the indexes up to the highest used', async (t) => {
  const result = await plan(t, {
    'a.jpg': '',
    'a.txt': '1 0.5 0.5 0.2 0.2\n',
    'b.jpg': '',
    'b.txt': '0 0.1 0.1 0.1 0.1\n',
    'c.jpg': '',
  });
  t.strictSame(result, {
    format: 'yolo',
    task: 'detect',
    classNames: ['0', '1'],
    kptShape: null,
    items: [
      { path: 'a.jpg', labels: [{ classId: 1, bbox: [0.5, 0.5, 0.2, 0.2] }] },
      { path: 'b.jpg', labels: [{ classId: 0, bbox: [0.1, 0.1, 0.1, 0.1] }] },
      { path: 'c.jpg', labels: [] },
    ],
    skipped: [],
  });
});

t.test(
  'YOLO segment: polygon lines, with 9-number lines read as 4-point polygons when boxes are mixed in',
  async (t) => {
    const result = await plan(t, {
      'images/a.jpg': '',
      'labels/a.txt': '0 0.1 0.1 0.5 0.1 0.5 0.5\n1 0.1 0.1 0.9 0.1 0.9 0.9 0.1 0.9\n',
      'images/b.jpg': '',
      'labels/b.txt': '1 0.5 0.5 0.2 0.2\n',
    });
    t.equal(result.task, 'segment');
    t.strictSame(result.items, [
      {
        path: 'images/a.jpg',
        labels: [
          { classId: 0, segments: [0.1, 0.1, 0.5, 0.1, 0.5, 0.5] },
          { classId: 1, segments: [0.1, 0.1, 0.9, 0.1, 0.9, 0.9, 0.1, 0.9] },
        ],
      },
      { path: 'images/b.jpg', labels: [{ classId: 1, bbox: [0.5, 0.5, 0.2, 0.2] }] },
    ]);
  },
);

t.test('YOLO pose: kpt_shape gives box + keypoints, and other line lengths are label errors', async (t) => {
  const result = await plan(t, {
    'data.yaml': 'names: [person]\nkpt_shape: [2, 3]\n',
    'images/a.jpg': '',
    'labels/a.txt': '0 0.5 0.5 0.2 0.2 0.4 0.45 2 0.6 0.55 1\n',
    'images/b.jpg': '',
    'labels/b.txt': '0 0.5 0.5 0.2 0.2\n',
  });
  t.equal(result.task, 'pose');
  t.strictSame(result.kptShape, [2, 3]);
  t.strictSame(result.items, [
    {
      path: 'images/a.jpg',
      labels: [{ classId: 0, bbox: [0.5, 0.5, 0.2, 0.2], keypoints: [0.4, 0.45, 2, 0.6, 0.55, 1] }],
    },
    {
      path: 'images/b.jpg',
      labels: [],
      labelError:
        'labels/b.txt line 1: expected 11 numbers: class, box and the keypoints of kpt_shape [2, 3], got 5 numbers',
    },
  ]);
});

t.test('YOLO obb: every line with 9 numbers, or a yaml that says task: obb', async (t) => {
  const corners = '0.1 0.1 0.4 0.1 0.4 0.3 0.1 0.3';
  const allNine = await plan(t, { 'images/a.jpg': '', 'labels/a.txt': `0 ${corners}\n1 ${corners}\n` });
  t.equal(allNine.task, 'obb');
  t.strictSame(allNine.items[0].labels, [
    { classId: 0, obb: [0.1, 0.1, 0.4, 0.1, 0.4, 0.3, 0.1, 0.3] },
    { classId: 1, obb: [0.1, 0.1, 0.4, 0.1, 0.4, 0.3, 0.1, 0.3] },
  ]);

  const declared = await plan(t, {
    'data.yaml': 'task: obb\nnames: [ship]\n',
    'images/a.jpg': '',
    'labels/a.txt': `0 ${corners}\n0 0.5 0.5 0.1 0.1\n`,
  });
  t.equal(declared.task, 'obb');
  t.strictSame(
    declared.items[0].labels,
    [
      { classId: 0, obb: [0.1, 0.1, 0.4, 0.1, 0.4, 0.3, 0.1, 0.3] },
      { classId: 0, bbox: [0.5, 0.5, 0.1, 0.1] },
    ],
    'a box line stays a box; validation refuses it later',
  );
});

t.test(
  'YOLO malformed lines: the image keeps no labels from that file and names the file, line and rule',
  async (t) => {
    const result = await plan(t, {
      'data.yaml': 'names: [a, b]\n',
      'images/w.jpg': '',
      'labels/w.txt': '0 0.5 0.5 0.1 0.1\n\n0 0.5 abc 0.1 0.1\n',
      'images/x.jpg': '',
      'labels/x.txt': '2 0.5 0.5 0.1 0.1\n',
      'images/y.jpg': '',
      'labels/y.txt': '0 0.5 0.5\n',
      'images/z.jpg': '',
      'labels/z.txt': '1.5 0.5 0.5 0.1 0.1\n',
      'images/v.jpg': '',
      'labels/v.txt': '0 0.1 0.1 0.5 0.1 0.5 0.5 0.9\n',
      'images/ok.jpg': '',
      'labels/ok.txt': '1 1e-1 .5 0.1 0.1\r\n',
    });
    t.strictSame(
      result.items.map(({ path, labels, labelError }) => ({ path, labels, labelError })),
      [
        { path: 'images/ok.jpg', labels: [{ classId: 1, bbox: [0.1, 0.5, 0.1, 0.1] }], labelError: undefined },
        {
          path: 'images/v.jpg',
          labels: [],
          labelError: 'labels/v.txt line 1: expected a class and the x, y pairs of at least 3 points, got 8 numbers',
        },
        { path: 'images/w.jpg', labels: [], labelError: 'labels/w.txt line 3: "abc" is not a number' },
        {
          path: 'images/x.jpg',
          labels: [],
          labelError: 'labels/x.txt line 1: class 2 is out of range; the source names 2 classes',
        },
        {
          path: 'images/y.jpg',
          labels: [],
          labelError: 'labels/y.txt line 1: expected 5 numbers [class, xc, yc, w, h], got 3 numbers',
        },
        {
          path: 'images/z.jpg',
          labels: [],
          labelError: 'labels/z.txt line 1: class index must be a non-negative integer, got 1.5',
        },
      ],
    );
    t.equal(result.task, 'detect');
  },
);

const cocoImages = [
  { id: 11, file_name: '000001.jpg', width: 200, height: 100 },
  { id: 12, file_name: 'images/val2017/000002.jpg', width: 400, height: 200 },
  { id: 13, file_name: 'missing.jpg', width: 10, height: 10 },
];
// Sparse, unordered ids: cat (3) becomes source class 0, dog (7) class 1.
const cocoCategories = [
  { id: 7, name: 'dog' },
  { id: 3, name: 'cat' },
];

t.test(
  'COCO detect: sparse category ids, pixel boxes normalized, basename matching, split from the file name',
  async (t) => {
    const result = await plan(t, {
      'annotations/instances_val2017.json': json({
        images: cocoImages,
        categories: cocoCategories,
        annotations: [
          { id: 1, image_id: 11, category_id: 7, bbox: [20, 10, 40, 30] },
          { id: 2, image_id: 12, category_id: 3, bbox: [0, 0, 100, 50] },
          { id: 3, image_id: 12, category_id: 3, bbox: [0, 0, 400, 200], iscrowd: 1 },
          { id: 4, image_id: 99, category_id: 3, bbox: [0, 0, 1, 1] },
        ],
      }),
      'images/val2017/000001.jpg': '',
      'images/val2017/000002.jpg': '',
      'images/train/extra.jpg': '',
      'notes.json': '{"hello": 1}',
    });
    t.strictSame(result, {
      format: 'coco',
      task: 'detect',
      classNames: ['cat', 'dog'],
      kptShape: null,
      items: [
        { path: 'images/train/extra.jpg', labels: [], split: 'train' },
        { path: 'images/val2017/000001.jpg', labels: [{ classId: 1, bbox: [0.2, 0.25, 0.2, 0.3] }], split: 'val' },
        { path: 'images/val2017/000002.jpg', labels: [{ classId: 0, bbox: [0.125, 0.125, 0.25, 0.25] }], split: 'val' },
      ],
      skipped: [
        {
          path: 'annotations/instances_val2017.json',
          reason: 'its file_name is not in the archive',
          at: 'images[2] "missing.jpg"',
        },
        {
          path: 'annotations/instances_val2017.json',
          reason: 'its image_id is not an image of this file found in the archive',
          at: 'annotations[3]',
        },
        { path: 'notes.json', reason: 'not a COCO annotation file (needs images, annotations and categories arrays)' },
      ],
    });
  },
);

t.test('COCO segment: one label per polygon, normalized; RLE is a label error for its image', async (t) => {
  const result = await plan(t, {
    'coco/train.json': json({
      images: cocoImages.slice(0, 2),
      categories: cocoCategories,
      annotations: [
        {
          image_id: 11,
          category_id: 3,
          bbox: [20, 10, 40, 30],
          segmentation: [
            [20, 10, 60, 10, 60, 40],
            [100, 50, 150, 50, 150, 100],
          ],
        },
        { image_id: 12, category_id: 7, bbox: [0, 0, 10, 10], segmentation: [[0, 0, 10, 0, 10, 10]] },
        { image_id: 12, category_id: 7, bbox: [0, 0, 10, 10], segmentation: { counts: [0, 100], size: [200, 400] } },
      ],
    }),
    'coco/images/000001.jpg': '',
    'coco/images/val2017/000002.jpg': '',
  });
  t.equal(result.task, 'segment');
  t.strictSame(result.items, [
    {
      path: 'coco/images/000001.jpg',
      labels: [
        { classId: 0, segments: [0.1, 0.1, 0.3, 0.1, 0.3, 0.4] },
        { classId: 0, segments: [0.5, 0.5, 0.75, 0.5, 0.75, 1] },
      ],
      split: 'train',
    },
    {
      path: 'coco/images/val2017/000002.jpg',
      labels: [],
      split: 'train',
      labelError: 'coco/train.json annotations[2]: RLE segmentation is not supported, use polygons',
    },
  ]);
});

// The files are streamed: a record, a key or an escape split between chunks (of one byte, or five) reads the same.
for (const chunkBytes of [64 * 1024, 1, 5]) {
  t.test(
    `COCO JSON read record by record (${chunkBytes}-byte chunks): layout and spacing as JSON allows, malformed files skipped with where`,
    async (t) => {
      const spaced = `\uFEFF {\n "info" : {"note": "a \\"quoted\\" ]} text \\\\"} ,\r\n "im\\u0061ges" : [ ${json(cocoImages[0])} ] , "categories":[${json(cocoCategories[0])}],
    "annotations": [ 7, "a \\\\\\" ]", ${json({ image_id: 11, category_id: 7, bbox: [20, 10, 40, 30] })} ] }\n`;
      const result = await plan(
        t,
        {
          'a.json': spaced,
          'b.json': '{"images": [], "annotations": [{"image_id": 1,}], "categories": []}',
          'c.json': '{"images": [] "annotations": [], "categories": []}',
          'd.json': '[1, 2]',
          'e.json': '{"images": [], "annotations": [], "categories": []} trailing',
          'f.json': '{"images": [], "annotations": [{"image_id": 1}], "categories": [',
          'g.json': '{"images": [], "annotations": [1,], "categories": []}',
          '000001.jpg': '',
        },
        chunkBytes,
      );
      t.strictSame(result.items, [{ path: '000001.jpg', labels: [{ classId: 0, bbox: [0.2, 0.25, 0.2, 0.3] }] }]);
      t.match(result.skipped, [
        {
          path: 'a.json',
          reason: 'its image_id is not an image of this file found in the archive',
          at: 'annotations[0]',
        },
        {
          path: 'a.json',
          reason: 'its image_id is not an image of this file found in the archive',
          at: 'annotations[1]',
        },
        { path: 'b.json', reason: /^not readable JSON: annotations\[0\]: / },
        { path: 'c.json', reason: 'not readable JSON: expected "," or "}" at byte 14' },
        { path: 'd.json', reason: 'not readable JSON: expected a JSON object at byte 0' },
        { path: 'e.json', reason: 'not readable JSON: unexpected text after the JSON object at byte 52' },
        { path: 'f.json', reason: 'not readable JSON: expected a value at byte 64' },
        { path: 'g.json', reason: 'not readable JSON: expected a value at byte 33' },
      ]);
    },
  );
}

t.test(
  `COCO: up to ${MAX_MALFORMED_IMAGES} malformed image records are skipped and counted; more fail the ingest, saying so`,
  async (t) => {
    const cocoWith = (malformed: number) =>
      `{"images":[${json(cocoImages[0])},${Array.from({ length: malformed }, (_, i) => i % 1000).join(',')}],"categories":[${json(cocoCategories[0])}],"annotations":[]}`;
    const result = await plan(t, { 'a.json': cocoWith(MAX_MALFORMED_IMAGES), '000001.jpg': '' });
    t.equal(result.format, 'coco');
    t.equal(result.skipped.length, 3, 'three examples of the one reason');
    t.match(result.skipped[0], {
      path: 'a.json',
      reason: 'record: Invalid input: expected object, received number',
      at: 'images[1]',
    });
    await t.rejects(plan(t, { 'a.json': cocoWith(MAX_MALFORMED_IMAGES + 1), '000001.jpg': '' }), {
      name: 'Error',
      message: `a.json: more than ${MAX_MALFORMED_IMAGES} malformed image records (images[${MAX_MALFORMED_IMAGES + 1}] record: Invalid input: expected object, received number); fix or remove the file`,
    });
  },
);

t.test('COCO pose: keypoints normalized with visibility kept, kpt_shape from the category', async (t) => {
  const result = await plan(t, {
    'person_keypoints.json': json({
      images: [{ id: 'a', file_name: 'p.jpg', width: 200, height: 100 }],
      categories: [{ id: 1, name: 'person', keypoints: ['nose', 'eye'] }],
      annotations: [
        {
          image_id: 'a',
          category_id: 1,
          bbox: [20, 10, 40, 30],
          keypoints: [50, 25, 2, 0, 0, 0],
          segmentation: [[1, 2, 3, 4, 5, 6]],
        },
      ],
    }),
    'p.jpg': '',
  });
  t.equal(result.task, 'pose');
  t.strictSame(result.kptShape, [2, 3]);
  t.strictSame(result.items, [
    { path: 'p.jpg', labels: [{ classId: 0, bbox: [0.2, 0.25, 0.2, 0.3], keypoints: [0.25, 0.25, 2, 0, 0, 0] }] },
  ]);
});

t.test('classify folders: split/class/image, class names sorted, and one wrapper folder', async (t) => {
  const split = await plan(t, {
    'train/cat/a.jpg': '',
    'train/dog/b.jpg': '',
    'val/cat/c.jpg': '',
    'val/ant/d.jpg': '',
  });
  t.strictSame(split, {
    format: 'classify-folders',
    task: 'classify',
    classNames: ['ant', 'cat', 'dog'],
    kptShape: null,
    items: [
      { path: 'train/cat/a.jpg', split: 'train', labels: [{ classId: 1 }] },
      { path: 'train/dog/b.jpg', split: 'train', labels: [{ classId: 2 }] },
      { path: 'val/ant/d.jpg', split: 'val', labels: [{ classId: 0 }] },
      { path: 'val/cat/c.jpg', split: 'val', labels: [{ classId: 1 }] },
    ],
    skipped: [],
  });

  const wrapped = await plan(t, { 'flowers/rose/a.jpg': '', 'flowers/daisy/b.png': '', 'flowers/LICENSE.txt': 'CC' });
  t.strictSame(wrapped.classNames, ['daisy', 'rose']);
  t.strictSame(wrapped.items, [
    { path: 'flowers/daisy/b.png', labels: [{ classId: 0 }] },
    { path: 'flowers/rose/a.jpg', labels: [{ classId: 1 }] },
  ]);
  t.strictSame(wrapped.skipped, [
    { path: 'flowers/LICENSE.txt', reason: 'not an image, nor a label or metadata file of this format' },
  ]);
});

t.test('raw: every image without labels, split from its folders; hidden and other files skipped', async (t) => {
  const result = await plan(t, {
    'photos/a.jpg': '',
    'train/b.webp': '',
    'images/val/c.jpg': '',
    'notes.md': '',
    '.DS_Store': '',
    '__MACOSX/photos/._a.jpg': '',
  });
  t.strictSame(result, {
    format: 'raw',
    task: null,
    classNames: [],
    kptShape: null,
    items: [
      { path: 'images/val/c.jpg', split: 'val', labels: [] },
      { path: 'photos/a.jpg', labels: [] },
      { path: 'train/b.webp', split: 'train', labels: [] },
    ],
    skipped: [
      { path: '.DS_Store', reason: 'a hidden or system file' },
      { path: '__MACOSX/photos/._a.jpg', reason: 'a hidden or system file' },
      { path: 'notes.md', reason: 'not an image, nor a label or metadata file of this format' },
    ],
  });
});

async function writeNdjson(t: Test, lines: string[]): Promise<string> {
  const root = await writeTree(t, { 'set.ndjson': `${lines.join('\n')}\n` });
  return join(root, 'set.ndjson');
}

t.test('NDJSON: every annotation kind, obb in both forms, metadata, and bad lines skipped', async (t) => {
  const image = (file: string, annotations: unknown, extra: Record<string, unknown> = {}) =>
    json({
      type: 'image',
      file,
      url: `https://img.example/${file}`,
      width: 640,
      height: 480,
      split: 'train',
      annotations,
      ...extra,
    });
  const file = await writeNdjson(t, [
    json({ type: 'dataset', task: 'detect', name: 'mixed', class_names: { 0: 'person', 1: 'car' }, kpt_shape: [1, 3] }),
    image('boxes.jpg', { boxes: [[0, 0.5, 0.5, 0.2, 0.4]] }, { split: 'val', metadata: { camera: 'north' } }),
    image('segments.jpg', { segments: [[1, 0.1, 0.1, 0.5, 0.1, 0.5, 0.5]] }),
    image('pose.jpg', { pose: [[0, 0.5, 0.5, 0.2, 0.2, 0.45, 0.4, 2]] }),
    image('obb.jpg', { obb: [[1, 0.1, 0.1, 0.4, 0.1, 0.4, 0.3, 0.1, 0.3]] }),
    image('obb-angle.jpg', { obb: [[1, 0.5, 0.5, 0.4, 0.2, Math.PI / 2]] }),
    image('class.jpg', { classification: [1] }, { split: 'test' }),
    image('background.jpg', {}),
    image('bad-class.jpg', {
      boxes: [
        [0, 0.5, 0.5, 0.1, 0.1],
        [5, 0.5, 0.5, 0.1, 0.1],
      ],
    }),
    '{not json',
    json({ type: 'image', file: 'no-split.jpg' }),
    json({ type: 'image', split: 'train' }),
    image('boxes.jpg', {}),
  ]);
  const result = listed(await planNdjson(file));
  t.equal(result.format, 'ndjson');
  t.equal(result.task, 'detect', 'the header task wins');
  t.strictSame(result.classNames, ['person', 'car']);
  t.strictSame(result.kptShape, [1, 3]);

  const angle = result.items.find((item) => item.path === 'obb-angle.jpg')!;
  const corners = angle.labels[0].obb!;
  const expected = [0.4, 0.7, 0.6, 0.7, 0.6, 0.3, 0.4, 0.3];
  t.equal(corners.length, 8);
  t.ok(
    corners.every((value, index) => Math.abs(value - expected[index]) < 1e-12),
    `corners ${corners.join(',')}`,
  );

  const url = (file: string) => `https://img.example/${file}`;
  t.strictSame(
    result.items.filter((item) => item !== angle),
    [
      {
        path: 'boxes.jpg',
        split: 'val',
        labels: [{ classId: 0, bbox: [0.5, 0.5, 0.2, 0.4] }],
        url: url('boxes.jpg'),
        metadata: { camera: 'north' },
      },
      {
        path: 'segments.jpg',
        split: 'train',
        labels: [{ classId: 1, segments: [0.1, 0.1, 0.5, 0.1, 0.5, 0.5] }],
        url: url('segments.jpg'),
      },
      {
        path: 'pose.jpg',
        split: 'train',
        labels: [{ classId: 0, bbox: [0.5, 0.5, 0.2, 0.2], keypoints: [0.45, 0.4, 2] }],
        url: url('pose.jpg'),
      },
      {
        path: 'obb.jpg',
        split: 'train',
        labels: [{ classId: 1, obb: [0.1, 0.1, 0.4, 0.1, 0.4, 0.3, 0.1, 0.3] }],
        url: url('obb.jpg'),
      },
      { path: 'class.jpg', split: 'test', labels: [{ classId: 1 }], url: url('class.jpg') },
      { path: 'background.jpg', split: 'train', labels: [], url: url('background.jpg') },
      {
        path: 'bad-class.jpg',
        split: 'train',
        labels: [],
        url: url('bad-class.jpg'),
        labelError: 'line 9: annotations.boxes[1]: class 5 is out of range; the source names 2 classes',
      },
    ],
  );
  t.strictSame(result.skipped, [
    { path: 'set.ndjson', reason: 'not valid JSON', at: 'line 10' },
    { path: 'no-split.jpg', reason: '"split" must be train, val or test', at: 'line 11' },
    { path: 'set.ndjson', reason: '"file" is required', at: 'line 12' },
    { path: 'boxes.jpg', reason: 'the same file as an earlier line', at: 'line 13 (first on line 2)' },
  ]);
});

t.test('NDJSON without a header: task from the labels, class names from the indexes', async (t) => {
  const file = await writeNdjson(t, [
    json({ file: 'a.jpg', split: 'valid', annotations: { segments: [[2, 0.1, 0.1, 0.5, 0.1, 0.5, 0.5]] } }),
  ]);
  const result = listed(await planNdjson(file));
  t.strictSame(result, {
    format: 'ndjson',
    task: 'segment',
    classNames: ['0', '1', '2'],
    kptShape: null,
    items: [{ path: 'a.jpg', split: 'val', labels: [{ classId: 2, segments: [0.1, 0.1, 0.5, 0.1, 0.5, 0.5] }] }],
    skipped: [],
  });
});

t.test(
  'NDJSON annotations round-trip: fromNdjsonAnnotations(toNdjsonAnnotations(task, labels)) is labels',
  async (t) => {
    const cases: Array<[Task, Label[]]> = [
      [
        'detect',
        [
          { classId: 0, bbox: [0.5, 0.5, 0.2, 0.4] },
          { classId: 3, bbox: [0.12345, 0.2, 0.1, 0.1] },
        ],
      ],
      ['segment', [{ classId: 1, segments: [0.1, 0.1, 0.5, 0.1, 0.5, 0.5, 0.1, 0.5] }]],
      ['pose', [{ classId: 0, bbox: [0.5, 0.5, 0.2, 0.2], keypoints: [0.45, 0.4, 2, 0.55, 0.4, 0] }]],
      ['obb', [{ classId: 2, obb: [0.1, 0.1, 0.4, 0.1, 0.4, 0.3, 0.1, 0.3] }]],
      ['classify', [{ classId: 4 }]],
    ];
    for (const [task, labels] of cases)
      t.strictSame(fromNdjsonAnnotations(toNdjsonAnnotations(task, labels)), labels, task);
    t.strictSame(
      toNdjsonAnnotations('obb', cases[3][1]),
      { obb: [[2, 0.1, 0.1, 0.4, 0.1, 0.4, 0.3, 0.1, 0.3]] },
      'obb as 8 corner coordinates',
    );
    t.strictSame(toNdjsonAnnotations('classify', [{ classId: 4 }]), { classification: [4] });
    t.equal(toNdjsonAnnotations('detect', []), undefined, 'no labels: no annotations');
    t.equal(toNdjsonAnnotations('depth', []), undefined);
    t.strictSame(fromNdjsonAnnotations(undefined), []);
  },
);

t.test('NDJSON annotations: only the known kinds, at most 10,000 labels', async (t) => {
  t.throws(() => fromNdjsonAnnotations({ constructor: [[0, 0.5, 0.5, 0.1, 0.1]] }), {
    message: 'annotations."constructor": unknown kind; expected boxes, segments, pose, obb or classification',
  });
  t.throws(() => fromNdjsonAnnotations({ classification: Array(10_001).fill(0) }), {
    message: 'annotations.classification: 10001 labels; an image has at most 10000',
  });
});
