import { defineRoute } from '../http/define-route.ts';
import { DatasetClone, DatasetCloned } from './clone.schemas.ts';
import { DatasetPath } from './dataset.schemas.ts';

export const cloneDataset = defineRoute({
  method: 'POST',
  path: '/api/datasets/:owner/:dataset/clone',
  tag: 'Datasets',
  summary: "Copy a dataset the key can view, with its images and labels, into the key's workspace (editor or above)",
  description:
    "The source is a dataset of the key's workspace or a public one; a private dataset of another workspace is 404. " +
    "`owner` must be the key's own workspace (else 403). Classes (names and colours), task, pose shape, metadata, tags and every image with its " +
    'labels, split and metadata are copied; saved versions and stars are not. The copy is private unless `visibility` says otherwise. ' +
    'Default URL name `<source>-copy` (then `-copy-2`, `-copy-3`… while taken), default name `<source name> (copy)`; a `dataset` already used ' +
    'in the workspace, including in trash, is 409. Image bytes are shared: a copy within the workspace stores nothing new; a copy from another ' +
    "workspace stores each distinct file once more, counted in the storage of the key's workspace. Datasets backed by connected storage are 409.",
  auth: 'key',
  limit: 'default',
  request: { params: DatasetPath, body: DatasetClone },
  response: { status: 201, description: 'The copy', schema: DatasetCloned },
  errors: [403, 404, 409],
  handler: (ctx, { params, body }) =>
    ctx.state.services.clones.clone(ctx.state.actor, params.owner, params.dataset, body),
});

export const cloneRoutes = [cloneDataset];
