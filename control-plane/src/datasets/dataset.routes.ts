import { defineRoute } from '../http/define-route.ts';
import {
  DatasetCreate,
  DatasetCreated,
  DatasetDeleted,
  DatasetList,
  DatasetListQuery,
  DatasetModels,
  DatasetPatch,
  DatasetPatched,
  DatasetPath,
  DatasetRead,
  OwnerPath,
} from './dataset.schemas.ts';

export const listDatasets = defineRoute({
  method: 'GET',
  path: '/api/datasets/:owner',
  tag: 'Datasets',
  summary: "The owner's public datasets, plus private ones when the key belongs to that workspace",
  description: 'Anonymous callers see public datasets. Most recently updated first.',
  auth: 'optional',
  limit: 'default',
  request: { params: OwnerPath, query: DatasetListQuery },
  response: { status: 200, description: 'Datasets', schema: DatasetList },
  errors: [404],
  handler: (ctx, { params, query }) => ctx.state.services.datasets.list(ctx.state.actor, params.owner, query),
});

export const readDataset = defineRoute({
  method: 'GET',
  path: '/api/datasets/:owner/:dataset',
  tag: 'Datasets',
  summary: 'One dataset: class names, splits, counts, versions, source and metadata',
  description: 'Public datasets can be read anonymously; a private dataset the key cannot view is 404.',
  auth: 'optional',
  limit: 'default',
  request: { params: DatasetPath },
  response: { status: 200, description: 'The dataset', schema: DatasetRead },
  errors: [404],
  handler: async (ctx, { params }) => ({
    dataset: await ctx.state.services.datasets.read(ctx.state.actor, params.owner, params.dataset),
  }),
});

export const createDataset = defineRoute({
  method: 'POST',
  path: '/api/datasets',
  tag: 'Datasets',
  summary: "Create a dataset in the key's workspace (editor or above)",
  description: 'A URL name already used in the workspace, including by a dataset in trash, is 409.',
  auth: 'key',
  limit: 'default',
  request: { body: DatasetCreate },
  documentBody: true,
  response: { status: 201, description: 'Created', schema: DatasetCreated },
  errors: [403, 409],
  handler: (ctx, { body }) => ctx.state.services.datasets.create(ctx.state.actor, body),
});

export const updateDataset = defineRoute({
  method: 'PATCH',
  path: '/api/datasets/:owner/:dataset',
  tag: 'Datasets',
  summary: 'Change dataset settings; a new name changes the URL name too',
  description:
    'Editor access, except `starred` alone, which any viewer may set for themselves. A rename answers the new URL name. ' +
    'The task changes only while the dataset has no annotations (else 409).',
  auth: 'key',
  limit: 'default',
  request: { params: DatasetPath, body: DatasetPatch },
  documentBody: true,
  response: { status: 200, description: 'Updated', schema: DatasetPatched },
  errors: [403, 404, 409],
  handler: (ctx, { params, body }) =>
    ctx.state.services.datasets.update(ctx.state.actor, params.owner, params.dataset, body),
});

export const deleteDataset = defineRoute({
  method: 'DELETE',
  path: '/api/datasets/:owner/:dataset',
  tag: 'Datasets',
  summary: 'Move a dataset to trash (recoverable for 30 days)',
  auth: 'key',
  limit: 'default',
  request: { params: DatasetPath },
  response: { status: 200, description: 'In trash', schema: DatasetDeleted },
  errors: [403, 404],
  handler: (ctx, { params }) => ctx.state.services.datasets.remove(ctx.state.actor, params.owner, params.dataset),
});

export const datasetModels = defineRoute({
  method: 'GET',
  path: '/api/datasets/:owner/:dataset/models',
  tag: 'Datasets',
  summary: 'Models trained on the dataset',
  auth: 'optional',
  limit: 'default',
  request: { params: DatasetPath },
  response: { status: 200, description: 'Models', schema: DatasetModels },
  errors: [404],
  handler: (ctx, { params }) => ctx.state.services.datasets.models(ctx.state.actor, params.owner, params.dataset),
});

export const datasetRoutes = [listDatasets, createDataset, readDataset, updateDataset, deleteDataset, datasetModels];
