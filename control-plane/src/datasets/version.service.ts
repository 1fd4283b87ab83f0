import { IsolationLevel } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import type { Actor } from '../auth/actor.ts';
import { NotFound } from '../http/errors.ts';
import { releaseImageBlobs } from '../images/image-blobs.ts';
import type { RateLimiter } from '../http/rate-limit.ts';
import type { Storage } from '../storage/storage.ts';
import { forgetObject, isObjectFresh, recordDatasetArchive, transactionTime } from '../storage/stored-object.store.ts';
import { refuseConnected } from './connected-storage.ts';
import { findDataset } from './dataset-access.ts';
import { lockDataset } from './dataset-counters.ts';
import { liveImagePages, versionImagePages, writeExport, type ExportHeader } from './dataset-export.ts';
import { DatasetVersion } from './dataset-version.entity.ts';
import { nextVersionNumber, savedVersionRows, setVersionExportFile } from './dataset-version.store.ts';
import { Dataset } from './dataset.entity.ts';
import { findCurrentExport, setCurrentExport } from './dataset.store.ts';
import { compareVersions, imageInVersions } from './version-compare.ts';
import { restoreVersion } from './version-restore.ts';
import { fieldsOf, fingerprintOf, snapshotImages, versionFields } from './version-snapshot.ts';
import type {
  CompareQuery,
  CompareRead,
  ExportRead,
  Restored,
  VersionCreate,
  VersionCreated,
  VersionPatch,
  VersionPatched,
} from './version.schemas.ts';
import type { VersionEntry } from './dataset.schemas.ts';

/** Signed URLs of an export file: the client fetches it right away; its image URLs last days. */
const FILE_URL_SECONDS = 3600;
/** An export file younger than this is reused; its image URLs (7 days) then have 6 days or more left. */
const FRESH = `f.updated_at > now() - interval '1 day'`;

// One key per dataset (and per version), overwritten when rewritten, so the signed URL's path stays put:
// the ultralytics client caches a converted dataset by its URLs without their query strings.
const currentKey = (dataset: Dataset) =>
  `ws/${dataset.workspace.id}/datasets/${dataset.id}/export/${dataset.slug}.ndjson`;
const versionKey = (dataset: Dataset, version: number) =>
  `ws/${dataset.workspace.id}/datasets/${dataset.id}/versions/${version}/${dataset.slug}-v${version}.ndjson`;

/** The dataset's saved versions, oldest first, as the dataset read lists them. */
export async function savedVersions(
  em: EntityManager,
  datasetId: string,
): Promise<Array<z.input<typeof VersionEntry>>> {
  const rows = await savedVersionRows(em, datasetId);
  return rows.map((row) => ({
    version: row.version,
    ...(row.description === null ? {} : { description: row.description }),
    imageCount: row.image_count,
    classCount: row.class_count,
    annotationCount: row.annotation_count,
    splits: { train: Number(row.train), val: Number(row.val), test: Number(row.test), labeled: Number(row.labeled) },
    createdAt: new Date(row.created_at).toISOString(),
  }));
}

/**
 * Dataset exports and numbered versions: the NDJSON of the current state or of a version, saving an
 * immutable version (a manifest of the images, sharing their bytes), describing one, and restoring
 * the dataset from one.
 */
export class VersionService {
  private readonly em: EntityManager;
  private readonly storage: Storage;
  private readonly rateLimiter?: RateLimiter;

  constructor(em: EntityManager, storage: Storage, rateLimiter?: RateLimiter) {
    this.em = em;
    this.storage = storage;
    this.rateLimiter = rateLimiter;
  }

  async export(actor: Actor, owner: string, slug: string, v: number | undefined): Promise<z.input<typeof ExportRead>> {
    const { dataset } = await findDataset(this.em, actor, owner, slug, 'view');
    // A training job that captured a version reads that version, whatever its trainer asks for.
    v ??= actor.kind === 'key' ? actor.jobScope?.datasetVersion : undefined;
    if (v === undefined) return this.currentExport(dataset);
    const version = await this.findVersion(dataset, v);
    return { downloadUrl: await this.versionExport(dataset, version), version: version.version };
  }

