// Every column that holds (or names) a key of the blob store, in one list: the backup, the orphan sweep and erase
// build their statements from it (or, for erase, are checked against it by test/blob-keys.test.ts), so a column added
// by a migration is declared here once and no reader can forget it. test/blob-keys.test.ts fails on a migrated column
// whose name looks like a key (`key`, `*_key`, `*_keys`, `blob*`, a `hash` with an `ext`) that this list does not name.

/** Image bytes are stored once per workspace and content hash, so copies share them. */
export const imageKey = (workspaceId: string, hash: string, ext: string) => `ws/${workspaceId}/images/${hash}.${ext}`;
export const thumbnailKey = (workspaceId: string, hash: string) => `ws/${workspaceId}/thumbnails/${hash}.webp`;

/** The same keys in SQL, over a row with `workspace_id`, `hash` and `ext` (alias `a`, or none). */
const imageKeySql = (a = '') => `'ws/' || ${a}workspace_id || '/images/' || ${a}hash || '.' || ${a}ext`;
const thumbnailKeySql = (a = '') => `'ws/' || ${a}workspace_id || '/thumbnails/' || ${a}hash || '.webp'`;

/**
 * How the backup treats a column's keys. `used`: a row's key whose bytes were stored completely before the row
 * committed, so the snapshot must find them (listed as used, reported missing when gone); `sql` yields the key and
 * `where` keeps the rows that hold one. `recorded`: the bytes may come after the row, or are shared with a `used`
 * column: they are backed up through their stored_objects record only. `row`: no blob-store key at all (the row is in
 * the dump, which is all a restore needs).
 */
export type BackupUse = { used: { sql: string; where?: string } } | { recorded: string } | { row: string };

/**
 * How the hourly orphan sweep (storage/orphan-files.ts, kinds datasetArchives, modelFiles, exports) treats a column:
 * `keeps` — a row's key keeps its object (with `while`, only rows meeting that condition); otherwise why not.
 */
export type SweepUse = { keeps: { while?: string } } | { not: string };

/**
 * Who deletes a column's objects when its rows are erased (trash/trash-erase.ts): `{ dataset }` — eraseDataset, which
 * reads the keys of the dataset's rows (`dataset` names the column holding the dataset's id) before they cascade away;
 * `model` — eraseModels (models' weights, unless a clone shares them; exports' files through exports/export.store.ts);
 * `uploads` — both, as they delete the item's upload sessions; `images` — releaseImageBlobs (shared per workspace and
 * hash); `sweep` — left to the orphan sweep once the rows are gone; `none` — not an object of the blob store of its own.
 */
export type EraseUse = { dataset: string } | 'model' | 'uploads' | 'images' | 'sweep' | 'none';

export interface BlobKeyColumn {
  table: string;
  /** The column as the migrations name it; for derived keys, the columns the key is built from. */
  column: string;
  /**
   * How a row holds the key: `column` (the key itself, or null), `derived` (built from the row's workspace, hash and
   * extension as imageKey / thumbnailKey build it), `json` (at `path` in a jsonb column).
   */
  read: 'column' | 'derived' | 'json';
  /** For `json`: the path in the document. */
  path?: string;
  backup: BackupUse;
  sweep: SweepUse;
  erase: EraseUse;
  /** What the column is, in a sentence. */
  about: string;
}

