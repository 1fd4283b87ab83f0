import { OwnerPath } from '../datasets/dataset.schemas.ts';
import { defineRoute } from '../http/define-route.ts';
import {
  ProjectClone,
  ProjectCloned,
  ProjectCreate,
  ProjectCreated,
  ProjectDeleted,
  ProjectList,
  ProjectListQuery,
  ProjectPatch,
  ProjectPatched,
  ProjectPath,
  ProjectRead,
  ProjectReadQuery,
} from './project.schemas.ts';

export const listProjects = defineRoute({
  method: 'GET',
  path: '/api/projects/:owner',
  tag: 'Projects',
  summary: "The owner's public projects, plus private ones when the key belongs to that workspace",
  description: 'Anonymous callers see public projects. Most recently updated first.',
  auth: 'optional',
  limit: 'default',
  request: { params: OwnerPath, query: ProjectListQuery },
  response: { status: 200, description: 'Projects', schema: ProjectList },
  errors: [404],
  handler: (ctx, { params, query }) => ctx.state.services.projects.list(ctx.state.actor, params.owner, query),
});

export const readProject = defineRoute({
  method: 'GET',
  path: '/api/projects/:owner/:project',
  tag: 'Projects',
  summary: 'One project with summaries of its models (status, metrics, epochs, weights, train args)',
  description:
    'Public projects can be read anonymously; a private project the key cannot view is 404. Models newest first.',
  auth: 'optional',
  limit: 'default',
  request: { params: ProjectPath, query: ProjectReadQuery },
  response: { status: 200, description: 'The project', schema: ProjectRead },
  errors: [404],
  handler: (ctx, { params, query }) =>
    ctx.state.services.projects.read(ctx.state.actor, params.owner, params.project, query.search),
});

export const createProject = defineRoute({
  method: 'POST',
  path: '/api/projects',
  tag: 'Projects',
  summary: "Create a project in the key's workspace (editor or above)",
  description:
    "`owner` must be the key's own workspace (else 403). A URL name already used in the workspace, including by a project in trash, is 409.",
  auth: 'key',
  limit: 'default',
  request: { body: ProjectCreate },
  documentBody: true,
  response: { status: 201, description: 'Created', schema: ProjectCreated },
  errors: [403, 409],
  handler: (ctx, { body }) => ctx.state.services.projects.create(ctx.state.actor, body),
});

export const updateProject = defineRoute({
  method: 'PATCH',
  path: '/api/projects/:owner/:project',
  tag: 'Projects',
  summary: 'Change project settings; a new name changes the URL name too',
  description:
    'Editor access, except `starred` alone, which any viewer may set for themselves. A rename answers the new URL name (409 when taken).',
  auth: 'key',
  limit: 'default',
  request: { params: ProjectPath, body: ProjectPatch },
  documentBody: true,
  response: { status: 200, description: 'Updated', schema: ProjectPatched },
  errors: [403, 404, 409],
  handler: (ctx, { params, body }) =>
    ctx.state.services.projects.update(ctx.state.actor, params.owner, params.project, body),
});

export const deleteProject = defineRoute({
  method: 'DELETE',
  path: '/api/projects/:owner/:project',
  tag: 'Projects',
  summary: 'Move a project and its models to trash (recoverable for 30 days)',
  description:
    'The models go with it (cascadedModels) and come back when the project is restored. Deployments of those models are deleted for good ' +
    '(not restored); 502 means that cleanup did not finish and the models stay in trash until it succeeds.',
  auth: 'key',
  limit: 'default',
  request: { params: ProjectPath },
  response: { status: 200, description: 'In trash', schema: ProjectDeleted },
  errors: [403, 404, 502],
  handler: (ctx, { params }) => ctx.state.services.projects.remove(ctx.state.actor, params.owner, params.project),
});

export const cloneProject = defineRoute({
  method: 'POST',
  path: '/api/projects/:owner/:project/clone',
  tag: 'Projects',
  summary: "Copy a project the key can view, with its completed models, into the key's workspace (editor or above)",
  description:
    "The source is a project of the key's workspace or a public one; a private project of another workspace is 404. `owner` must be the key's own " +
    'workspace (else 403). Only models with status completed are copied, with their URL names; their weights are shared with the source, not copied. ' +
    'Default URL name `<source>-copy` (then `-copy-2`…), default name `<source name> (copy)`; a `project` already used in the workspace, including in trash, is 409. ' +
    'The copy is private unless `visibility` says otherwise.',
  auth: 'key',
  limit: 'default',
  request: { params: ProjectPath, body: ProjectClone },
  response: { status: 201, description: 'The copy', schema: ProjectCloned },
  errors: [403, 404, 409],
  handler: (ctx, { params, body }) =>
    ctx.state.services.projects.clone(ctx.state.actor, params.owner, params.project, body),
});

export const projectRoutes = [listProjects, createProject, readProject, updateProject, deleteProject, cloneProject];
