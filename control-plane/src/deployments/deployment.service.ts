import type { EntityManager } from '@mikro-orm/postgresql';
import type { Region } from '@vp/config';
import type { z } from 'zod';
import { workspaceIdByHandle } from '../account/workspace.store.ts';
import { requireKey, requireRole, roleIn } from '../auth/access.ts';
import { requireEditorOfOwn } from '../auth/resource-access.ts';
import type { Actor } from '../auth/actor.ts';
import { slugify } from '../db/slugs.ts';
import type { ExportService } from '../exports/export.service.ts';
import { Conflict, Forbidden, Invalid, NotFound, Unavailable } from '../http/errors.ts';
import type { JobLifecycle } from '../jobs/job-lifecycle.ts';
import { findModel } from '../models/model-access.ts';
import { Model } from '../models/model.entity.ts';
import { queueOnnxExport } from '../predict/onnx-export.ts';
import { someHostOffers } from '../scheduler/host-offers.ts';
import { applyCamera } from './deployment-camera.ts';
import { mintDeploymentKey } from './deployment-keys.ts';
import { changeStatus } from './deployment-lifecycle.ts';
import { deleteDeployments, retireAll, startRevision } from './deployment-rollout.ts';
import type {
  DeploymentCreate,
  DeploymentCreated,
  DeploymentDeleted,
  DeploymentList,
  DeploymentListQuery,
  DeploymentRead,
  DeploymentUpdate,
  DeploymentUpdated,
  DeploymentView,
} from './deployment.schemas.ts';
import {
  deploymentById,
  findDeployment,
  insertDeployment,
  listDeployments,
  slugTaken,
  updateDeployment,
  type DeploymentRecord,
} from './deployment.store.ts';
import { hasActiveJobs } from './deployment-revision.store.ts';
import { isDefaultSize, type DeploymentSize } from './deployment-sizes.ts';

type Address = { owner: string; deployment: string };
type Updated = z.input<typeof DeploymentUpdated>;
/** An update's answer, and whether it is still rolling out (answered 202) rather than done (200). */
export type UpdateOutcome = Updated & { accepted: boolean };
type Replace = Extract<DeploymentUpdate, { action: 'replace' }>;

export interface DeploymentServiceOptions {
  region: Region;
  lifecycle: JobLifecycle;
  exports: ExportService;
  /** The appliance's public base URL: a deployment's serviceUrl is `<base>/svc/<id>`. */
  baseUrl: string;
  /** Hosts silent longer than this (HOST_LOST_GRACE_SECONDS) do not count as serving a region. */
  graceSeconds: number;
}

/** The deployment API's rules; the revisions' lifecycle is deployment-rollout.ts's. */
export class DeploymentService {
  private readonly em: EntityManager;
  private readonly options: DeploymentServiceOptions;

  constructor(em: EntityManager, options: DeploymentServiceOptions) {
    this.em = em;
    this.options = options;
  }

  async list(
    actor: Actor,
    owner: string,
    filter: z.output<typeof DeploymentListQuery>,
  ): Promise<z.input<typeof DeploymentList>> {
    const workspaceId = await workspaceIdByHandle(this.em, owner);
    if (!workspaceId) throw NotFound(`Workspace ${owner} not found`);
    let modelId: string | undefined;
    if (filter.model) {
      const [project, slug] = filter.model.split('/') as [string, string];
      modelId = (await findModel(this.em, actor, owner, project, slug, 'view')).model.id;
    } else if (!roleIn(requireKey(actor), workspaceId)) {
      throw Forbidden(
        `Listing the deployments of "${owner}" needs a key of that workspace; others filter by one public model (model={project}/{model})`,
      );
    }
    const { rows, total } = await listDeployments(this.em, {
      workspaceId,
      status: filter.status,
      modelId,
      limit: filter.limit,
    });
    return { deployments: rows.map((row) => this.view(actor, row)), total, region: this.options.region };
  }