export const BLOB_KEY_COLUMNS: readonly BlobKeyColumn[] = [
  {
    table: 'stored_objects',
    column: 'key',
    read: 'column',
    backup: { recorded: 'the record itself: every recorded object is listed (full join with the used keys)' },
    sweep: { not: 'the record the sweep walks' },
    erase: 'none',
    about:
      'One row per object written to the store, with its kind and size (written before image bytes, after every other object).',
  },
  {
    table: 'models',
    column: 'file_key',
    read: 'column',
    backup: { used: { sql: 'file_key', where: 'file_key is not null' } },
    sweep: { keeps: {} },
    erase: 'model',
    about: "A model's weights (clones share them).",
  },
  {
    table: 'models',
    column: 'weights_sha256_key',
    read: 'column',
    backup: {
      row: 'a marker: the file_key that weights_sha256 was computed for, not a reference that keeps an object',
    },
    sweep: { not: 'a marker only' },
    erase: 'none',
    about: 'Which file_key weights_sha256 is valid for.',
  },
  {
    table: 'model_exports',
    column: 'file_key',
    read: 'column',
    backup: { used: { sql: 'file_key', where: 'file_key is not null' } },
    sweep: { keeps: {} },
    erase: 'model',
    about: "An export's file (exports equivalent by fingerprint share it).",
  },
  {
    table: 'model_exports',
    column: 'weights_key',
    read: 'column',
    backup: { used: { sql: 'weights_key' } },
    sweep: { keeps: { while: 'status is null' } },
    erase: 'none',
    about: 'The model weights an export was made from: kept while the export runs; the weights belong to their model.',
  },
  {
    table: 'datasets',
    column: 'export_key',
    read: 'column',
    backup: { used: { sql: 'export_key', where: 'export_key is not null' } },
    sweep: { keeps: {} },
    erase: { dataset: 'id' },
    about: "A dataset's current NDJSON export.",
  },
  {
    table: 'dataset_versions',
    column: 'ndjson_key',
    read: 'column',
    backup: { used: { sql: 'ndjson_key', where: 'ndjson_key is not null' } },
    sweep: { keeps: {} },
    erase: { dataset: 'dataset_id' },
    about: "A saved version's NDJSON.",
  },
  {
    table: 'training_runs',
    column: 'checkpoint_key',
    read: 'column',
    backup: { used: { sql: 'checkpoint_key', where: 'checkpoint_key is not null' } },
    sweep: { keeps: {} },
    erase: 'sweep',
    about: "A training run's last checkpoint.",
  },
  {
    table: 'training_runs',
    column: 'resume_key',
    read: 'column',
    backup: { used: { sql: 'resume_key', where: 'resume_key is not null' } },
    sweep: { keeps: {} },
    erase: 'sweep',
    about: 'The checkpoint a training run resumes from.',
  },
  {
    table: 'job_outputs',
    column: 'storage_key',
    read: 'column',
    backup: { used: { sql: 'storage_key' } },
    sweep: { not: "a job's outputs are kept while a row (model_exports.file_key) names them" },
    erase: 'sweep',
    about: 'A file a job attempt wrote (recorded as kind exports).',
  },
  {
    table: 'upload_sessions',
    column: 'object_key',
    read: 'column',
    backup: {
      recorded: 'the session row comes before its bytes (a signed PUT): an upload in progress may have none yet',
    },
    sweep: { keeps: {} },
    erase: 'uploads',
    about: "An upload's object (a dataset archive or model weights); eraseModels deletes the models' ones too.",
  },
  {
    table: 'images',
    column: 'workspace_id, hash, ext',
    read: 'derived',
    backup: { used: { sql: imageKeySql(), where: 'reference_key is null' } },
    sweep: { not: 'image bytes have their own sweep (images/image-blobs.ts)' },
    erase: 'images',
    about: "An image's original bytes (imageKey), stored unless the image is indexed in place.",
  },
  {
    table: 'images',
    column: 'workspace_id, hash',
    read: 'derived',
    backup: { used: { sql: thumbnailKeySql(), where: 'error is null' } },
    sweep: { not: 'image bytes have their own sweep (images/image-blobs.ts)' },
    erase: 'images',
    about: "An image's thumbnail (thumbnailKey), stored for every decoded image, indexed in place or not.",
  },
  {
    table: 'images',
    column: 'reference_key',
    read: 'column',
    backup: {
      row: "a key in the dataset's connected storage (datasets.reference, storage_integrations), never in the blob store: the backup carries the rows, the bytes stay where they are",
    },
    sweep: { not: 'not an object of the blob store' },
    erase: 'none',
    about: 'For an image indexed in place, the object it was read from, beneath its dataset reference.',
  },
  {
    table: 'dataset_version_images',
    column: 'hash, ext',
    read: 'derived',
    backup: { recorded: "shared with images' bytes (by workspace and hash), recorded in stored_objects" },
    sweep: { not: 'image bytes have their own sweep (images/image-blobs.ts), which keeps them' },
    erase: 'images',
    about: "A saved version's images: their bytes are kept while a version uses them.",
  },
  {
    table: 'ingest_staged_images',
    column: 'hash, ext',
    read: 'derived',
    backup: { recorded: 'bytes of an ingest still running: recorded before they are written' },
    sweep: { not: 'image bytes have their own sweep (images/image-blobs.ts), which ends them with their job' },
    erase: 'images',
    about: 'Images an ingest has stored and will commit.',
  },
  {
    table: 'jobs',
    column: 'payload',
    read: 'json',
    path: 'source.objectKey',
    backup: {
      recorded:
        "a queued ingest's uploaded archive, recorded (and named by its upload session) before the job is queued",
    },
    sweep: { not: 'the upload session names it' },
    erase: 'none',
    about: 'An ingest from an upload: the archive it reads.',
  },
];

/** The columns whose keys the backup counts as used. */
const usedColumns = () =>
  BLOB_KEY_COLUMNS.flatMap((column) => ('used' in column.backup ? [{ ...column, used: column.backup.used }] : []));

/**
 * Every key the snapshot knows: each recorded object and each key a row uses (`used` in BLOB_KEY_COLUMNS), with its
 * size and whether a row uses it.
 */
export function snapshotKeysSql(): string {
  const used = usedColumns()
    .map(
      ({ table, used: { sql, where } }, index) =>
        `${index === 0 ? 'select' : 'union select'} ${sql} from ${table}${where ? ` where ${where}` : ''}`,
    )
    .join('\n    ');
  return `
  with used(key) as (
    ${used}
  )
  select coalesce(o.key, u.key) as key, coalesce(o.bytes, 0) as bytes, u.key is not null as used
  from stored_objects o full join used u on u.key = o.key
  order by 1`;
}

/** The conditions under which a stored object (alias `o`) is not referred to by any column the sweep keeps. */
export function unreferencedSql(): string {
  return BLOB_KEY_COLUMNS.flatMap((column, index) => {
    if (!('keeps' in column.sweep) || column.read !== 'column') return [];
    const alias = `k${index}`;
    const keeps = column.sweep.keeps.while ? ` and ${alias}.${column.sweep.keeps.while}` : '';
    return [`not exists (select 1 from ${column.table} ${alias} where ${alias}.${column.column} = o.key${keeps})`];
  }).join('\n       and ');
}

/**
 * The keys of one dataset's own files (its export, its versions' NDJSON), for eraseDataset: one `?` per column, each
 * the dataset's id.
 */
export function datasetFilesSql(): { sql: string; params: number } {
  const columns = BLOB_KEY_COLUMNS.flatMap((column) =>
    typeof column.erase === 'object' ? [{ ...column, owner: column.erase.dataset }] : [],
  );
  const sql = columns
    .map(
      ({ table, column, owner }, index) =>
        `${index === 0 ? `select ${column} as key` : `union select ${column}`} from ${table} where ${owner} = ? and ${column} is not null`,
    )
    .join('\n     ');
  return { sql, params: columns.length };
}
