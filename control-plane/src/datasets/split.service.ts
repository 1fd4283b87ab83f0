import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import type { Actor } from '../auth/actor.ts';
import { shuffleImageSplits } from '../images/image.store.ts';
import { findDataset } from './dataset-access.ts';
import { lockDataset, recount } from './dataset-counters.ts';
import { Dataset } from './dataset.entity.ts';
import type { Redistributed } from './split.schemas.ts';

export class SplitService {
  private readonly em: EntityManager;

  constructor(em: EntityManager) {
    this.em = em;
  }

  /**
   * Shuffles every image into train/val/test by the given percentages (rounded to whole images). Only
   * images whose split changes are written.
   */
  async redistribute(
    actor: Actor,
    owner: string,
    slug: string,
    shares: { train: number; val: number; test: number },
  ): Promise<z.input<typeof Redistributed>> {
    const { dataset } = await findDataset(this.em, actor, owner, slug, 'edit');
    return this.em.transactional(async (em) => {
      await lockDataset(em, dataset.id);
      const moved = await shuffleImageSplits(em, dataset.id, shares.train, shares.train + shares.val);
      await recount(em, dataset.id);
      const after = await em.findOneOrFail(Dataset, dataset.id, { refresh: true });
      return {
        success: true as const,
        splits: { train: after.trainCount, val: after.valCount, test: after.testCount, labeled: after.labeledCount },
        modified: moved,
      };
    });
  }
}
