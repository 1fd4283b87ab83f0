import { defineRoute } from '../http/define-route.ts';
import { AdoptBody, Adopted, AdoptUnmatched } from './adopt.schemas.ts';
import { DatasetPath } from './dataset.schemas.ts';

export const adoptImages = defineRoute({
  method: 'POST',
  path: '/api/datasets/:owner/:dataset/images/adopt',
  tag: 'Datasets',
  summary: 'Copy or move up to 1,000 images from other datasets into this one (editor or above)',
  description:
    'Images may come from several datasets; an image of a dataset the key cannot view is 404. ' +
    'Setting `release` or `classMapping` (even `{}`) keeps labels and splits of images from datasets the key can edit; images of read-only ' +
    'sources (public datasets of other workspaces), and all images when neither is set, arrive unlabeled in train. ' +
    '`release: true` moves: the adopted images leave their datasets, which needs editor access on every source (a read-only source, or one backed by connected storage, is 403); ' +
    'skipped images stay where they are. An image whose file (same hash) is already in the split it would go to, or earlier in the request, ' +
    'is skipped. Classes of kept labels match destination classes by name (case ignored for names longer than 2 characters); a ' +
    '`classMapping` entry wins: a class index, a class name (a new name adds the class), or null to drop those labels. Adopt adds no ' +
    'class the mapping does not name: a class that is neither mapped nor matched is 422 with `unmatchedClasses` (their names). ' +
    '409: an ingest of the destination or of a source is queued or running; or, when labels are kept, a source has another task, or ' +
    'for pose another keypoint shape (kptShape). Destination datasets backed by connected storage are 409. ' +
    'Bytes of images from another workspace are stored once more under this workspace, counted in its storage.',
  auth: 'key',
  limit: 'default',
  request: { params: DatasetPath, body: AdoptBody },
  documentBody: true,
  response: { status: 200, description: 'How many images were adopted and skipped', schema: Adopted },
  errors: [403, 404, 409],
  errorBodies: { 422: AdoptUnmatched },
  handler: (ctx, { params, body }) =>
    ctx.state.services.adoptions.adopt(ctx.state.actor, params.owner, params.dataset, body),
});

export const adoptRoutes = [adoptImages];
