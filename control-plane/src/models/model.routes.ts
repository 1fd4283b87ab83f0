import { defineRoute } from '../http/define-route.ts';
import { ProjectPath } from '../projects/project.schemas.ts';
import {
  ModelClone,
  ModelCreate,
  ModelCreated,
  ModelDeleted,
  ModelFiles,
  ModelList,
  ModelListQuery,
  ModelPatch,
  ModelPatched,
  ModelPath,
  ModelRead,
  ModelReadQuery,
} from './model.schemas.ts';
import { ModelSimilarImages, ModelSimilarQuery, MODEL_SIMILAR_LIMIT } from './model-similar.schemas.ts';

export const listModels = defineRoute({
  method: 'GET',
  path: '/api/models/:owner/:project',
  tag: 'Models',
  summary: "A project's models, newest first",
  description: 'Models of a public project can be listed anonymously; a private project the key cannot view is 404.',
  auth: 'optional',
  limit: 'default',
  request: { params: ProjectPath, query: ModelListQuery },
  response: { status: 200, description: 'Models', schema: ModelList },
  errors: [404],
  handler: (ctx, { params, query }) =>
    ctx.state.services.models.list(ctx.state.actor, params.owner, params.project, query),
});

export const readModel = defineRoute({
  method: 'GET',
  path: '/api/models/:owner/:project/:model',
  tag: 'Models',
  summary: 'One model, or with analysis=1 its per-image validation analysis',
  description:
    'Models of public projects can be read anonymously; a model of a private project the key cannot view is 404.',
  auth: 'optional',
  limit: 'default',
  request: { params: ModelPath, query: ModelReadQuery },
  response: { status: 200, description: 'The model (or { analysis })', schema: ModelRead },
  errors: [404],
  handler: (ctx, { params, query }) => ctx.state.services.models.read(ctx.state.actor, params, query),
});

export const createModel = defineRoute({
  method: 'POST',
  path: '/api/models',
  tag: 'Models',
  summary: "Create an untrained model record in a project of the key's workspace (editor or above)",
  description:
    "`owner` must be the key's own workspace (else 403); an unknown `project` is 404. Without `model` a random readable URL name is given; " +
    '`name` is accepted only together with `model` (else 400). A `model` already used in the project, including in trash, is 409. ' +
    'To attach weights: POST /api/upload/signed-url with assetType models and this id as assetId, PUT the file, then POST /api/upload/complete.',
  auth: 'key',
  limit: 'default',
  request: { body: ModelCreate },
  documentBody: true,
  response: { status: 201, description: 'Created', schema: ModelCreated },
  errors: [403, 404, 409],
  handler: (ctx, { body }) => ctx.state.services.models.create(ctx.state.actor, body),
});

export const updateModel = defineRoute({
  method: 'PATCH',
  path: '/api/models/:owner/:project/:model',
  tag: 'Models',
  summary: 'Change model fields, or move it to another project with projectId',
  description:
    'Editor access, except `starred` alone, which any viewer may set for themselves. A new name changes the URL name too (409 when taken in the project). ' +
    '`projectId`, sent alone, moves the model to that project of the same owner (404 otherwise); when its URL name is taken there it gets ' +
    '`<model>-2`, `-3`… and `renamed` is true. A model whose status is training cannot move (409).',
  auth: 'key',
  limit: 'default',
  request: { params: ModelPath, body: ModelPatch },
  documentBody: true,
  response: { status: 200, description: 'Updated', schema: ModelPatched },
  errors: [403, 404, 409],
  handler: (ctx, { params, body }) => ctx.state.services.models.update(ctx.state.actor, params, body),
});

export const deleteModel = defineRoute({
  method: 'DELETE',
  path: '/api/models/:owner/:project/:model',
  tag: 'Models',
  summary: 'Move a model to trash (recoverable for 30 days)',
  description: 'Deployments using the model, including pending replacements, are deleted for good.',
  auth: 'key',
  limit: 'default',
  request: { params: ModelPath },
  response: { status: 200, description: 'In trash', schema: ModelDeleted },
  errors: [403, 404],
  handler: (ctx, { params }) => ctx.state.services.models.remove(ctx.state.actor, params),
});

export const modelFiles = defineRoute({
  method: 'GET',
  path: '/api/models/:owner/:project/:model/files',
  tag: 'Models',
  summary: 'The weights file with a download URL valid for 15 minutes',
  description:
    'Empty until weights are uploaded. The download is named `<model>` plus the uploaded extension (`.pt` by default).',
  auth: 'key',
  jobKeys: true,
  limit: 'download',
  request: { params: ModelPath },
  response: { status: 200, description: 'Files', schema: ModelFiles },
  errors: [404],
  handler: (ctx, { params }) => ctx.state.services.models.files(ctx.state.actor, params),
});

export const cloneModel = defineRoute({
  method: 'POST',
  path: '/api/models/:owner/:project/:model/clone',
  tag: 'Models',
  summary: "Copy a model the key can view into an existing project of the key's workspace (editor or above)",
  description:
    "The source is a model of the key's workspace or of a public project. `owner` must be the key's own workspace (else 403); an unknown `project` is 404. " +
    'The record is copied with its status, metrics and settings; the weights are shared with the source, not copied. Default URL name: the source one, ' +
    'else `<model>-copy`, `-copy-2`… while taken in the project; a `model` already used there, including in trash, is 409.',
  auth: 'key',
  limit: 'default',
  request: { params: ModelPath, body: ModelClone },
  response: { status: 201, description: 'The copy', schema: ModelCreated },
  errors: [403, 404, 409],
  handler: (ctx, { params, body }) => ctx.state.services.models.clone(ctx.state.actor, params, body),
});

export const modelSimilarImages = defineRoute({
  method: 'GET',
  path: '/api/models/:owner/:project/:model/similar-images',
  tag: 'Models',
  summary: `Up to ${MODEL_SIMILAR_LIMIT} images like the validation images this model scored worst on, from other datasets`,
  description:
    "What to label next: images from public datasets and the datasets of your workspace and teams that look like the worst cohort of the model's " +
    "per-image validation results (GET ?analysis=1), nearest by this appliance's image embedder, each worst image's nearest in turn. " +
    'Images whose content the training dataset holds are left out (its own images and their copies elsewhere), and so are the worst images themselves. ' +
    "The worst images' vectors come from the analyses of datasets the key can see (POST /api/datasets/{owner}/{dataset}/embeddings of the training dataset): " +
    'worst images without one are skipped, and when none has one the answer is 404. An empty list when the training recorded no per-image results, ' +
    'or when none of the given hashes is in the worst cohort. 503: no embedding model on this appliance.',
  auth: 'key',
  limit: 'clustering',
  request: { params: ModelPath, query: ModelSimilarQuery },
  response: { status: 200, description: 'Images like the worst ones', schema: ModelSimilarImages },
  errors: [400, 404, 503],
  handler: (ctx, { params, query }) => ctx.state.services.modelSimilar.similar(ctx.state.actor, params, query),
});

export const modelRoutes = [
  listModels,
  createModel,
  readModel,
  updateModel,
  deleteModel,
  modelFiles,
  modelSimilarImages,
  cloneModel,
];
