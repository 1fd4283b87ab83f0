import { defineRoute } from '../http/define-route.ts';
import { classStatsRoute } from './class-stats.routes.ts';
import { ClassDeleteBody, ClassesDeleted, ClassesMerged, ClassMergeBody } from './class.schemas.ts';
import { DatasetPath } from './dataset.schemas.ts';

export const mergeClasses = defineRoute({
  method: 'POST',
  path: '/api/datasets/:owner/:dataset/classes/merge',
  tag: 'Datasets',
  summary: 'Reassign the annotations of source classes to a target class and remove the sources',
  description: 'Higher class IDs shift down. Not idempotent: re-read the dataset before another class operation.',
  auth: 'key',
  limit: 'default',
  request: { params: DatasetPath, body: ClassMergeBody },
  documentBody: true,
  response: { status: 200, description: 'Merged', schema: ClassesMerged },
  errors: [403, 404],
  handler: (ctx, { params, body }) =>
    ctx.state.services.classes.merge(ctx.state.actor, params.owner, params.dataset, body),
});

export const deleteClasses = defineRoute({
  method: 'POST',
  path: '/api/datasets/:owner/:dataset/classes/delete',
  tag: 'Datasets',
  summary: 'Delete classes and their annotations',
  description: 'Remaining class IDs shift down. Not idempotent: re-read the dataset before another class operation.',
  auth: 'key',
  limit: 'default',
  request: { params: DatasetPath, body: ClassDeleteBody },
  documentBody: true,
  response: { status: 200, description: 'Deleted', schema: ClassesDeleted },
  errors: [403, 404],
  handler: (ctx, { params, body }) =>
    ctx.state.services.classes.delete(ctx.state.actor, params.owner, params.dataset, body),
});

export const classRoutes = [mergeClasses, deleteClasses, classStatsRoute];