  /**
   * Reuses the file written at the dataset's current revision while it is under a day old and no newer
   * than the dataset's last change (name and description move updatedAt, not the revision).
   */
  private async currentExport(dataset: Dataset): Promise<z.input<typeof ExportRead>> {
    const stored = await findCurrentExport(this.em, dataset.id, FRESH);
    if (stored.fresh && stored.export_key) return { downloadUrl: await this.fileUrl(stored.export_key), cached: true };
    // One snapshot for the header and every page; its start time is what the file shows.
    const written = await this.em.transactional(
      async (em) => {
        const current = await em.findOneOrFail(Dataset, dataset.id, { refresh: true });
        const asOf = await transactionTime(em);
        const key = currentKey(current);
        const header: ExportHeader = {
          ...versionFields(current),
          createdAt: current.createdAt,
          updatedAt: current.updatedAt,
        };
        const bytes = await writeExport(
          this.storage,
          key,
          current.workspace.id,
          header,
          liveImagePages(em, current.id),
        );
        return { key, bytes, asOf, revision: current.revision };
      },
      { isolationLevel: IsolationLevel.REPEATABLE_READ, readOnly: true },
    );
    await this.recordFile(dataset, written.key, written.bytes, written.asOf);
    await setCurrentExport(this.em, dataset.id, written.key, written.revision);
    // A rename moved the key: the file under the old name is no longer handed out.
    if (stored.export_key && stored.export_key !== written.key) await this.deleteFile(stored.export_key);
    return { downloadUrl: await this.fileUrl(written.key), cached: false };
  }

  /** A version's content never changes, so its file is rewritten only to renew the image URLs in it. */
  private async versionExport(dataset: Dataset, version: DatasetVersion): Promise<string> {
    const key = version.ndjsonKey ?? versionKey(dataset, version.version);
    const fresh = await isObjectFresh(this.em, key, FRESH);
    if (!version.ndjsonKey || !fresh) {
      const header: ExportHeader = {
        ...fieldsOf(version),
        version: version.version,
        createdAt: dataset.createdAt,
        updatedAt: version.createdAt,
      };
      const bytes = await writeExport(
        this.storage,
        key,
        dataset.workspace.id,
        header,
        versionImagePages(this.em, version.id),
      );
      await this.recordFile(dataset, key, bytes);
      await setVersionExportFile(this.em, version.id, key, bytes);
    }
    return this.fileUrl(key);
  }

  /**
   * Saves the dataset as the next numbered version, or answers the saved version with the same content
   * (reused). Numbering and the snapshot run under the dataset lock: concurrent saves take turns.
   */
  async create(
    actor: Actor,
    owner: string,
    slug: string,
    body: z.output<typeof VersionCreate>,
  ): Promise<z.input<typeof VersionCreated>> {
    const { dataset } = await findDataset(this.em, actor, owner, slug, 'edit');
    const { version, reused } = await this.save(dataset.id, body.description);
    const downloadUrl = body.download ? await this.versionExport(dataset, version) : undefined;
    return { version: version.version, reused, ...(downloadUrl ? { downloadUrl } : {}) };
  }

  /**
   * The save itself, for callers that checked access already (batch auto-annotation saves one before labeling).
   * A description given to a reused version replaces its own.
   */
  async save(
    datasetId: string,
    description: string | undefined,
  ): Promise<{ version: DatasetVersion; reused: boolean }> {
    return this.em.transactional(async (em) => {
      await lockDataset(em, datasetId);
      const current = await em.findOneOrFail(Dataset, datasetId, { refresh: true });
      const fingerprint = await fingerprintOf(em, current);
      const same = await em.findOne(DatasetVersion, { dataset: current, fingerprint });
      if (same) {
        if (description !== undefined) same.description = description;
        await em.flush();
        return { version: same, reused: true };
      }
      const next = await nextVersionNumber(em, current.id);
      const saved = em.create(DatasetVersion, {
        dataset: current,
        version: next,
        description: description ?? null,
        fingerprint,
        task: current.task,
        classNames: current.classNames,
        fields: { ...versionFields(current) },
        imageCount: current.imageCount,
        annotationCount: current.annotationCount,
      });
      await em.flush();
      await snapshotImages(em, saved.id, current.id);
      return { version: saved, reused: false };
    });
  }

