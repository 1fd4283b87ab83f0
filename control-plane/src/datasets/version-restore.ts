import type { EntityManager } from '@mikro-orm/postgresql';
import { queueFaceBlur } from '../faces/face-blur.job.ts';
import { insertImages } from '../images/image-intake.ts';
import { deleteAllImagesNotInVersion } from '../images/image.store.ts';
import { checkLabels } from '../images/image-labels.ts';
import { classColors, classKey } from './class-names.ts';
import { recount } from './dataset-counters.ts';
import { versionImagePages } from './dataset-export.ts';
import type { DatasetVersion } from './dataset-version.entity.ts';
import type { Dataset } from './dataset.entity.ts';
import { fieldsOf } from './version-snapshot.ts';

/**
 * Rebuilds the dataset's images, labels and classes as the version keeps them. Every image row is
 * replaced by a new one (new id) pointing at the same bytes, stored by workspace and hash: nothing is
 * copied, and no hash lock is needed, since the version's own rows keep any release away from those
 * bytes. Run in a transaction holding the dataset lock; the counters are recounted. Returns the files
 * of removed images that the version does not use, for the caller to release after commit.
 */
export async function restoreVersion(
  em: EntityManager,
  dataset: Dataset,
  version: DatasetVersion,
): Promise<Array<{ hash: string; ext: string }>> {
  const dropped = await deleteAllImagesNotInVersion(em, dataset.id, version.id);
  const fields = fieldsOf(version);
  dataset.classColors = colorsByName(version.classNames, dataset);
  dataset.classNames = [...version.classNames];
  dataset.task = fields.task;
  dataset.kptShape = fields.kptShape;
  await em.flush();
  for await (const page of versionImagePages(em, version.id)) {
    // Labels go through the same checks and writer as any new image, against the classes just restored.
    const rows = page.map((image) => ({
      file: {
        hash: image.hash,
        ext: image.ext,
        width: image.width,
        height: image.height,
        channels: image.channels,
        bytes: Number(image.bytes),
        error: image.error,
      },
      name: image.name,
      split: image.split,
      metadata: image.metadata,
      checked: checkLabels(dataset, image.labels),
      // A version keeps no record of it: the face blur job checks them again (blurred ones have no face left).
      facesBlurred: false,
    }));
    await insertImages(em, dataset, rows);
  }
  await recount(em, dataset.id);
  if (dataset.blurFaces) await queueFaceBlur(em, { id: dataset.id, workspaceId: dataset.workspace.id });
  return dropped;
}

/** A restored class keeps the colour its name has now; a class that is gone gets the palette's colour back. */
function colorsByName(names: string[], dataset: Dataset): string[] {
  const current = classColors(dataset.classNames, dataset.classColors);
  const byName = new Map(dataset.classNames.map((name, index) => [classKey(name), current[index]]));
  const palette = classColors(names, []);
  return names.map((name, index) => byName.get(classKey(name)) ?? palette[index]);
}
