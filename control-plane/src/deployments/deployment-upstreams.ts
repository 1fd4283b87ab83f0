import type { EntityManager } from '@mikro-orm/postgresql';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Notifications } from '../db/notifications.ts';
import type { ExportService } from '../exports/export.service.ts';
import { NotFound, Unavailable } from '../http/errors.ts';
import { Model } from '../models/model.entity.ts';
import { DEPLOYMENTS_CHANNEL, onLocalDeploymentChange } from './deployment-changes.ts';
import { appendEvent } from './deployment-events.store.ts';
import type { DeploymentRouter, Upstream } from './deployment-router.ts';
import { changeStatus } from './deployment-lifecycle.ts';
import { startRevision } from './deployment-rollout.ts';
import {
  deploymentById,
  touchDeployments,
  updateDeployment,
  upstreamOf,
  type UpstreamRow,
} from './deployment.store.ts';
import { revisionToken } from './deployment-tokens.ts';
import { CredentialsUnreadable } from '../integrations/credential-cipher.ts';
import { queueOnnxExport } from '../predict/onnx-export.ts';

const POLL_MS = 200;
/** Live servers remembered at most; past this the memory starts over. */
const MAX_REMEMBERED = 10_000;
/** How often the requests' idle clocks are written (one UPDATE for every deployment touched meanwhile). */
const TOUCH_FLUSH_MS = 5000;

/**
 * DeploymentRouter over the deployments' rows: the live revision's server once it reported its URL. A deployment scaled
 * to zero is woken by the first request that finds it so (one revision started, whoever races) and every request waits
 * for it, as for one still creating or deploying, up to DEPLOYMENT_WAKE_SECONDS.
 *
 * Once `listen` is called, the live servers found are remembered (a query less per request: a tenth of the service
 * URL's throughput on a small host) until a change of any deployment's serving state is announced
 * (deployment-changes.ts): at once in this process, at the change's commit in the others. A replaced server drains for
 * DRAIN_SECONDS, so a request another replica sends it meanwhile is still answered.
 */
export class DeploymentUpstreams implements DeploymentRouter {
  private readonly fork: () => EntityManager;
  private readonly exportsFor: (em: EntityManager) => ExportService;
  private readonly wakeSeconds: number;
  private readonly log: Logger;
  private touchedIds = new Set<string>();
  private readonly timer: NodeJS.Timeout;
  private readonly remembered = new Map<string, Upstream>();
  private notifications: Notifications | undefined;
  /** The notification connection the remembered servers were checked against. */
  private session: number | undefined;
  /** Bumped by every change heard of, so that a read begun before one is not remembered. */
  private generation = 0;
  private readonly stopHearing: () => void;

  constructor(
    fork: () => EntityManager,
    exportsFor: (em: EntityManager) => ExportService,
    options: { wakeSeconds: number; log: Logger },
  ) {
    this.fork = fork;
    this.exportsFor = exportsFor;
    this.wakeSeconds = options.wakeSeconds;
    this.log = options.log;
    this.timer = setInterval(() => void this.flush(), TOUCH_FLUSH_MS);
    this.timer.unref();
    this.stopHearing = onLocalDeploymentChange(() => this.forget());
  }

  listen(notifications: Notifications): void {
    this.notifications = notifications;
    notifications.on(DEPLOYMENTS_CHANNEL, () => this.forget());
  }

  async upstream(em: EntityManager, deploymentId: string): Promise<Upstream> {
    // Nothing is used that a lost connection may have missed a change to.
    const session = this.notifications?.session;
    if (session !== this.session) {
      this.forget();
      this.session = session;
    }
    const known = session === undefined ? undefined : this.remembered.get(deploymentId);
    if (known) return known;
    const generation = this.generation;
    const found = await this.find(em, deploymentId);
    if (session !== undefined && generation === this.generation && session === this.notifications?.session) {
      if (this.remembered.size >= MAX_REMEMBERED) this.remembered.clear();
      this.remembered.set(deploymentId, found);
    }
    return found;
  }

  private forget(): void {
    this.generation += 1;
    this.remembered.clear();
  }

  private async find(em: EntityManager, deploymentId: string): Promise<Upstream> {
    const deadline = Date.now() + this.wakeSeconds * 1000;
    for (;;) {
      const row = await upstreamOf(em, deploymentId);
      if (!row) throw NotFound('Deployment not found');
      // Deploying with a live server: a replacement is rolling out and the old revision serves until it takes over.
      if ((row.status === 'ready' || row.status === 'deploying') && row.service_url) {
        return {
          deploymentId,
          workspaceId: row.workspace_id,
          revisionId: row.revision_id!,
          url: row.service_url,
          token: liveToken(em, row),
        };
      }
      if (row.status === 'stopping' || row.status === 'stopped' || row.status === 'failed') {
        throw Unavailable(`The deployment is ${row.status}${row.status_message ? `: ${row.status_message}` : ''}`);
      }
      if (row.scaled_to_zero) await this.wake(em, deploymentId);
      if (Date.now() >= deadline)
        throw Unavailable(`The deployment did not come up within ${this.wakeSeconds} s; try again shortly`);
      await sleep(POLL_MS);
    }
  }

  touched(deploymentId: string): void {
    this.touchedIds.add(deploymentId);
  }

  /** Writes the pending idle clocks (also on shutdown). */
  async close(): Promise<void> {
    clearInterval(this.timer);
    this.stopHearing();
    await this.flush();
  }

  private async flush(): Promise<void> {
    if (this.touchedIds.size === 0) return;
    const ids = [...this.touchedIds];
    this.touchedIds = new Set();
    await touchDeployments(this.fork(), ids).catch((error) =>
      this.log.warn({ err: error }, 'recording deployment requests failed'),
    );
  }

  /** Starts a revision of the deployment's model at its size, unless another request did already. */
  private async wake(em: EntityManager, deploymentId: string): Promise<void> {
    const found = await deploymentById(em, deploymentId);
    const model =
      found && (await em.findOne(Model, { id: found.modelId, deletedAt: null }, { populate: ['workspace'] }));
    // The export first, outside the transaction (it has its own): the model's, already completed unless it was deleted.
    const onnx = model
      ? await queueOnnxExport(this.exportsFor(em), model).catch((error: unknown) =>
          error instanceof Error ? error : new Error(String(error)),
        )
      : new Error('its model was deleted');
    await em.transactional(async (tx) => {
      const deployment = await deploymentById(tx, deploymentId, true);
      if (!deployment?.scaledToZero) return;
      await updateDeployment(tx, deploymentId, { scaled_to_zero: false });
      await appendEvent(tx, deploymentId, 'INFO', 'A request woke the deployment from zero');
      if (onnx instanceof Error) {
        await changeStatus(tx, deploymentId, 'failed', {
          severity: 'ERROR',
          statusMessage: `Waking from zero failed: ${onnx.message}`,
          message: `waking from zero failed: ${onnx.message}`,
        });
      } else {
        await startRevision(tx, deployment, model!, deployment, onnx);
      }
    });
  }
}

/** The live revision's token, opened from its row; 503 when it does not open. */
function liveToken(em: EntityManager, row: UpstreamRow): string {
  try {
    return revisionToken(em, {
      workspaceId: row.workspace_id,
      tokenKeyId: row.token_key_id!,
      tokenSealed: row.token_sealed!,
    });
  } catch (error) {
    if (error instanceof CredentialsUnreadable)
      throw Unavailable(`The deployment's server cannot be reached: ${error.message}`);
    throw error;
  }
}
