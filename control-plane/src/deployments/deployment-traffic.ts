// One request to a deployment's live server, whoever sends it (the platform's predict and health, the service URL):
// found through the router (which wakes a deployment scaled to zero), sent through the proxy, recorded, and counted
// as activity for scale-to-zero.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { AppMetrics } from '../metrics/app-metrics.ts';
import type { Logger } from 'pino';
import { HttpError } from '../http/errors.ts';
import { PageTokens } from '../http/pagination.ts';
import { DeploymentProxy, type UpstreamAnswer, type UpstreamRequest } from './deployment-proxy.ts';
import { RequestRecorder } from './deployment-requests.store.ts';
import type { DeploymentRouter } from './deployment-router.ts';

/** How the request reached the platform, as its log entry shows it. */
export interface RequestOrigin {
  via: 'proxy' | 'service';
  /** The path the caller used (the platform's predict URL or the service URL). */
  path: string;
  userAgent: string | null;
  /** Bytes of the caller's body: known at the end for a streamed one. */
  requestBytes: () => number;
}

/** What every deployment request of the process shares: the router, the upstream connections, the recorder. */
export class DeploymentTraffic {
  readonly router: DeploymentRouter;
  /** The logs' page tokens (signed with the signing secret). */
  readonly pageTokens: PageTokens;
  private readonly proxy: DeploymentProxy;
  private readonly recorder: RequestRecorder;
  private readonly metrics: AppMetrics | undefined;

  constructor(
    router: DeploymentRouter,
    options: { fork: () => EntityManager; timeoutSeconds: number; secret: string; log: Logger; metrics?: AppMetrics },
  ) {
    this.router = router;
    this.pageTokens = new PageTokens(options.secret);
    this.proxy = new DeploymentProxy(options.timeoutSeconds);
    this.recorder = new RequestRecorder(options.fork, options.log);
    this.metrics = options.metrics;
  }

  /**
   * Sends the request to the deployment's live server. With an origin the request is recorded once its answer ended
   * (its status also when it fails: 502, 503, 504) and restarts the idle clock; without (the platform's own health
   * check) it only warms.
   */
  async exchange(
    em: EntityManager,
    deploymentId: string,
    call: UpstreamRequest,
    origin?: RequestOrigin,
  ): Promise<UpstreamAnswer & { latencyMs: number }> {
    const at = new Date();
    const started = performance.now();
    const recordEnd = (status: number, responseBytes: number) => {
      this.router.touched(deploymentId);
      if (!origin) return;
      const latencyMs = performance.now() - started;
      this.metrics?.deploymentRequests.inc({ status_class: `${Math.floor(status / 100)}xx` });
      this.metrics?.deploymentSeconds.observe(latencyMs / 1000);
      this.recorder.record({
        deploymentId,
        at,
        method: call.method,
        path: origin.path,
        status,
        latencyMs,
        requestBytes: origin.requestBytes(),
        responseBytes,
        userAgent: origin.userAgent,
        via: origin.via,
      });
    };
    let answer: UpstreamAnswer;
    try {
      answer = await this.proxy.send(await this.router.upstream(em, deploymentId), call);
    } catch (error) {
      recordEnd(error instanceof HttpError ? error.status : 500, 0);
      throw error;
    }
    const latencyMs = performance.now() - started;
    void answer.ended.then(({ bytes, failure }) => recordEnd(failure?.status ?? answer.status, bytes));
    return { ...answer, latencyMs };
  }

  /**
   * Writes the requests this process answered and has not written yet: metrics and logs read after it include every
   * request answered here before the call (another replica's are written within a second of their answer).
   */
  writeRecorded(): Promise<void> {
    return this.recorder.flush();
  }

  /** Records what is queued and closes the connections (shutdown, after the requests in flight, before the pool). */
  async close(): Promise<void> {
    await this.recorder.close();
    await this.proxy.close();
  }
}
