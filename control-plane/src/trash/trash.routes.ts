import { defineRoute } from '../http/define-route.ts';
import {
  TrashDeleteBody,
  TrashDeleted,
  TrashList,
  TrashListQuery,
  TrashRestored,
  TrashTarget,
} from './trash.schemas.ts';

export const listTrash = defineRoute({
  method: 'GET',
  path: '/api/trash',
  tag: 'Trash',
  summary: "The key's workspace trash: projects, datasets and models, most recently deleted first",
  description:
    'Any member. Models deleted with their project are listed under the project (modelCount), not on their own. ' +
    'With id (type project or model): that item alone, with resources: the models and deployments its restore or deletion affects.',
  auth: 'key',
  limit: 'default',
  request: { query: TrashListQuery },
  response: { status: 200, description: 'A page of trash items', schema: TrashList },
  errors: [403, 404],
  handler: (ctx, { query }) => ctx.state.services.trash.list(ctx.state.actor, query),
});

export const restoreFromTrash = defineRoute({
  method: 'POST',
  path: '/api/trash',
  tag: 'Trash',
  summary: 'Restore a project, dataset or model (editor or above)',
  description:
    'A project brings back the models deleted with it (restoredModels); a model deleted on its own earlier stays in trash. ' +
    'A model whose project is in trash is restored with the project: 409. Deployments are not restored.',
  auth: 'key',
  limit: 'default',
  request: { body: TrashTarget },
  response: { status: 200, description: 'Restored', schema: TrashRestored },
  errors: [403, 404, 409],
  handler: (ctx, { body }) => ctx.state.services.trash.restore(ctx.state.actor, body),
});

export const deleteFromTrash = defineRoute({
  method: 'DELETE',
  path: '/api/trash',
  tag: 'Trash',
  summary: 'Delete one item (editor or above) or all: true (admin or above) permanently',
  description:
    'Irreversible: the rows go (a project with all its models), then the files nothing refers to any more. The URL name becomes free. ' +
    'A dataset an ingest is still working on: 409.',
  auth: 'key',
  limit: 'default',
  request: { body: TrashDeleteBody },
  response: { status: 200, description: 'Deleted', schema: TrashDeleted },
  errors: [403, 404, 409],
  handler: (ctx, { body }) => {
    ctx.state.audit = { resource: 'all' in body ? 'trash/all' : `trash/${body.type}/${body.id}` };
    return ctx.state.services.trash.remove(ctx.state.actor, body);
  },
});

export const trashRoutes = [listTrash, restoreFromTrash, deleteFromTrash];
