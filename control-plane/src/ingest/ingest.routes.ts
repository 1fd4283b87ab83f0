import { DatasetPath } from '../datasets/dataset.schemas.ts';
import { defineRoute } from '../http/define-route.ts';
import { IngestBody, IngestQueued } from './ingest.schemas.ts';

export const ingestDataset = defineRoute({
  method: 'POST',
  path: '/api/datasets/:owner/:dataset/ingest',
  tag: 'Datasets',
  summary: 'Import an uploaded archive, a URL or a connected source into the dataset (a background job)',
  description:
    'Exactly one of sessionId, sourceUrl or reference. Formats: ZIP, TAR, TAR.GZ, TGZ holding a YOLO layout (data.yaml, images/ + labels/, ' +
    'with or without split folders; detect, segment, pose, obb), classify folders (split/class/image), COCO JSON, or plain images (Roboflow ' +
    'exports in YOLO and COCO formats as they are: the valid folder is the val split); or an ' +
    'NDJSON dataset file. Follow the job at GET /api/jobs/{jobId}: it ends completed (result: imagesAdded, imagesSkipped, imagesReplaced, ' +
    'imagesWithErrors, labelErrors, classesAdded, errors, skippedReasons), failed (error) or cancelled. The dataset changes only when the ' +
    'job completes, all at once; a failed or cancelled ingest leaves it as it was. Unsafe archive entries (absolute paths, .., links) are ' +
    'skipped and counted; archives that expand too far fail the job. Images that cannot be decoded are added with error set. ' +
    'A reference is checked (404 for a storage integration or worker host the workspace does not have) but not read yet: ingesting in ' +
    'place is not available on this appliance, and a reference to an existing integration is a 400 saying so.',
  auth: 'key',
  limit: 'upload',
  request: { params: DatasetPath, body: IngestBody },
  response: { status: 201, description: 'Queued', schema: IngestQueued },
  errors: [403, 404, 409],
  handler: (ctx, { params, body }) => ctx.state.services.ingest.start(ctx.state.actor, params.owner, params.dataset, body),
});

export const ingestRoutes = [ingestDataset];
