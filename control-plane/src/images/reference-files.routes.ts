import { z } from 'zod';
import { defineRoute } from '../http/define-route.ts';
import { attachment } from '../http/byte-range.ts';
import { NotFound } from '../http/errors.ts';
import { imageContentType, REFERENCE_FILES_PREFIX } from './image-bytes.ts';

export const downloadReferencedImage = defineRoute({
  method: 'GET',
  path: `${REFERENCE_FILES_PREFIX}:workspaceId/:imageId`,
  tag: 'Files',
  summary: 'Download an image of a connected dataset through a signed URL (read from its storage)',
  description:
    'The URLs come from the API (imageUrl of an image indexed in place) and expire. The bytes are read from the ' +
    'storage the dataset is connected to, whole (no ranges). 404 when the file is no longer there, 409 when it ' +
    'changed since the dataset was synced or the storage was disconnected, 502 when the storage fails to answer.',
  auth: 'public',
  limit: null,
  request: {
    params: z.object({ workspaceId: z.string(), imageId: z.string() }),
    query: z.object({ expires: z.string(), signature: z.string() }),
  },
  response: { status: 200, description: 'The bytes', schema: z.string(), contentType: 'application/octet-stream' },
  errors: [403, 404, 409, 502],
  handler: async (ctx, { params }) => {
    const { storage } = ctx.state.services;
    storage.signer.verify(ctx.method, ctx.path, ctx.query);
    if (!storage.references) throw NotFound('Image not found');
    const read = await storage.references.open({ id: params.imageId, workspaceId: params.workspaceId });
    ctx.set('Accept-Ranges', 'none');
    ctx.set('Cache-Control', 'private, max-age=300');
    ctx.set('Content-Disposition', attachment(read.name));
    ctx.type = imageContentType(read.ext);
    ctx.status = 200;
    ctx.body = read.stream;
    ctx.length = read.bytes;
  },
});

export const referenceFileRoutes = [downloadReferencedImage];
