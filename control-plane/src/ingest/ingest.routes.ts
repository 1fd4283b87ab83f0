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
    'A reference indexes a bucket prefix of a storage integration (cloud) or a folder a worker host shares (local: keyId is the host, ' +
    'root the shared folder) in place: files are listed and planned like an archive, each image read once for its hash, size and ' +
    'thumbnail, and its bytes read from the storage on demand after. Into an empty dataset, or again into the dataset connected to the ' +
    'same reference: a re-sync adding, updating and removing images as the files are now. 404 for an integration or host the workspace ' +
    'may not use; 409 for a dataset with images of its own or connected elsewhere, and for an archive or URL into a connected dataset.',
  auth: 'key',
  limit: 'upload',
  request: { params: DatasetPath, body: IngestBody },
  documentBody: true,
  response: { status: 201, description: 'Queued', schema: IngestQueued },
  errors: [403, 404, 409],
  handler: (ctx, { params, body }) =>
    ctx.state.services.ingest.start(ctx.state.actor, params.owner, params.dataset, body),
});

export const ingestRoutes = [ingestDataset];
