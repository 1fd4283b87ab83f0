// A dataset's images and boxes seeded in straight SQL (bench:images, bench:console): deterministic per image number g,
// so every run measures the same dataset, and fast enough for a million rows.

export const SEEDED_CLASSES = [
  'person',
  'bicycle',
  'car',
  'motorcycle',
  'bus',
  'truck',
  'traffic light',
  'stop sign',
  'dog',
  'cat',
];

/** A stored file the seeded rows may share (its thumbnail then shows); without any, hashes are made up. */
export interface SeedFile {
  hash: string;
  ext: string;
  width: number;
  height: number;
}

const sqlText = (value: string) => `'${value.replace(/'/g, "''")}'`;

/**
 * The statements that add `count` images to the dataset, 90% of them with 3 boxes, and bring its counters up to date.
 * With `files`, image g is files[g mod n] (hash, type and size): thumbnails repeat, as a gallery benchmark may.
 */
export function seedImagesSql(options: {
  datasetId: string;
  workspaceId: string;
  count: number;
  files?: SeedFile[];
}): string[] {
  const { datasetId, workspaceId, count, files = [] } = options;
  // IDs as the server makes them: 8 hex digits of seconds, then 16 more (here the image number).
  const seconds = (Math.floor(Date.now() / 1000) - count).toString(16).padStart(8, '0');
  const image = `'${seconds}' || lpad(to_hex(g), 16, '0')`;
  // As wide as the largest number, so names sort as numbers do (6 digits at 100,000).
  const name = `'img-' || lpad(g::text, ${String(count).length}, '0')`;
  const pick = (values: string[]) => `(array[${values.join(', ')}])[1 + g % ${files.length}]`;
  const file =
    files.length === 0
      ? {
          hash: 'md5(g::text) || md5((g + 1)::text)',
          ext: `case when g % 4 = 0 then 'png' else 'jpg' end`,
          width: '320 + (g * 7919) % 3520',
          height: '240 + (g * 104729) % 2400',
        }
      : {
          hash: pick(files.map((f) => sqlText(f.hash))),
          ext: pick(files.map((f) => sqlText(f.ext))),
          width: pick(files.map((f) => String(f.width))),
          height: pick(files.map((f) => String(f.height))),
        };
  return [
    `insert into images (id, created_at, updated_at, workspace_id, dataset_id, hash, ext, name, width, height, channels, split, label_count, bytes, metadata, search_text)
     select ${image}, now() - (${count} - g) * interval '1 second', now(), '${workspaceId}', '${datasetId}', ${file.hash},
       ${file.ext}, ${name} || '.' || ${file.ext},
       ${file.width}, ${file.height}, 3,
       case when g % 10 < 7 then 'train' when g % 10 < 9 then 'val' else 'test' end,
       case when g % 10 = 5 then 0 else 3 end, 20000 + (g * 15485863) % 4000000,
       jsonb_build_object('camera', 'cam-' || (g % 40)), ${name} || ' camera cam-' || (g % 40)
     from generate_series(1::bigint, ${count}) g`,
    `insert into annotations (image_id, position, dataset_id, class_id, label, cx, cy, w, h, points)
     select ${image}, p, '${datasetId}', c, jsonb_build_object('classId', c, 'bbox', jsonb_build_array(x, y, w, h)), x, y, w, h, 2
     from generate_series(1::bigint, ${count}) g cross join generate_series(0, 2) p
     cross join lateral (select (g * (p + 3) * 7 + p) % ${SEEDED_CLASSES.length} as c,
       round((0.1 + ((g * 31 + p * 17) % 800) / 1000.0)::numeric, 5)::float8 as x, round((0.1 + ((g * 37 + p * 13) % 800) / 1000.0)::numeric, 5)::float8 as y,
       round((0.02 + ((g * 41 + p) % 180) / 1000.0)::numeric, 5)::float8 as w, round((0.02 + ((g * 43 + p) % 180) / 1000.0)::numeric, 5)::float8 as h) box
     where g % 10 <> 5`,
    `update images i set class_ids = a.ids from (select image_id, array_agg(distinct class_id order by class_id) as ids from annotations where dataset_id = '${datasetId}' group by image_id) a where a.image_id = i.id`,
    `update datasets d set image_count = c.n, annotation_count = c.a, train_count = c.train, val_count = c.val, test_count = c.test, labeled_count = c.labeled, revision = d.revision + 1
     from (select count(*)::int n, sum(label_count)::int a, count(*) filter (where split = 'train')::int train, count(*) filter (where split = 'val')::int val,
             count(*) filter (where split = 'test')::int test, count(*) filter (where label_count > 0)::int labeled from images where dataset_id = '${datasetId}') c
     where d.id = '${datasetId}'`,
    'vacuum analyze images',
    'vacuum analyze annotations',
  ];
}
