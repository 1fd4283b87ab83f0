import { Invalid } from '../http/errors.ts';

/** The parts of a graph the checks look at; the schema (workflow.schemas.ts) validated the rest. */
export interface GraphShape {
  nodes: Array<{ id: string; type: string; data: { label: string; type: string } }>;
  edges: Array<{ id: string; source: string; target: string }>;
}

/** A problem the canvas would flag; the agent is saved regardless. */
export interface GraphProblem {
  nodeId?: string;
  edgeId?: string;
  message: string;
}

/** Block types that start a flow: they are expected to have no incoming edge. */
export const SOURCE_BLOCK_TYPES = ['input', 'trigger'];

const isSourceBlock = (node: GraphShape['nodes'][number]) => SOURCE_BLOCK_TYPES.includes(node.type) || SOURCE_BLOCK_TYPES.includes(node.data.type);

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
      if (!nodeIds.has(end)) throw Invalid(`graph.edges: edge "${edge.id}" refers to node "${end}", which is not in graph.nodes`);
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
 * What the canvas flags on a graph that passed checkStructure: no blocks at all, a block with an empty label,
 * a block connected to nothing, a block (other than input/trigger) without an input, an edge into an
 * input/trigger block.
 */
function softProblems(graph: GraphShape): GraphProblem[] {
  if (graph.nodes.length === 0) return [{ message: 'The agent has no blocks' }];
  const problems: GraphProblem[] = [];
  const withInput = new Set(graph.edges.map((edge) => edge.target));
  const withOutput = new Set(graph.edges.map((edge) => edge.source));
  const sourceBlocks = new Set(graph.nodes.filter(isSourceBlock).map((node) => node.id));
  for (const node of graph.nodes) {
    if (!node.data.label.trim()) problems.push({ nodeId: node.id, message: 'Block has no label' });
    const connected = withInput.has(node.id) || withOutput.has(node.id);
    if (!connected && graph.nodes.length > 1) problems.push({ nodeId: node.id, message: 'Block is not connected to any other block' });
    else if (!withInput.has(node.id) && !isSourceBlock(node)) problems.push({ nodeId: node.id, message: 'Block has no input' });
  }
  for (const edge of graph.edges) {
    if (sourceBlocks.has(edge.target)) problems.push({ edgeId: edge.id, message: `Block "${edge.target}" is an input or trigger block and takes no input` });
  }
  return problems;
}
