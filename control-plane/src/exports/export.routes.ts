// /api/models/{owner}/{project}/{model}/exports and the mobile import links, /api/mobile/models/{exportId}.
import { defineRoute } from '../http/define-route.ts';
import { responseClosed } from '../http/response-closed.ts';
import { ModelPath } from '../models/model.schemas.ts';
import { MOBILE_FORMATS } from './export-formats.ts';
import {
  ExportCreate,
  ExportCreated,
  ExportDeleted,
  ExportList,
  ExportListQuery,
  ExportPath,
  ExportRead,
  ExportReadQuery,
  MobileExportPath,
  MobileLink,
  MobileModel,
  MobileResolve,
} from './export.schemas.ts';

const STATUSES =
  'Status: queued (waiting for a host), starting (assigned to a host that has not accepted it yet), running, then completed, failed or cancelled. ';

export const listExports = defineRoute({
  method: 'GET',
  path: '/api/models/:owner/:project/:model/exports',
  tag: 'Exports',
  summary: "A model's exports, newest first, with download URLs for completed ones",
  description:
    STATUSES +
    'Any member of the workspace (and any key for a public model) can list them; a model the key cannot view is 404.',
  auth: 'key',
  limit: 'export',
  request: { params: ModelPath, query: ExportListQuery },
  response: { status: 200, description: 'Exports', schema: ExportList },
  errors: [404],
  handler: (ctx, { params, query }) => ctx.state.services.exports.list(ctx.state.actor, params, query),
});

export const createExport = defineRoute({
  method: 'POST',
  path: '/api/models/:owner/:project/:model/exports',
  tag: 'Exports',
  summary: 'Export the model to another format on a worker host (editor or above)',
  description:
    'Runs plain `yolo export` (ultralytics) of the model’s current weights on a connected worker host whose trainer environment reports the format’s ' +
    'toolchain; engine exports run on a host with a GPU of gpuType (required for engine, 400 for any other format), the others on a host’s CPU. ' +
    'args: the spec’s table per format; an argument the format does not take is 400 naming it and the format (batch 1, dynamic false, simplify true, ' +
    'opset/workspace null and optimize false are defaults any format may carry); unknown keys are 400; device is set by the platform. ' +
    'quantize: 32/16/8, w8a16, w8a32 (or fp32, fp16/half, int8), as the format supports; formats that are quantized only (imx, edgetpu, …) get their one ' +
    'precision when none is given. imx: INT8 only, detect/segment/classify/pose models, nano YOLOv8/YOLO11 (YOLO26 and other sizes are 400; the ' +
    'architecture is read from the training’s model YAML, through fine-tune chains, or the model’s name; weights named otherwise are left to the exporter). ' +
    'An equivalent export (same weights SHA-256, format, normalized args and gpuType) in flight in the workspace is 409; one already completed gives its ' +
    'artifact at once (reused true; status running in this answer, completed when read): the file is shared and counted once. 503 names what no host ' +
    'offers (the toolchain, with the reason a host reported, or the GPU type). Exporting another workspace’s public model is 403 (editor access needed); ' +
    'a private one is 404.',
  auth: 'key',
  limit: 'export',
  request: { params: ModelPath, body: ExportCreate },
  response: { status: 201, description: 'Queued (or reused)', schema: ExportCreated },
  errors: [400, 403, 404, 409, 503],
  handler: (ctx, { params, body }) => ctx.state.services.exports.create(ctx.state.actor, params, body),
});

export const readExport = defineRoute({
  method: 'GET',
  path: '/api/models/:owner/:project/:model/exports/:exportId',
  tag: 'Exports',
  summary: 'One export; when completed its file with a download URL valid for 1 hour',
  description:
    STATUSES +
    'A directory artifact (openvino, coreml .mlpackage, saved_model, ncnn, …) is one zip, downloadFilename `<dir>.zip`, holding the folder `<dir>/` itself: unzipped, it is what YOLO() loads. A failed export carries error ' +
    '{ message, timestamp } (the job’s error; a job that ended without uploading its artifact fails too). ' +
    '`wait` makes it a long poll: the answer comes as soon as an export in flight ends (from any replica), instead of at the next poll.',
  auth: 'key',
  limit: 'default',
  request: { params: ExportPath, query: ExportReadQuery },
  response: { status: 200, description: 'The export', schema: ExportRead },
  errors: [404],
  handler: (ctx, { params, query }) =>
    ctx.state.services.exports.read(
      ctx.state.actor,
      params,
      query.wait ? { seconds: query.wait, signal: responseClosed(ctx) } : undefined,
    ),
});

export const deleteExport = defineRoute({
  method: 'DELETE',
  path: '/api/models/:owner/:project/:model/exports/:exportId',
  tag: 'Exports',
  summary: 'Cancel an active export, or delete a finished one and its file (editor or above)',
  description:
    'Active (queued, starting, running): its job is cancelled (a running one is stopped by its host), action cancelled. Finished: the export is removed, ' +
    'action deleted; its file is deleted unless another export (a reuse) still shares it. Trashing a model (or its project) cancels its active exports; erasing it ' +
    'from trash deletes its exports and their files.',
  auth: 'key',
  limit: 'default',
  request: { params: ExportPath },
  response: { status: 200, description: 'Cancelled or deleted', schema: ExportDeleted },
  errors: [403, 404, 409],
  handler: (ctx, { params }) => ctx.state.services.exports.remove(ctx.state.actor, params),
});

export const createMobileLink = defineRoute({
  method: 'POST',
  path: '/api/models/:owner/:project/:model/exports/:exportId/mobile',
  tag: 'Exports',
  summary: 'A 24-hour bearer link to import a completed mobile export in a mobile app',
  description:
    `Mobile-compatible formats: ${MOBILE_FORMATS.join(', ')} (the SDK's mobile formats); others are 400, an export not completed 409. Anyone with ` +
    'the link can download the export without signing in until expiresAt. The link is the appliance’s own ' +
    '/api/mobile/models/{exportId} with the signed fragment #expires=…&signature=… (an HMAC by the appliance’s signing secret).',
  auth: 'key',
  limit: 'default',
  request: { params: ExportPath },
  response: { status: 200, description: 'The link', schema: MobileLink },
  errors: [400, 404, 409],
  handler: (ctx, { params }) => ctx.state.services.exports.mobileLink(ctx.state.actor, params),
});

export const resolveMobileLink = defineRoute({
  method: 'POST',
  path: '/api/mobile/models/:exportId',
  tag: 'Exports',
  summary: 'Exchange a mobile import link’s fragment for the model descriptor and a download URL',
  description:
    'Body: the link fragment’s expires and signature. A tampered, expired or foreign signature, or an export since deleted, is 403 (the same ' +
    'answer, so a link tells nothing else). The download URL expires with the link.',
  auth: 'public',
  limit: 'default',
  request: { params: MobileExportPath, body: MobileResolve },
  response: { status: 200, description: 'The model descriptor', schema: MobileModel },
  errors: [400, 403],
  handler: (ctx, { params, body }) => ctx.state.services.exports.resolveMobile(params.exportId, body),
});

export const exportRoutes = [listExports, createExport, readExport, deleteExport, createMobileLink, resolveMobileLink];
