import { defineRoute } from '../http/define-route.ts';
import {
  CompleteRequest,
  CompleteResponse,
  SignedUrlRequest,
  SignedUrlResponse,
  UploadPath,
  UploadReceipt,
} from './upload.schemas.ts';

export const requestUploadUrl = defineRoute({
  method: 'POST',
  path: '/api/upload/signed-url',
  tag: 'Upload',
  summary: 'Get a signed URL to PUT a dataset archive or model file',
  description:
    'Editor access to the asset is required; an asset of another workspace is 404. Dataset archives end in ' +
    '.zip, .tar, .tar.gz, .tgz or .ndjson. The URL lives 12 hours; dataset URLs are create-only (a second PUT is 412).',
  auth: 'key',
  limit: 'upload',
  request: { body: SignedUrlRequest },
  response: { status: 200, description: 'The upload session', schema: SignedUrlResponse },
  errors: [403, 404],
  handler: (ctx, { body }) => ctx.state.services.uploads.issue(ctx.state.actor, body),
});

export const putUploadFile = defineRoute({
  method: 'PUT',
  path: '/api/upload/sessions/:sessionId/file',
  tag: 'Upload',
  summary: 'The uploadUrl: PUT the file bytes (signed URL, no API key)',
  description:
    'Send the declared Content-Type and every header returned with the URL, and exactly totalBytes bytes. ' +
    'The body streams to storage; a shorter or longer body is 400 and leaves nothing behind. A tampered or ' +
    'expired URL is 403.',
  auth: 'public',
  limit: null,
  request: { params: UploadPath },
  streamedBody: { contentType: '*/*', description: 'The file, exactly totalBytes long' },
  response: { status: 200, description: 'Stored', schema: UploadReceipt },
  errors: [403, 404, 409, 412],
  handler: async (ctx, { params }) => {
    const { services } = ctx.state;
    services.storage.signer.verify(ctx.method, ctx.path, ctx.query);
    const receipt = await services.uploads.receive(params.sessionId, ctx.req, {
      contentType: ctx.get('content-type') || undefined,
      ifNoneMatch: ctx.get('if-none-match') || undefined,
      contentLength: ctx.get('content-length') || undefined,
    });
    if (receipt.md5) ctx.set('ETag', `"${receipt.md5}"`);
    return receipt;
  },
});

export const completeUpload = defineRoute({
  method: 'POST',
  path: '/api/upload/complete',
  tag: 'Upload',
  summary: 'Confirm an upload, optionally checking its md5',
  description:
    'A wrong md5 is 400; on a session not yet complete the file is deleted and the URL can take it again. ' +
    'A completed dataset session can be completed again while its archive exists; a completion with an md5 ' +
    'other than the one it was completed with is 409. Model sessions attach the file to the model and end.',
  auth: 'key',
  limit: 'upload',
  request: { body: CompleteRequest },
  response: { status: 200, description: 'The stored file', schema: CompleteResponse },
  errors: [403, 404, 409],
  handler: (ctx, { body }) => ctx.state.services.uploads.complete(ctx.state.actor, body),
});

export const uploadRoutes = [requestUploadUrl, putUploadFile, completeUpload];
