import { z } from 'zod';
import { attachment, parseByteRange } from '../http/byte-range.ts';
import { defineRoute } from '../http/define-route.ts';
import { HttpError, NotFound } from '../http/errors.ts';
import { FILES_PREFIX } from './file-urls.ts';
import { BAD_SIGNATURE } from './signed-url.ts';

const SignedQuery = z.object({
  expires: z.string().meta({ description: 'Expiry, unix seconds (part of the signature)' }),
  signature: z.string().meta({ description: 'HMAC signature issued by the API' }),
  filename: z.string().optional().meta({ description: 'Download name (part of the signature)' }),
});

export const downloadFile = defineRoute({
  method: 'GET',
  path: `${FILES_PREFIX}*key`,
  tag: 'Files',
  summary: 'Download a file through a signed URL (images, archives, model files, exports)',
  description:
    'The URLs come from the API (never built by clients) and expire. `Range: bytes=` is honoured (206, or 416 ' +
    'when unsatisfiable). A tampered, expired or other-method URL is 403 whether or not the file exists. ' +
    'With the S3 store the API hands out presigned S3 URLs instead.',
  auth: 'public',
  limit: null,
  request: { query: SignedQuery },
  response: {
    status: 200,
    description: 'The bytes (206 for a range)',
    schema: z.string(),
    contentType: 'application/octet-stream',
  },
  errors: [403, 404, 416],
  handler: async (ctx) => {
    const { filename } = ctx.state.services.storage.signer.verify(ctx.method, ctx.path, ctx.query);
    const key = decodeKey(ctx.path.slice(FILES_PREFIX.length));
    const { store } = ctx.state.services.storage;
    const head = await store.head(key);
    if (!head) throw NotFound('File not found');
    const range = parseByteRange(ctx.get('range') || undefined, head.size);
    if (range === 'unsatisfiable') {
      throw new HttpError(
        416,
        `Range not satisfiable for ${head.size} bytes`,
        {},
        { 'Content-Range': `bytes */${head.size}` },
      );
    }
    const read = await store.get(key, range);
    if (!read) throw NotFound('File not found');
    ctx.set('Accept-Ranges', 'bytes');
    ctx.set('Cache-Control', 'private, max-age=300');
    if (filename) ctx.set('Content-Disposition', attachment(filename));
    ctx.type = head.contentType;
    if (range) {
      ctx.status = 206;
      ctx.set('Content-Range', `bytes ${range.start}-${range.end}/${head.size}`);
    } else {
      ctx.status = 200;
    }
    ctx.body = read.stream;
    ctx.length = range ? range.end - range.start + 1 : head.size;
  },
});

/** The key is the path after the prefix, segment by segment; anything undecodable is as good as a bad signature. */
function decodeKey(path: string): string {
  try {
    return path.split('/').map(decodeURIComponent).join('/');
  } catch {
    throw new HttpError(403, BAD_SIGNATURE);
  }
}

export const fileRoutes = [downloadFile];
