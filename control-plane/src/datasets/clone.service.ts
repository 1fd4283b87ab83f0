import type { EntityManager } from '@mikro-orm/postgresql';
import type { Region } from '@vp/config';
import type { z } from 'zod';
import { requireKey, requireRole } from '../auth/access.ts';
import type { Actor } from '../auth/actor.ts';
import { Forbidden, NotFound } from '../http/errors.ts';
import { releaseImageBlobs } from '../images/image-blobs.ts';
import { copyImageBytes, foreignFiles, holdImageBytes, type StoredFile } from '../images/image-bytes-copy.ts';
import { copyImages } from '../images/image-copy.ts';
import { distinctFilesOf } from '../images/image.store.ts';
import type { Storage } from '../storage/storage.ts';
import type { DatasetClone, DatasetCloned } from './clone.schemas.ts';
import { findDataset } from './dataset-access.ts';
import { applyDelta, lockDataset } from './dataset-counters.ts';
import { freeCopySlug, requireSlugFree } from './dataset-slugs.ts';
import { Dataset } from './dataset.entity.ts';
import { refuseConnected } from './connected-storage.ts';

const MAX_NAME = 100;
const COPY_SUFFIX = ' (copy)';

/**
 * Copies a dataset the key can view (its own workspace's, or a public one) with images, labels and
 * classes into the key's workspace. Image bytes are shared by hash: within a workspace nothing is
 * copied; into another one each distinct file is copied once. Versions and stars are not copied.
 */
export class CloneService {
  private readonly em: EntityManager;
  private readonly region: Region;
  private readonly storage: Storage;

  constructor(em: EntityManager, region: Region, storage: Storage) {
    this.em = em;
    this.region = region;
    this.storage = storage;
  }

  async clone(
    actor: Actor,
    owner: string,
    slug: string,
    body: z.output<typeof DatasetClone>,
  ): Promise<z.input<typeof DatasetCloned>> {
    const key = requireKey(actor);
    const { dataset: source } = await findDataset(this.em, actor, owner, slug, 'view');
    if (body.owner && body.owner !== key.workspaceHandle) {
      throw Forbidden(
        `This key belongs to "${key.workspaceHandle}"; use a key created in "${body.owner}" to clone into that workspace`,
      );
    }
    requireRole(actor, key.workspaceId, 'editor');
    refuseConnected(
      source,
      'a clone would copy files that live in the storage; connect the storage to another dataset instead',
    );
    if (body.dataset) await requireSlugFree(this.em, key.workspaceId, body.dataset);
    const cloneSlug = body.dataset ?? (await freeCopySlug(this.em, key.workspaceId, source.slug));
    const to = key.workspaceId;
    // Bytes go to the store before the transaction, so no dataset lock is held during the copying.
    let files = to === source.workspace.id ? [] : await filesOf(this.em, source);
    await copyImageBytes(this.em, this.storage, to, files);
    try {
      return await this.em.transactional(async (tx) => {
        // The source's lock keeps its rows and labels as they are while they are copied.
        await lockDataset(tx, source.id);
        const current = await tx.findOne(Dataset, { id: source.id, deletedAt: null }, { refresh: true });
        if (!current) throw NotFound(`Dataset ${owner}/${slug} not found`);
        const clone = tx.create(Dataset, {
          workspace: to,
          slug: cloneSlug,
          name: body.name ?? current.name.slice(0, MAX_NAME - COPY_SUFFIX.length) + COPY_SUFFIX,
          description: body.description ?? current.description,
          task: current.task,
          format: current.format,
          visibility: body.visibility,
          blurFaces: current.blurFaces,
          tags: current.tags,
          license: body.license ?? current.license ?? null,
          metadata: current.metadata,
          classNames: current.classNames,
          classColors: current.classColors,
          iconColor: current.iconColor ?? null,
          iconLetter: current.iconLetter ?? null,
          kptSkeletonId: current.kptSkeletonId ?? null,
          kptShape: current.kptShape ?? null,
          source: { clonedFrom: `${owner}/${slug}` },
        });
        await tx.flush();
        // Rescanned under the lock: images added since the first scan need their bytes too.
        if (to !== source.workspace.id) files = await filesOf(tx, source);
        await holdImageBytes(tx, this.storage, to, files);
        const classMap = current.classNames.map((_, index) => ({ datasetId: source.id, from: index, to: index }));
        const added = await copyImages(tx, clone, { datasetId: source.id }, { classMap });
        await applyDelta(tx, clone.id, added);
        return {
          id: clone.id,
          owner: key.workspaceHandle,
          dataset: clone.slug,
          name: clone.name,
          imageCount: added.images,
          classCount: clone.classNames.length,
          region: this.region,
        };
      });
    } catch (error) {
      // Nothing was cloned: copied bytes no other image uses go again.
      await releaseImageBlobs(this.em, this.storage, to, foreignFiles(to, files));
      throw error;
    }
  }
}

/** The distinct files of a dataset's images. */
function filesOf(em: EntityManager, dataset: Dataset): Promise<StoredFile[]> {
  return distinctFilesOf(em, dataset.workspace.id, dataset.id);
}
