import type { IncomingMessage } from 'node:http';
import type { EntityManager } from '@mikro-orm/postgresql';
import { readPredictInput, type ByteBound, type UrlFetcher } from '@vp/inference/request';
import { SERVICE_ROUTES } from '@vp/inference-server/contract';
import type { z } from 'zod';
import { requireRole, roleIn } from '../auth/access.ts';
import type { Actor } from '../auth/actor.ts';
import { Forbidden, HttpError, NotFound } from '../http/errors.ts';
import type { OutboundPolicy } from '../net/guarded-fetch.ts';
import { sourceFetcher } from '../predict/predict-source-fetch.ts';
import { deploymentLogs } from './deployment-logs.ts';
import { deploymentMetrics } from './deployment-metrics.ts';
import { ANSWER_MAX_BYTES, HEALTH_MAX_BYTES, jsonField, predictAnswer } from './deployment-proxy.ts';
import { revisionsIn } from './deployment-revision.store.ts';
import type { DeploymentTraffic } from './deployment-traffic.ts';
import type {
  DeploymentHealth,
  DeploymentLogs,
  DeploymentMetrics,
  LogsQuery,
  MetricsQuery,
} from './deployment-traffic.schemas.ts';
import { findDeployment, type DeploymentRecord } from './deployment.store.ts';

type Address = { owner: string; deployment: string };

export interface DeploymentTrafficOptions {
  traffic: DeploymentTraffic;
  outbound: OutboundPolicy;
  maxBytes: number;
}

/** A deployment's predict, health, metrics and logs through the platform's API (/api/deployments/{owner}/{deployment}/…). */
export class DeploymentTrafficService {
  private readonly em: EntityManager;
  private readonly options: DeploymentTrafficOptions;
  private readonly bound: ByteBound;
  private readonly fetchSource: UrlFetcher;

  constructor(em: EntityManager, options: DeploymentTrafficOptions) {
    this.em = em;
    this.options = options;
    this.bound = { maxBytes: options.maxBytes, setting: 'PREDICT_MAX_BYTES' };
    this.fetchSource = sourceFetcher(options.outbound, this.bound);
  }

  /**
   * Read and checked here as model predict does (so a bad request costs the deployment nothing, and a URL source is
   * fetched by the platform), then sent on as multipart: the image as `file` with the parameters.
   */
  async predict(actor: Actor, at: Address, request: IncomingMessage, path: string): Promise<Buffer> {
    const target = await this.find(actor, at);
    if (actor.kind === 'key' && actor.deploymentId && actor.deploymentId !== target.id)
      throw Forbidden('This key belongs to another deployment');
    const { parameters, image } = await readPredictInput(request, this.bound, this.fetchSource);
    const form = new FormData();
    for (const [name, value] of Object.entries(parameters))
      if (name !== 'source' && value !== undefined) form.set(name, String(value));
    form.set('file', new Blob([image]), 'image');
    const encoded = new Response(form);
    const body = new Uint8Array(await encoded.arrayBuffer());
    const sent = Number(request.headers['content-length'] ?? body.length);
    const answer = await this.options.traffic.exchange(
      this.em,
      target.id,
      {
        method: 'POST',
        route: SERVICE_ROUTES.predict,
        body,
        contentType: encoded.headers.get('content-type')!,
        contentLength: body.length,
        maxBytes: ANSWER_MAX_BYTES,
      },
      { via: 'proxy', path, userAgent: request.headers['user-agent'] ?? null, requestBytes: () => sent },
    );
    // Held whole (holdBytes is maxBytes): at most ANSWER_MAX_BYTES.
    return predictAnswer(answer) as Buffer;
  }

  /**
   * Pings the live server: a ready one's (waking it from zero), or the one serving while a replacement rolls out. A
   * deployment with nothing serving (creating, a first deploy, stopping, stopped, failed) answers why at once.
   */
  async health(actor: Actor, at: Address): Promise<z.input<typeof DeploymentHealth>> {
    const target = await this.find(actor, at);
    const serving =
      target.status === 'ready' ||
      (target.status === 'deploying' &&
        (await revisionsIn(this.em, target.id, ['live'])).some((live) => live.serviceUrl));
    if (!serving) {
      return {
        healthy: false,
        latencyMs: 0,
        error: `The deployment is ${target.status}${target.statusMessage ? `: ${target.statusMessage}` : ''}`,
      };
    }
    const started = performance.now();
    try {
      const answer = await this.options.traffic.exchange(this.em, target.id, {
        method: 'GET',
        route: SERVICE_ROUTES.health,
        maxBytes: HEALTH_MAX_BYTES,
      });
      const healthy = answer.status === 200 && jsonField(answer.body, 'healthy') === true;
      const latencyMs = Math.round(answer.latencyMs * 100) / 100;
      return {
        healthy,
        status: answer.status,
        latencyMs,
        ...(!healthy && {
          error: `GET /health answered ${answer.status}${answer.status === 503 ? ': its model is still loading' : ''}`,
        }),
      };
    } catch (error) {
      if (!(error instanceof HttpError)) throw error;
      return { healthy: false, latencyMs: Math.round((performance.now() - started) * 100) / 100, error: error.message };
    }
  }

  async metrics(
    actor: Actor,
    at: Address,
    options: z.output<typeof MetricsQuery>,
  ): Promise<z.input<typeof DeploymentMetrics>> {
    const target = await this.findOwn(actor, at);
    await this.options.traffic.writeRecorded();
    return deploymentMetrics(this.em, target, options);
  }

  async logs(actor: Actor, at: Address, options: z.output<typeof LogsQuery>): Promise<z.input<typeof DeploymentLogs>> {
    const target = await this.findOwn(actor, at);
    await this.options.traffic.writeRecorded();
    return deploymentLogs(this.em, target.id, this.options.traffic.pageTokens, options);
  }

  /** Members see every deployment of their workspace; others only those of public models, as 404 otherwise. */
  private async find(actor: Actor, at: Address): Promise<DeploymentRecord> {
    const target = await findDeployment(this.em, at.owner, at.deployment);
    if (!target || (!roleIn(actor, target.workspaceId) && !target.projectPublic))
      throw NotFound(`Deployment ${at.owner}/${at.deployment} not found`);
    return target;
  }

  /** Metrics and logs are the owner workspace's (a public model's deployment is 403 to others). */
  private async findOwn(actor: Actor, at: Address): Promise<DeploymentRecord> {
    const target = await this.find(actor, at);
    requireRole(actor, target.workspaceId, 'viewer');
    return target;
  }
}
