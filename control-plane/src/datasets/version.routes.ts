import { defineRoute } from '../http/define-route.ts';
import { DatasetPath } from './dataset.schemas.ts';
import {
  CompareQuery,
  CompareRead,
  ExportQuery,
  ExportRead,
  Restored,
  RestoreBody,
  VersionCreate,
  VersionCreated,
  VersionPatch,
  VersionPatched,
} from './version.schemas.ts';

export const readExport = defineRoute({
  method: 'GET',
  path: '/api/datasets/:owner/:dataset/export',
  tag: 'Datasets',
  summary: 'Signed download URL of the dataset as NDJSON: the current state, or a saved version with v',
  description:
    'Line 1 describes the dataset (task, name, class_names...), every further line one image with a signed URL valid 7 days. ' +
    'The current state reuses the file written earlier (cached) while nothing changed and it is under a day old. ' +
    'Public datasets can be read anonymously.',
  auth: 'optional',
  jobKeys: true,
  limit: 'default',
  request: { params: DatasetPath, query: ExportQuery },
  response: { status: 200, description: 'The download URL', schema: ExportRead },
  errors: [404],
  handler: (ctx, { params, query }) =>
    ctx.state.services.versions.export(ctx.state.actor, params.owner, params.dataset, query.v),
});

export const createVersion = defineRoute({
  method: 'POST',
  path: '/api/datasets/:owner/:dataset/export',
  tag: 'Datasets',
  summary: 'Save the dataset as an immutable numbered version (editor or above)',
  description:
    'A dataset whose content (images, labels, splits, metadata, classes, task) matches a saved version answers that version with reused true.',
  auth: 'key',
  limit: 'export',
  request: { params: DatasetPath, body: VersionCreate },
  response: { status: 200, description: 'The version', schema: VersionCreated },
  errors: [403, 404],
  handler: (ctx, { params, body }) =>
    ctx.state.services.versions.create(ctx.state.actor, params.owner, params.dataset, body),
});

export const describeVersion = defineRoute({
  method: 'PATCH',
  path: '/api/datasets/:owner/:dataset/export',
  tag: 'Datasets',
  summary: "Change a saved version's description (editor or above)",
  auth: 'key',
  limit: 'export',
  request: { params: DatasetPath, body: VersionPatch },
  response: { status: 200, description: 'Updated', schema: VersionPatched },
  errors: [403, 404],
  handler: (ctx, { params, body }) =>
    ctx.state.services.versions.describe(ctx.state.actor, params.owner, params.dataset, body),
});

export const restoreVersion = defineRoute({
  method: 'POST',
  path: '/api/datasets/:owner/:dataset/restore',
  tag: 'Datasets',
  summary: 'Rebuild the images, labels and classes of the dataset from a saved version (editor or above)',
  description:
    'Images get new IDs; their bytes are shared with the version, not copied. A dataset backed by connected storage is 409: its images ' +
    'are the files of its storage, and an ingest of its reference brings it back in line with them.',
  auth: 'key',
  limit: 'default',
  request: { params: DatasetPath, body: RestoreBody },
  response: { status: 200, description: 'Restored', schema: Restored },
  errors: [403, 404, 409],
  handler: (ctx, { params, body }) =>
    ctx.state.services.versions.restore(ctx.state.actor, params.owner, params.dataset, body),
});

export const compareVersions = defineRoute({
  method: 'GET',
  path: '/api/datasets/:owner/:dataset/versions/compare',
  tag: 'Datasets',
  summary: 'What changed from one saved version to another, image by image (100 per page)',
  description:
    'Images are matched by content hash: added, removed, modified (other labels or metadata) or moved (other split). ' +
    'The first page carries a summary with class changes and differing dataset fields. With hash: that image as each version keeps it.',
  auth: 'optional',
  limit: 'default',
  request: { params: DatasetPath, query: CompareQuery },
  response: { status: 200, description: 'Differences, or the image per version', schema: CompareRead },
  errors: [404],
  handler: (ctx, { params, query }) =>
    ctx.state.services.versions.compare(ctx.state.actor, params.owner, params.dataset, query),
});

export const versionRoutes = [readExport, createVersion, describeVersion, restoreVersion, compareVersions];
