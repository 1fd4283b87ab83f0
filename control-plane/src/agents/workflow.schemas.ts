import { REGIONS } from '@vp/config';
import { z } from 'zod';
import { Handle } from '../account/handle.ts';
import { ObjectId } from '../db/ids.ts';
import { int } from '../validation/integers.ts';
import { BLOCK_TYPES, ENDING_BLOCK_TYPES, STARTING_BLOCK_TYPES } from './workflow-graph.ts';

export const MAX_WORKFLOWS_LISTED = 100;
export const MAX_NODES = 500;
export const MAX_EDGES = 2000;
export const MAX_GRAPH_CHARS = 500_000;

const Region = z.enum(REGIONS);
const Timestamp = z.iso.datetime();
const GraphId = z.string().min(1).max(128);
const BlockType = z.string().max(64);

const Owner = Handle.optional().meta({
  description:
    "Workspace to act on: the key's own workspace (the default) or a team workspace where the key's acting user is a member; " +
    'that membership role decides what is allowed. Any other workspace is 404. With id, the agent is found in its own workspace, ' +
    'which must be one of those (and equal owner when given), else 404.',
});

const Node = z.object({
  id: GraphId,
  type: BlockType.meta({ description: 'agent for the blocks of the ultralytics clients; free text' }),
  position: z.object({ x: z.number(), y: z.number() }),
  data: z.object({
    label: z.string().max(256),
    type: BlockType.meta({
      description:
        `The block: ${BLOCK_TYPES.join(', ')} as the ultralytics clients use them (other text is kept as is). ` +
        `${STARTING_BLOCK_TYPES.join(', ')} start a chain without an input; ${ENDING_BLOCK_TYPES.join(', ')} end one`,
    }),
    config: z.record(z.string(), z.unknown()).default({}).meta({ description: 'Block settings; free JSON object' }),
  }),
});
const Edge = z.object({ id: GraphId, source: GraphId, target: GraphId });

export const Graph = z
  .object({
    nodes: z.array(Node).max(MAX_NODES),
    edges: z.array(Edge).max(MAX_EDGES),
    templateId: z.string().max(128).nullable().optional(),
  })
  .refine(
    (graph) => JSON.stringify(graph).length <= MAX_GRAPH_CHARS,
    `is longer than ${MAX_GRAPH_CHARS} characters serialized`,
  )
  .meta({
    description:
      `Up to ${MAX_NODES} nodes and ${MAX_EDGES} edges, ${MAX_GRAPH_CHARS} characters serialized. ` +
      'Refused (400): duplicate node or edge ids, an edge to or from a missing node, a block with more than one input, a cycle.',
  });

export const WorkflowListItem = z.object({
  id: ObjectId,
  username: Handle.meta({ description: 'Handle of the owning workspace' }),
  name: z.string(),
  version: z.number().int(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
/** A stored graph as read back: templateId is "" when it was not saved. */
const GraphRead = z.object({ nodes: z.array(Node), edges: z.array(Edge), templateId: z.string() });

export const WorkflowListQuery = z.object({
  owner: Owner,
  id: ObjectId.optional().meta({ description: 'List only this agent, with its graph; search is then ignored' }),
  search: z.string().trim().max(200).optional().meta({ description: 'Name contains this text (case ignored)' }),
});
export const WorkflowList = z.object({
  workflows: z
    .array(
      WorkflowListItem.extend({
        graph: GraphRead.optional().meta({ description: 'Only when one agent is read by id' }),
      }),
    )
    .meta({ description: `Up to ${MAX_WORKFLOWS_LISTED}, most recently updated first; with id, that one agent` }),
  total: z.number().int().meta({ description: 'Agents matching, including any beyond the first 100' }),
  region: Region,
});

export const OwnerQuery = z.object({ owner: Owner });

export const WorkflowSave = z
  .object({
    id: ObjectId.optional().meta({ description: 'The agent to update; leave out to create' }),
    name: z.string().trim().min(1).max(128),
    graph: Graph,
    version: int().min(0).meta({ description: '0 creates; an update sends the version last returned for this agent' }),
  })
  .superRefine((body, ctx) => {
    if (body.version === 0 && body.id)
      ctx.addIssue({ code: 'custom', path: ['id'], message: 'version 0 creates a new agent; leave out id' });
    if (body.version > 0 && !body.id)
      ctx.addIssue({ code: 'custom', path: ['id'], message: 'required to update an agent (version above 0)' });
  });

export const GraphProblem = z.object({
  id: z.string().meta({ description: 'The block flagged; "" for the agent as a whole' }),
  label: z.string().meta({ description: 'The block\'s label; "" for the agent as a whole' }),
  message: z.string(),
});
export const WorkflowSaved = z.object({
  id: ObjectId,
  version: z.number().int(),
  errors: z.array(GraphProblem).meta({ description: 'Problems the canvas would flag; the agent is saved regardless' }),
  region: Region,
});

export const WorkflowDeleteQuery = OwnerQuery.extend({ id: ObjectId });
export const WorkflowDeleted = z.object({ success: z.literal(true), id: ObjectId });
