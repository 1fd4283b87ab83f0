import type { EntityManager } from '@mikro-orm/postgresql';
import type { Region } from '@vp/config';
import type { z } from 'zod';
import { roleAtLeast, type Role } from '../account/roles.ts';
import { Workspace } from '../account/workspace.entity.ts';
import { requireKey } from '../auth/access.ts';
import type { Actor, KeyActor } from '../auth/actor.ts';
import { Conflict, Forbidden, NotFound } from '../http/errors.ts';
import { containsPattern } from '../images/image-search.ts';
import { checkGraph } from './workflow-graph.ts';
import { Workflow } from './workflow.entity.ts';
import { saveWorkflowAtVersion, workflowVersion } from './workflow.store.ts';
import { MAX_WORKFLOWS_LISTED } from './workflow.schemas.ts';
import type {
  Graph,
  WorkflowDeleted,
  WorkflowList,
  WorkflowListItem,
  WorkflowSave,
  WorkflowSaved,
} from './workflow.schemas.ts';

/**
 * Saved agent workflows. Unlike other resources, the Agents API takes an `owner`: besides the key's own
 * workspace, it reaches every team where the key's acting user is a member, with that member's role.
 */
export class WorkflowService {
  private readonly em: EntityManager;
  private readonly region: Region;

  constructor(em: EntityManager, region: Region) {
    this.em = em;
    this.region = region;
  }

  async list(
    actor: Actor,
    owner: string | undefined,
    search: string | undefined,
  ): Promise<z.input<typeof WorkflowList>> {
    const workspace = await this.reach(requireKey(actor), owner, 'viewer');
    const where = { workspace: workspace.id, ...(search ? { name: { $ilike: containsPattern(search) } } : {}) };
    const [workflows, total] = await this.em.findAndCount(Workflow, where, {
      limit: MAX_WORKFLOWS_LISTED,
      orderBy: { updatedAt: 'desc', id: 'desc' },
    });
    return { workflows: workflows.map((workflow) => listItem(workflow, workspace.handle)), total, region: this.region };
  }

  /** One agent, with its graph, listed alone. */
  async read(actor: Actor, owner: string | undefined, id: string): Promise<z.input<typeof WorkflowList>> {
    const workflow = await this.find(requireKey(actor), owner, id, 'viewer');
    // Stored graphs passed the Graph schema on save; the response schema checks them again.
    const graph = workflow.graph as z.output<typeof Graph>;
    return {
      workflows: [
        { ...listItem(workflow, workflow.workspace.handle), graph: { ...graph, templateId: graph.templateId ?? '' } },
      ],
      total: 1,
      region: this.region,
    };
  }

  /** Creates (version 0) or updates (id and the version last read); the graph's soft problems come back as errors. */
  async save(
    actor: Actor,
    owner: string | undefined,
    body: z.output<typeof WorkflowSave>,
  ): Promise<z.input<typeof WorkflowSaved>> {
    const key = requireKey(actor);
    return body.id ? this.update(key, owner, body.id, body) : this.create(key, owner, body);
  }

  private async create(
    key: KeyActor,
    owner: string | undefined,
    body: z.output<typeof WorkflowSave>,
  ): Promise<z.input<typeof WorkflowSaved>> {
    const workspace = await this.reach(key, owner, 'editor');
    const errors = checkGraph(body.graph);
    const created = this.em.create(Workflow, {
      workspace: workspace.id,
      name: body.name,
      graph: body.graph,
      version: 1,
      createdBy: key.userId,
    });
    await this.em.flush();
    return { id: created.id, version: created.version, errors, region: this.region };
  }

  private async update(
    key: KeyActor,
    owner: string | undefined,
    id: string,
    body: z.output<typeof WorkflowSave>,
  ): Promise<z.input<typeof WorkflowSaved>> {
    await this.find(key, owner, id, 'editor');
    const errors = checkGraph(body.graph);
    // One conditional statement: of two saves sent with the same version, PostgreSQL lets exactly one match.
    const updated = await saveWorkflowAtVersion(this.em, id, body.version, {
      name: body.name,
      graph: body.graph,
      updatedAt: new Date(),
    });
    if (updated !== undefined) return { id, version: updated, errors, region: this.region };
    const current = await workflowVersion(this.em, id);
    if (current === undefined) throw NotFound(`Agent ${id} not found`);
    throw Conflict(
      `Agent ${id} is at version ${current}, not ${body.version}: it was saved since you read it; reload it and save again`,
    );
  }

  async remove(actor: Actor, owner: string | undefined, id: string): Promise<z.input<typeof WorkflowDeleted>> {
    const workflow = await this.find(requireKey(actor), owner, id, 'editor');
    // Cancelling the agent's active runs goes here, once agent runs exist.
    await this.em.nativeDelete(Workflow, { id: workflow.id });
    return { success: true, id: workflow.id };
  }

  /** The workspace `owner` names (default: the key's own) and the caller's role there; unreachable is 404, too low a role 403. */
  private async reach(key: KeyActor, owner: string | undefined, needed: Role): Promise<{ id: string; handle: string }> {
    const handle = owner ?? key.workspaceHandle;
    const role = roleOf(key, handle);
    const workspace =
      role &&
      (handle === key.workspaceHandle ? { id: key.workspaceId, handle } : await this.em.findOne(Workspace, { handle }));
    if (!role || !workspace) throw NotFound(`Workspace "${handle}" not found`);
    if (!roleAtLeast(role, needed)) throw Forbidden();
    return { id: workspace.id, handle };
  }

  /** An agent in a workspace the key reaches (and the one `owner` names, when given); else 404. */
  private async find(key: KeyActor, owner: string | undefined, id: string, needed: Role): Promise<Workflow> {
    const workflow = await this.em.findOne(Workflow, id, { populate: ['workspace'] });
    const handle = workflow?.workspace.handle;
    const role = handle && (owner ?? handle) === handle ? roleOf(key, handle) : null;
    if (!workflow || !role) throw NotFound(`Agent ${id} not found`);
    if (!roleAtLeast(role, needed)) throw Forbidden();
    return workflow;
  }
}

/** The key's own workspace with the key's role, or a team of the acting user with the member's role. */
function roleOf(key: KeyActor, handle: string): Role | null {
  if (handle === key.workspaceHandle) return key.role;
  return key.profile.teams.find((team) => team.handle === handle)?.role ?? null;
}

function listItem(workflow: Workflow, handle: string): z.input<typeof WorkflowListItem> {
  return {
    id: workflow.id,
    username: handle,
    name: workflow.name,
    version: workflow.version,
    createdAt: workflow.createdAt.toISOString(),
    updatedAt: workflow.updatedAt.toISOString(),
  };
}
