import { Invalid } from '../http/errors.ts';

/** The parts of a graph the checks look at; the schema (workflow.schemas.ts) validated the rest. */
export interface GraphShape {
  nodes: Array<{ id: string; type: string; data: { label: string; type: string } }>;
  edges: Array<{ id: string; source: string; target: string }>;
}

/** A problem the canvas would flag on a block (its id and label; both empty for the agent as a whole); the agent is saved regardless. */
export interface GraphProblem {
  id: string;
  label: string;
  message: string;
}

/** The block types of the ultralytics clients (data.type). */
export const BLOCK_TYPES = [
  'Dataset',
  'Image',
  'YOLO',
  'LLM',
  'Gate',
  'Export',
  'Deployment',
  'Output',
  'Slack',
  'Webhook',
] as const;
/** Blocks that start a chain without an input (a Dataset given one collects its images instead). */
export const STARTING_BLOCK_TYPES = ['Dataset', 'Image', 'Export'];
/** Blocks that end a chain: nothing follows them. */
export const ENDING_BLOCK_TYPES = ['Export', 'Output', 'Slack', 'Webhook'];

type Node = GraphShape['nodes'][number];
const typeOf = (node: Node) => node.data.type;

/** Refuses (400) a graph that cannot run; returns the problems the canvas would flag on one that can. */
export function checkGraph(graph: GraphShape): GraphProblem[] {
  checkStructure(graph);
  return softProblems(graph);
}

/** Duplicate node or edge ids, an edge to or from a missing node, a block with more than one input, a cycle. */
function checkStructure(graph: GraphShape): void {
  const nodeIds = new Set<string>();
  for (const node of graph.nodes) {
    if (nodeIds.has(node.id)) throw Invalid(`graph.nodes: duplicate node id "${node.id}"`);
    nodeIds.add(node.id);
  }
  const edgeIds = new Set<string>();
  const parentOf = new Map<string, string>();
  for (const edge of graph.edges) {
    if (edgeIds.has(edge.id)) throw Invalid(`graph.edges: duplicate edge id "${edge.id}"`);
    edgeIds.add(edge.id);
    for (const end of [edge.source, edge.target]) {
      if (!nodeIds.has(end))
        throw Invalid(`graph.edges: edge "${edge.id}" refers to node "${end}", which is not in graph.nodes`);
    }
    if (parentOf.has(edge.target)) throw Invalid(`graph.edges: block "${edge.target}" has more than one input`);
    parentOf.set(edge.target, edge.source);
  }
  // With at most one input per block, a cycle is found by walking up the inputs from each block.
  const acyclic = new Set<string>();
  for (const start of nodeIds) {
    const path = new Set<string>();
    for (let id: string | undefined = start; id !== undefined && !acyclic.has(id); id = parentOf.get(id)) {
      if (path.has(id)) throw Invalid(`graph.edges: the graph has a cycle through block "${id}"`);
      path.add(id);
    }
    for (const id of path) acyclic.add(id);
  }
}

/**
 * What the canvas flags on a graph that passed checkStructure: no blocks at all, a block with an empty label, a
 * block connected to nothing (an Export stands alone), a block that needs an input without one, an input into an
 * Image block, a block after one that ends its chain.
 */
function softProblems(graph: GraphShape): GraphProblem[] {
  if (graph.nodes.length === 0) return [{ id: '', label: '', message: 'The agent has no blocks' }];
  const problems: GraphProblem[] = [];
  const flag = (node: Node, message: string) => problems.push({ id: node.id, label: node.data.label, message });
  const byId = new Map(graph.nodes.map((node) => [node.id, node]));
  const withInput = new Set(graph.edges.map((edge) => edge.target));
  const withOutput = new Set(graph.edges.map((edge) => edge.source));
  for (const node of graph.nodes) {
    if (!node.data.label.trim()) flag(node, 'Block has no label');
    const connected = withInput.has(node.id) || withOutput.has(node.id);
    if (!connected && graph.nodes.length > 1 && typeOf(node) !== 'Export')
      flag(node, 'Block is not connected to any other block');
    else if (!withInput.has(node.id) && !STARTING_BLOCK_TYPES.includes(typeOf(node))) flag(node, 'Block has no input');
  }
  for (const edge of graph.edges) {
    const source = byId.get(edge.source)!;
    const target = byId.get(edge.target)!;
    if (typeOf(target) === 'Image') flag(target, 'An Image block starts a chain and takes no input');
    if (ENDING_BLOCK_TYPES.includes(typeOf(source)))
      flag(source, `${typeOf(source)} ends a chain: no block can follow it`);
  }
  return problems;
}
