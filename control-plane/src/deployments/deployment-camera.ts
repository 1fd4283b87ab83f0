import type { EntityManager } from '@mikro-orm/postgresql';
import { SERVICE_ROUTES, type CameraSettings } from '@vp/inference-server/contract';
import { query } from '../db/sql.ts';
import { appendEvent } from './deployment-events.store.ts';
import { updateDeployment } from './deployment.store.ts';

/** How long the live server may take to accept a camera change. */
const APPLY_TIMEOUT_MS = 30_000;

export interface CameraChange {
  /** null: remove the camera. */
  url: string | null;
  fps: number;
  /** Kept when the change fails. */
  previous: string | null;
}

/**
 * Tells the live revision's server about the camera (PUT or DELETE /camera), after the PATCH answered 202 with
 * cameraApplying true: done, cameraApplying is false; failed, the previous camera is kept and statusMessage says why.
 */
export function applyCamera(em: EntityManager, deploymentId: string, change: CameraChange): void {
  void (async () => {
    try {
      const [live] = await query<{ service_url: string; token: string }>(
        em,
        `select service_url, token from deployment_revisions where deployment_id = ? and state = 'live' and service_url is not null`,
        [deploymentId],
      );
      if (!live) throw new Error('the deployment has no live server');
      const settings: CameraSettings | undefined = change.url ? { url: change.url, fps: change.fps } : undefined;
      const response = await fetch(`${live.service_url}${SERVICE_ROUTES.camera}`, {
        method: settings ? 'PUT' : 'DELETE',
        headers: { authorization: `Bearer ${live.token}`, 'content-type': 'application/json' },
        body: settings && JSON.stringify(settings),
        signal: AbortSignal.timeout(APPLY_TIMEOUT_MS),
      });
      if (!response.ok) throw new Error(`its server answered ${response.status}: ${(await response.text()).slice(0, 300)}`);
      await updateDeployment(em, deploymentId, { camera_applying: false, status_message: null });
      await appendEvent(em, deploymentId, 'INFO', change.url ? `Camera set to ${change.url} at ${change.fps} fps` : 'Camera removed');
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      await updateDeployment(em, deploymentId, { camera_url: change.previous, camera_applying: false, status_message: `The camera change failed: ${reason}` });
      await appendEvent(em, deploymentId, 'ERROR', `The camera change failed (${reason}); the previous camera is kept`);
    }
  })().catch(() => undefined); // The deployment was deleted meanwhile: nothing is left to record it on.
}
