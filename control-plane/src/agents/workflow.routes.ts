import { defineRoute } from '../http/define-route.ts';
import {
  OwnerQuery,
  WorkflowDeleted,
  WorkflowDeleteQuery,
  WorkflowList,
  WorkflowListQuery,
  WorkflowSave,
  WorkflowSaved,
} from './workflow.schemas.ts';

export const listWorkflows = defineRoute({
  method: 'GET',
  path: '/api/workflows',
  tag: 'Agents',
  summary: 'Saved agents of a workspace, or one agent with its graph (id)',
  description:
    '{ workflows, total, region }: up to 100 agents, most recently updated first, optionally filtered by name (search); ' +
    'with id, that one agent with its graph (templateId "" when none was saved). Any member role may read.',
  auth: 'key',
  limit: 'default',
  request: { query: WorkflowListQuery },
  response: { status: 200, description: 'Agents, or one agent', schema: WorkflowList },
  errors: [404],
  handler: async (ctx, { query }) => {
    const { services, actor } = ctx.state;
    if (query.id) return services.workflows.read(actor, query.owner, query.id);
    return services.workflows.list(actor, query.owner, query.search);
  },
});

export const saveWorkflow = defineRoute({
  method: 'PUT',
  path: '/api/workflows',
  tag: 'Agents',
  summary: 'Create (version 0) or update (id and the last-returned version) an agent (editor or above)',
  description:
    'Answers 200 with the new version for both creates and updates. An update whose version is not the current one is 409 ' +
    '(the message names the current version); of two saves sent with the same version exactly one succeeds. ' +
    'A graph that cannot run is 400: duplicate node or edge ids, an edge to or from a missing node, a block with more than one input, a cycle. ' +
    'Problems the canvas would flag are returned in errors ({ id, label, message } of the block) and the agent is saved regardless: no blocks, ' +
    'a block without a label, a block connected to nothing (an Export stands alone), a block other than Dataset, Image or Export without an input, ' +
    'an input into an Image block, a block after an Export, Output, Slack or Webhook block.',
  auth: 'key',
  limit: 'default',
  request: { query: OwnerQuery, body: WorkflowSave },
  documentBody: true,
  response: { status: 200, description: 'Saved', schema: WorkflowSaved },
  errors: [403, 404, 409],
  handler: (ctx, { query, body }) => ctx.state.services.workflows.save(ctx.state.actor, query.owner, body),
});

export const deleteWorkflow = defineRoute({
  method: 'DELETE',
  path: '/api/workflows',
  tag: 'Agents',
  summary: 'Delete an agent for good (editor or above); agents never enter trash',
  auth: 'key',
  limit: 'default',
  request: { query: WorkflowDeleteQuery },
  response: { status: 200, description: 'Deleted', schema: WorkflowDeleted },
  errors: [403, 404],
  handler: (ctx, { query }) => ctx.state.services.workflows.remove(ctx.state.actor, query.owner, query.id),
});

export const workflowRoutes = [listWorkflows, saveWorkflow, deleteWorkflow];
