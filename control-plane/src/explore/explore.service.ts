import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import type { Actor } from '../auth/actor.ts';
import { datasetSamples, sampleImagesOf } from '../datasets/dataset-samples.ts';
import type { Storage } from '../storage/storage.ts';
import type { ExploreResult } from './explore.schemas.ts';
import { searchPublicDatasets, searchPublicProjects, type Search } from './explore.store.ts';

/** Whose stars `starred` filters by: the key's user; nobody's without a key. */
const starredBy = (actor: Actor): string | null => (actor.kind === 'key' ? actor.userId : null);

/** Explore: what every workspace on the appliance made public. */
export class ExploreService {
  private readonly em: EntityManager;
  private readonly storage: Storage;

  constructor(em: EntityManager, storage: Storage) {
    this.em = em;
    this.storage = storage;
  }

  async search(actor: Actor, search: Search): Promise<z.input<typeof ExploreResult>> {
    const [projects, datasets] = await Promise.all([
      search.type === 'all' || search.type === 'projects' ? this.projects(actor, search) : [],
      search.type === 'all' || search.type === 'datasets' ? this.datasets(actor, search) : [],
    ]);
    return {
      projects: projects.slice(0, search.limit),
      datasets: datasets.slice(0, search.limit),
      ...(search.type === 'images' ? { images: [] } : {}),
      hasMore: projects.length > search.limit || datasets.length > search.limit,
    };
  }

  /** One more than the limit, so hasMore can be told. */
  private async datasets(actor: Actor, search: Search): Promise<z.input<typeof ExploreResult>['datasets']> {
    const rows = await searchPublicDatasets(this.em, search, starredBy(actor));
    const samples = await datasetSamples(
      this.em,
      this.storage.urls,
      rows.map((row) => ({ id: row.id, workspaceId: row.workspace_id })),
      false,
    );
    return rows.map((row) => ({
      id: row.id,
      dataset: row.slug,
      name: row.name,
      description: row.description,
      owner: row.owner,
      visibility: row.visibility,
      task: row.task,
      imageCount: row.image_count,
      classCount: row.class_names.length,
      classNames: row.class_names,
      tags: row.tags,
      splits: { train: row.train_count, val: row.val_count, test: row.test_count, labeled: row.labeled_count },
      starCount: row.star_count,
      ...(row.license ? { license: row.license } : {}),
      sampleImages: sampleImagesOf(samples.get(row.id) ?? []),
      updatedAt: new Date(row.updated_at).toISOString(),
    }));
  }

  private async projects(actor: Actor, search: Search): Promise<z.input<typeof ExploreResult>['projects']> {
    const rows = await searchPublicProjects(this.em, search, starredBy(actor));
    return rows.map((row) => ({
      id: row.id,
      project: row.slug,
      name: row.name,
      description: row.description,
      owner: row.owner,
      visibility: row.visibility,
      modelCount: row.model_count,
      modelNames: row.model_names,
      totalBytes: Number(row.total_bytes),
      starCount: row.star_count,
      ...(row.license ? { license: row.license } : {}),
      updatedAt: new Date(row.updated_at).toISOString(),
    }));
  }
}
