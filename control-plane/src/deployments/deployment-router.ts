import type { EntityManager } from '@mikro-orm/postgresql';

/** Where a deployment's request goes: its live revision's inference server, and the bearer token that server wants. */
export interface Upstream {
  deploymentId: string;
  workspaceId: string;
  revisionId: string;
  /** The server's origin: its host's address as its agent's connection comes from, at the port it reported (job.service). */
  url: string;
  token: string;
}

/**
 * The seam between the deployments' lifecycle (deployment.service.ts and the deployment host job) and their traffic
 * (the proxy, the service URL, health, metrics).
 */
export interface DeploymentRouter {
  /**
   * The live revision of a deployment the caller may reach. A deployment scaled to zero is woken and waited for (up to
   * DEPLOYMENT_WAKE_SECONDS); 503 with the reason when it is stopped, failed, or does not come up in time.
   */
  upstream(em: EntityManager, deploymentId: string): Promise<Upstream>;
  /** A request was answered: the idle clock of scale-to-zero restarts. Cheap (batched), never throws. */
  touched(deploymentId: string): void;
}