  async read(actor: Actor, at: Address): Promise<z.input<typeof DeploymentRead>> {
    const record = await this.find(actor, at);
    return { deployment: { ...this.view(actor, record), metadata: record.metadata }, region: this.options.region };
  }

  async create(
    actor: Actor,
    owner: string,
    body: z.output<typeof DeploymentCreate>,
  ): Promise<z.input<typeof DeploymentCreated>> {
    const key = requireEditorOfOwn(actor, owner, 'deploy in that workspace');
    const { model } = await findModel(this.em, actor, owner, body.project, body.model, 'view');
    requireServable(model);
    if (await slugTaken(this.em, key.workspaceId, body.deployment))
      throw Conflict(`A deployment named "${body.deployment}" already exists in this workspace`);
    await this.requireHost(key.workspaceId, body.region);
    const onnx = await queueOnnxExport(this.options.exports, model);
    const size = { cpu: body.cpu, memoryGi: body.memoryGi };
    const created = await this.em.transactional(async (tx) => {
      const id = await insertDeployment(tx, {
        workspaceId: key.workspaceId,
        modelId: model.id,
        slug: body.deployment,
        name: body.name,
        region: body.region,
        ...size,
      });
      const minted = await mintDeploymentKey(tx, {
        workspaceId: key.workspaceId,
        userId: key.userId,
        deploymentId: id,
        slug: body.deployment,
      });
      await updateDeployment(tx, id, { api_key_id: minted.id });
      await changeStatus(tx, id, 'creating', { message: `deploying ${body.project}/${body.model} in ${body.region}` });
      await startRevision(tx, { id, workspaceId: key.workspaceId, region: body.region }, model, size, onnx);
      return { id, apiKey: minted.key };
    });
    return {
      id: created.id,
      deployment: body.deployment,
      status: 'creating',
      message: `Deploying ${body.project}/${body.model}; poll the deployment until its status is ready`,
      region: body.region,
      apiKey: created.apiKey,
    };
  }

  async update(actor: Actor, at: Address, body: DeploymentUpdate): Promise<UpdateOutcome> {
    const record = await this.find(actor, at);
    requireRole(actor, record.workspaceId, 'editor');
    if ('name' in body) return this.rename(record, body.name);
    if ('metadata' in body) {
      await updateDeployment(this.em, record.id, { metadata: body.metadata });
      return done(record.status, 'Metadata saved');
    }
    switch (body.action) {
      case 'stop':
        return this.stop(record);
      case 'start':
        return this.start(record);
      case 'replace':
        return this.replace(actor, record, body);
      case 'resize':
        return this.resize(record, { cpu: body.cpu ?? record.cpu, memoryGi: body.memoryGi ?? record.memoryGi });
      case 'camera':
        return this.camera(record, body.url, body.fps);
    }
  }

  async remove(actor: Actor, at: Address): Promise<z.input<typeof DeploymentDeleted>> {
    const record = await this.find(actor, at);
    requireRole(actor, record.workspaceId, 'editor');
    await deleteDeployments(this.em, this.options.lifecycle, [record.id]);
    return { success: true };
  }

  /** Members see every deployment of their workspace; others only those of public models, as 404 otherwise. */
  private async find(actor: Actor, at: Address): Promise<DeploymentRecord> {
    const record = await findDeployment(this.em, at.owner, at.deployment);
    if (!record || (!roleIn(actor, record.workspaceId) && !record.projectPublic))
      throw NotFound(`Deployment ${at.owner}/${at.deployment} not found`);
    return record;
  }

