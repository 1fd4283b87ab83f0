import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import type { Actor } from '../auth/actor.ts';
import {
  deleteAnnotationsOfClasses,
  reassignAnnotationClasses,
  shiftAnnotationClasses,
} from '../images/annotation.store.ts';
import { refreshLabelSummariesFrom } from '../images/image.store.ts';
import { Invalid } from '../http/errors.ts';
import { classColors, colorMap } from './class-names.ts';
import { findDataset } from './dataset-access.ts';
import { lockDataset, recount } from './dataset-counters.ts';
import { Dataset } from './dataset.entity.ts';
import type { ClassesDeleted, ClassesMerged } from './class.schemas.ts';

/**
 * Merging and deleting classes. Class IDs are positions in the class list, so removing classes shifts
 * every higher ID down; the annotations, the images' class lists and the counters are rewritten in the
 * same transaction, under the dataset lock.
 */
export class ClassService {
  private readonly em: EntityManager;

  constructor(em: EntityManager) {
    this.em = em;
  }

  async merge(
    actor: Actor,
    owner: string,
    slug: string,
    body: { sourceClassIds: number[]; targetClassId: number },
  ): Promise<z.input<typeof ClassesMerged>> {
    const { dataset } = await findDataset(this.em, actor, owner, slug, 'edit');
    return this.em.transactional(async (em) => {
      const current = await this.locked(em, dataset.id);
      const sources = checkClassIds(current, body.sourceClassIds, 'sourceClassIds');
      checkClassIds(current, [body.targetClassId], 'targetClassId');
      if (sources.includes(body.targetClassId)) throw Invalid('sourceClassIds: must not include targetClassId');
      await reassignAnnotationClasses(em, dataset.id, sources, body.targetClassId);
      await this.removeClasses(em, current, sources);
      const shifted = body.targetClassId - sources.filter((id) => id < body.targetClassId).length;
      const summary = { mergedClassIds: sources, targetClassId: shifted };
      return {
        success: true as const,
        classNames: current.classNames,
        classColors: colorMap(classColors(current.classNames, current.classColors)),
        ...summary,
        summary,
      };
    });
  }

  async delete(
    actor: Actor,
    owner: string,
    slug: string,
    body: { classIds: number[] },
  ): Promise<z.input<typeof ClassesDeleted>> {
    const { dataset } = await findDataset(this.em, actor, owner, slug, 'edit');
    return this.em.transactional(async (em) => {
      const current = await this.locked(em, dataset.id);
      const classIds = checkClassIds(current, body.classIds, 'classIds');
      const deleted = await deleteAnnotationsOfClasses(em, dataset.id, classIds);
      await this.removeClasses(em, current, classIds);
      const summary = { deletedClassIds: classIds, deletedAnnotations: deleted };
      return {
        success: true as const,
        classNames: current.classNames,
        classColors: colorMap(classColors(current.classNames, current.classColors)),
        ...summary,
        summary,
      };
    });
  }

  private async locked(em: EntityManager, datasetId: string): Promise<Dataset> {
    await lockDataset(em, datasetId);
    return em.findOneOrFail(Dataset, datasetId, { refresh: true });
  }

  /** Drops classes that no annotation uses any more, shifting higher IDs down, and brings images and counters in line. */
  private async removeClasses(em: EntityManager, dataset: Dataset, removed: number[]): Promise<void> {
    const lowest = Math.min(...removed);
    await shiftAnnotationClasses(em, dataset.id, removed, lowest, dataset.classNames.length - 1);
    // Only images that had one of the shifted or removed classes change.
    await refreshLabelSummariesFrom(em, dataset.id, lowest);
    const drop = new Set(removed);
    const colors = classColors(dataset.classNames, dataset.classColors);
    dataset.classNames = dataset.classNames.filter((_, id) => !drop.has(id));
    dataset.classColors = colors.filter((_, id) => !drop.has(id));
    await em.flush();
    await recount(em, dataset.id);
  }
}

/** Distinct, in range, sorted. */
function checkClassIds(dataset: Dataset, ids: number[], field: string): number[] {
  const unique = [...new Set(ids)].sort((a, b) => a - b);
  const outside = unique.find((id) => id >= dataset.classNames.length);
  if (outside !== undefined)
    throw Invalid(`${field}: class ${outside} does not exist; the dataset has ${dataset.classNames.length} classes`);
  return unique;
}