  async describe(
    actor: Actor,
    owner: string,
    slug: string,
    body: z.output<typeof VersionPatch>,
  ): Promise<z.input<typeof VersionPatched>> {
    const { dataset } = await findDataset(this.em, actor, owner, slug, 'edit');
    const version = await this.findVersion(dataset, body.version);
    version.description = body.description;
    await this.em.flush();
    return { ok: true };
  }

  /** Rebuilds images, labels and classes from the version in one transaction; bytes only the replaced images used are freed after. */
  async restore(
    actor: Actor,
    owner: string,
    slug: string,
    body: { version: number },
  ): Promise<z.input<typeof Restored>> {
    const { dataset } = await findDataset(this.em, actor, owner, slug, 'edit');
    refuseConnected(
      dataset,
      'restoring a version would replace the files of its storage; ingest its reference again to re-sync',
    );
    const version = await this.findVersion(dataset, body.version);
    const dropped = await this.em.transactional(async (em) => {
      await lockDataset(em, dataset.id);
      return restoreVersion(em, await em.findOneOrFail(Dataset, dataset.id, { refresh: true }), version);
    });
    await releaseImageBlobs(this.em, this.storage, dataset.workspace.id, dropped);
    return { version: version.version, imageCount: version.imageCount };
  }

  /** The differences between two versions page by page, or one image (hash) as each of them keeps it. */
  async compare(
    actor: Actor,
    owner: string,
    slug: string,
    options: z.output<typeof CompareQuery>,
  ): Promise<z.input<typeof CompareRead>> {
    const { dataset } = await findDataset(this.em, actor, owner, slug, 'view');
    const base = await this.findVersion(dataset, options.base);
    const head = await this.findVersion(dataset, options.head);
    if (options.hash === undefined) {
      // Spec: full comparisons are also limited per user and dataset (anonymous callers share one count).
      await this.rateLimiter?.take(`${actor.kind === 'key' ? actor.userId : 'anonymous'}:${dataset.id}`, 'compare');
      return compareVersions(this.em, base, head, options.cursor);
    }
    const image = await imageInVersions(
      this.em,
      this.storage.urls,
      dataset.workspace.id,
      base.id === head.id ? [base] : [base, head],
      options.hash,
    );
    if (image.versions.every((version) => version === null))
      throw NotFound(`Image ${options.hash} is in neither version`);
    return image;
  }

  private async findVersion(dataset: Dataset, version: number): Promise<DatasetVersion> {
    const found = await this.em.findOne(DatasetVersion, { dataset, version });
    if (!found) throw NotFound(`Version ${version} of dataset ${dataset.workspace.handle}/${dataset.slug} not found`);
    return found;
  }

  private fileUrl(key: string): Promise<string> {
    return this.storage.urls.download(key, {
      expiresInSeconds: FILE_URL_SECONDS,
      filename: key.slice(key.lastIndexOf('/') + 1),
    });
  }

  /** Export files count in the workspace's storage; updatedAt is when the file's content was taken (default: now). */
  private async recordFile(dataset: Dataset, key: string, bytes: number, takenAt?: string): Promise<void> {
    await recordDatasetArchive(this.em, dataset.workspace.id, key, bytes, takenAt);
  }

  private async deleteFile(key: string): Promise<void> {
    await forgetObject(this.em, key);
    await this.storage.store.delete(key);
  }
}