  private view(actor: Actor, record: DeploymentRecord): z.input<typeof DeploymentView> {
    const member = roleIn(actor, record.workspaceId) !== null;
    const size = { cpu: record.cpu, memoryGi: record.memoryGi };
    return {
      id: record.id,
      owner: record.owner,
      project: record.projectSlug,
      model: record.modelSlug,
      task: record.task as z.input<typeof DeploymentView>['task'],
      deployment: record.slug,
      name: record.name,
      status: record.status,
      ...(record.statusMessage && { statusMessage: record.statusMessage }),
      region: record.region,
      serviceUrl: `${this.options.baseUrl}/svc/${record.id}`,
      resources: { ...size, minInstances: isDefaultSize(size) ? 0 : 1, maxInstances: 1 },
      metered: !isDefaultSize(size),
      ...(record.deployedAt && { deployedAt: new Date(record.deployedAt).toISOString() }),
      ...(member && record.apiKeyId && { apiKeyId: record.apiKeyId }),
      ...(member && record.cameraUrl && { camera: record.cameraUrl }),
      ...(member && { cameraApplying: record.cameraApplying }),
      createdAt: new Date(record.createdAt).toISOString(),
      updatedAt: new Date(record.updatedAt).toISOString(),
      metadata: record.metadata,
    };
  }

  private async rename(record: DeploymentRecord, name: string): Promise<UpdateOutcome> {
    const slug = slugify(name);
    if (!slug) throw Invalid('name: must contain a letter or digit (the URL name is made of them)');
    if (slug !== record.slug && (await slugTaken(this.em, record.workspaceId, slug)))
      throw Conflict(`A deployment named "${slug}" already exists in this workspace`);
    await updateDeployment(this.em, record.id, { name, slug });
    return { ...done(record.status, `Renamed; its URL name is now ${slug}`), deployment: slug };
  }

  private stop(record: DeploymentRecord): Promise<UpdateOutcome> {
    if (record.status === 'stopped') return Promise.resolve(done('stopped', 'The deployment is already stopped'));
    return this.em.transactional(async (tx) => {
      await updateDeployment(tx, record.id, { desired: 'stopped', scaled_to_zero: false, camera_applying: false });
      await changeStatus(tx, record.id, 'stopping', { message: 'stop requested' });
      await retireAll(tx, this.options.lifecycle, record.id);
      const current = (await deploymentById(tx, record.id))!;
      if (current.status === 'stopping' && !(await hasActiveJobs(tx, record.id)))
        await changeStatus(tx, record.id, 'stopped', { message: 'every server stopped' });
      const stopped = (await deploymentById(tx, record.id))!.status === 'stopped';
      return stopped
        ? done('stopped', 'Stopped')
        : accepted('stopping', 'Stopping; poll the deployment until its status is stopped');
    });
  }

  private async start(record: DeploymentRecord): Promise<UpdateOutcome> {
    if (record.status === 'ready') return done('ready', 'The deployment is already running');
    if (record.status !== 'stopped' && record.status !== 'failed')
      throw Conflict(`The deployment is ${record.status}; start it once it is stopped`);
    return this.rollOut(
      record,
      await this.modelOf(record.modelId),
      record,
      { desired: 'running', scaled_to_zero: false },
      'start requested',
    );
  }

  private async replace(actor: Actor, record: DeploymentRecord, body: Replace): Promise<UpdateOutcome> {
    const { model } = await findModel(
      this.em,
      actor,
      record.owner,
      body.project ?? record.projectSlug,
      body.model,
      'view',
    );
    const size = { cpu: body.cpu ?? record.cpu, memoryGi: body.memoryGi ?? record.memoryGi };
    return this.rollOut(record, model, size, cameraAfterResize(size), `replacing the model with ${model.slug}`);
  }

  private async resize(record: DeploymentRecord, size: DeploymentSize): Promise<UpdateOutcome> {
    if (size.cpu === record.cpu && size.memoryGi === record.memoryGi)
      return done(record.status, 'The deployment already has this size');
    return this.rollOut(
      record,
      await this.modelOf(record.modelId),
      size,
      cameraAfterResize(size),
      `resizing to ${size.cpu} CPU, ${size.memoryGi} GiB`,
    );
  }

