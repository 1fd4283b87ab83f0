import type { EntityManager } from '@mikro-orm/postgresql';
import type { Project } from '../projects/project.entity.ts';
import { Model } from './model.entity.ts';

/**
 * A copy of a model record in `project` (project and model clones). The weights are shared, not copied:
 * the copy points at the same file, which is deleted only once no model refers to it. Stars and the
 * per-image validation analysis (rows about the source's training images, and their extremes) stay with the source.
 */
export function copyModel(
  em: EntityManager,
  source: Model,
  project: Project,
  into: { slug: string; name?: string; description?: string },
): Model {
  const sameWorkspace = project.workspace.id === source.workspace.id;
  return em.create(Model, {
    workspace: project.workspace,
    project,
    slug: into.slug,
    name: into.name ?? source.name,
    description: into.description ?? source.description,
    // Another workspace's dataset is not linked: the copy would show up in that dataset's model list.
    dataset: sameWorkspace ? source.dataset : null,
    datasetSlug: source.datasetSlug,
    task: source.task,
    status: source.status,
    epochs: source.epochs,
    bestEpoch: source.bestEpoch,
    bestFitness: source.bestFitness,
    metrics: source.metrics,
    startedAt: source.startedAt,
    completedAt: source.completedAt,
    metadata: source.metadata,
    trainArgs: source.trainArgs,
    trainResults: source.trainResults,
    plots: source.plots,
    classNames: source.classNames,
    computeCost: source.computeCost,
    version: source.version,
    color: source.color,
    license: source.license,
    trainingError: source.trainingError,
    fileKey: source.fileKey,
    fileBytes: source.fileBytes,
    fileContentType: source.fileContentType,
    fileMd5: source.fileMd5,
    fileChecksum: source.fileChecksum,
  });
}
