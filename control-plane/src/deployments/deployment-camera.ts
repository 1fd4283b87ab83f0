// A deployment's camera: saved on the deployment (url, fps) and told to its live revision's server (PUT or DELETE
// /camera), at once after a PATCH and, by the deployment sweep, to every server that goes live later while the
// deployment has one (a replacement, a restart on another host, a wake from zero). The server reads the stream itself
// and reconnects on its own; its latest results are at the service URL's /camera.
import type { EntityManager } from '@mikro-orm/postgresql';
import { SERVICE_ROUTES, type CameraSettings } from '@vp/inference-server/contract';
import { appendEvent } from './deployment-events.store.ts';
import { updateDeployment } from './deployment.store.ts';
import { liveServers, setServerCamera, type LiveServer } from './deployment-revision.store.ts';
import { revisionToken } from './deployment-tokens.ts';

/** How long the live server may take to accept a camera change. */
const APPLY_TIMEOUT_MS = 30_000;
/** Of a server's refusal, this much is quoted (and read). */
const QUOTED_BYTES = 300;
/** A server that refused (or missed) its camera is told again after this long, its failure logged once. */
const RETRY_MS = 15_000;

export interface Camera {
  /** null: none. */
  url: string | null;
  fps: number;
}

/**
 * After a PATCH answered 202 with cameraApplying true, tells the live server: done, cameraApplying is false; failed,
 * the previous camera is kept and statusMessage says why.
 */
export function applyCamera(em: EntityManager, deploymentId: string, change: Camera, previous: Camera): void {
  void (async () => {
    try {
      const [live] = await liveServers(em, { deploymentId });
      if (!live) throw new Error('the deployment has no live server');
      await tell(em, { ...live, ...change });
      await updateDeployment(em, deploymentId, { camera_applying: false, status_message: null });
      await appendEvent(
        em,
        deploymentId,
        'INFO',
        change.url ? `Camera set to ${redacted(change.url)} at ${change.fps} fps` : 'Camera removed',
      );
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      await updateDeployment(em, deploymentId, {
        camera_url: previous.url,
        camera_fps: previous.fps,
        camera_applying: false,
        status_message: `The camera change failed: ${reason}`,
      });
      await appendEvent(em, deploymentId, 'ERROR', `The camera change failed (${reason}); the previous camera is kept`);
    }
  })().catch(() => undefined); // The deployment was deleted meanwhile: nothing is left to record it on.
}

/** The deployment sweep's part: live servers that went live since their deployment's camera was saved are told it. */
export class CameraSync {
  /** Revisions whose server failed to take its camera, and when to try again. */
  private readonly retryAt = new Map<string, number>();

  async sweep(em: EntityManager): Promise<void> {
    const now = Date.now();
    const pending = await liveServers(em, 'untold');
    for (const id of this.retryAt.keys()) if (!pending.some((live) => live.revisionId === id)) this.retryAt.delete(id);
    for (const live of pending) {
      if ((this.retryAt.get(live.revisionId) ?? 0) > now) continue;
      try {
        await tell(em, live);
        await appendEvent(
          em,
          live.deploymentId,
          'INFO',
          live.url
            ? `Revision ${live.number} reads the camera ${redacted(live.url)} at ${live.fps} fps`
            : `Revision ${live.number}'s camera removed`,
        );
        this.retryAt.delete(live.revisionId);
      } catch (error) {
        if (!this.retryAt.has(live.revisionId)) {
          await appendEvent(
            em,
            live.deploymentId,
            'WARNING',
            `Revision ${live.number} could not be given the camera (${(error as Error).message}); trying again`,
          );
        }
        this.retryAt.set(live.revisionId, now + RETRY_MS);
      }
    }
  }
}

/** PUT (or DELETE) /camera on the server; then its revision records what it reads. */
async function tell(em: EntityManager, live: LiveServer): Promise<void> {
  const settings: CameraSettings | undefined = live.url ? { url: live.url, fps: live.fps } : undefined;
  const response = await fetch(`${live.serviceUrl}${SERVICE_ROUTES.camera}`, {
    method: settings ? 'PUT' : 'DELETE',
    headers: { authorization: `Bearer ${revisionToken(em, live)}`, 'content-type': 'application/json' },
    body: settings && JSON.stringify(settings),
    signal: AbortSignal.timeout(APPLY_TIMEOUT_MS),
  });
  if (!response.ok) throw new Error(`its server answered ${response.status}: ${await opening(response, QUOTED_BYTES)}`);
  await setServerCamera(em, live.revisionId, live.serviceUrl, live.url);
}

/** The first `max` bytes of the body as text; the rest is not read. */
async function opening(response: Response, max: number): Promise<string> {
  if (!response.body) return '';
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  // fetch's body is bytes; its declared type leaves the chunks untyped.
  for await (const chunk of response.body as ReadableStream<Uint8Array>) {
    chunks.push(chunk);
    bytes += chunk.length;
    if (bytes >= max) break;
  }
  return Buffer.concat(chunks).subarray(0, max).toString('utf8');
}

/** The URL as logs show it: without its password. */
export function redacted(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return url;
  }
}