  /**
   * A new revision (start, replace, resize); the live one, if any, serves until it is ready. 202 deploying. A start moves
   * a stopped or failed deployment, the others a ready one: one that changed meanwhile is refused (409) as it would have
   * been had it been so when asked.
   */
  private async rollOut(
    record: DeploymentRecord,
    model: Model,
    size: DeploymentSize,
    changes: Parameters<typeof updateDeployment>[2],
    why: string,
  ): Promise<UpdateOutcome> {
    if (record.status !== 'ready' && !('desired' in changes))
      throw Conflict(`The deployment is ${record.status}; a rollout needs it ready`);
    requireServable(model);
    await this.requireHost(record.workspaceId, record.region);
    const onnx = await queueOnnxExport(this.options.exports, model);
    const starting = 'desired' in changes;
    await this.em.transactional(async (tx) => {
      // Held until commit: a wake or another rollout numbers its revision after this one.
      const current = await deploymentById(tx, record.id, true);
      if (!current) throw NotFound(`Deployment ${record.owner}/${record.slug} not found`);
      await updateDeployment(tx, record.id, changes);
      if (
        !(await changeStatus(
          tx,
          record.id,
          'deploying',
          { message: why },
          starting ? ['stopped', 'failed'] : ['ready'],
        ))
      ) {
        throw Conflict(
          `The deployment is ${current.status}; ${starting ? 'start it once it is stopped' : 'a rollout needs it ready'}`,
        );
      }
      await startRevision(tx, record, model, size, onnx);
    });
    return accepted(
      'deploying',
      `${why[0]!.toUpperCase()}${why.slice(1)}; poll the deployment until its status is ready`,
    );
  }

  private async camera(record: DeploymentRecord, url: string | null, fps: number): Promise<UpdateOutcome> {
    if (isDefaultSize(record))
      throw Forbidden(
        'A camera needs a deployment with custom resources (not the default 1 CPU, 2 GiB); resize it first',
      );
    if (record.status !== 'ready') throw Conflict(`The deployment is ${record.status}; a camera needs it ready`);
    await updateDeployment(this.em, record.id, { camera_url: url, camera_fps: fps, camera_applying: true });
    applyCamera(
      this.em.fork() as EntityManager,
      record.id,
      { url, fps },
      { url: record.cameraUrl, fps: record.cameraFps },
    );
    return accepted(
      'ready',
      url
        ? 'Applying the camera; poll until cameraApplying is false'
        : 'Removing the camera; poll until cameraApplying is false',
    );
  }

  private async modelOf(modelId: string): Promise<Model> {
    const model = await this.em.findOne(Model, { id: modelId, deletedAt: null }, { populate: ['workspace'] });
    if (!model) throw Conflict('The deployment’s model was deleted');
    return model;
  }

  /** 503 naming the region when no live host the workspace may use runs inference there. */
  private async requireHost(workspaceId: string, region: string): Promise<void> {
    const offered = await someHostOffers(
      this.em,
      workspaceId,
      { gpuType: 'cpu', service: 'inference', region },
      this.options.graceSeconds,
    );
    if (!offered)
      throw Unavailable(
        `No connected worker host runs inference servers in region ${region} (hosts of no region serve every region)`,
      );
  }
}

function done(status: DeploymentRecord['status'], message: string): UpdateOutcome {
  return { success: true, status, message, accepted: false };
}

function accepted(status: DeploymentRecord['status'], message: string): UpdateOutcome {
  return { success: true, status, message, accepted: true };
}

/** Resizing to the default size removes the camera (a camera needs custom resources). */
const cameraAfterResize = (size: DeploymentSize) =>
  isDefaultSize(size) ? { camera_url: null, camera_applying: false } : {};

/** A model serves once it has weights and is not training (its weights would change under the deployment). */
function requireServable(model: Model): void {
  if (!model.fileKey) throw Invalid(`Model ${model.slug} has no weights yet`);
  if (model.status === 'training')
    throw Conflict(`Model ${model.slug} is training; deploy it once training has finished`);
}
