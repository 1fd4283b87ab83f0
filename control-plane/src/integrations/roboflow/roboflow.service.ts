import type { Actor } from '../../auth/actor.ts';
import { requireKey, requireRole } from '../../auth/access.ts';
import { NotImplemented } from '../../http/errors.ts';

/** What the Roboflow endpoints answer on this appliance: why they cannot work, and the way that does. */
export const ROBOFLOW_OFFLINE =
  'Roboflow needs internet access, which this appliance does not have. Instead, on a machine with internet, export the ' +
  'dataset version from Roboflow as a zip in the "YOLOv8" (or another YOLO) or "COCO" format, then upload it here: ' +
  'POST /api/upload/signed-url (assetType datasets, assetId the dataset id), PUT the zip to the uploadUrl it answers, and ' +
  "POST /api/datasets/{owner}/{dataset}/ingest with its sessionId. The export's train, valid and test folders become the " +
  'train, val and test splits.';

/**
 * Roboflow preview and import would create datasets in the key's workspace, so they need editor there, like other
 * dataset creation; past that check the answer is 501: not a passing outage (503), the appliance has no internet.
 */
export function refuseRoboflow(actor: Actor): never {
  const key = requireKey(actor);
  requireRole(key, key.workspaceId, 'editor');
  throw NotImplemented(ROBOFLOW_OFFLINE);
}
