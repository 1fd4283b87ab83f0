// What a predict request carries: form fields and one image, from a multipart or urlencoded form (what the SDK sends)
// or JSON, read with a byte bound; a `source` becomes bytes through the guarded fetcher or base64.
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { fetchBytes, OutboundError, type OutboundPolicy } from '../net/guarded-fetch.ts';
import { Invalid, PayloadTooLarge } from '../http/errors.ts';

/** Room for the form's fields and boundaries besides the image itself. */
const FORM_OVERHEAD_BYTES = 64 * 1024;
const SOURCE_TIMEOUT_MS = 15_000;

export interface PredictBody {
  fields: Record<string, unknown>;
  file?: { bytes: Uint8Array; name: string; type: string };
}

const tooLarge = (maxBytes: number) => PayloadTooLarge(`Prediction input larger than ${maxBytes} bytes (PREDICT_MAX_BYTES)`);

/** Reads the request body, never holding more than the image bound (413 past it). */
export async function readPredictBody(req: IncomingMessage, maxBytes: number): Promise<PredictBody> {
  const contentType = req.headers['content-type'] ?? '';
  const limit = maxBytes + FORM_OVERHEAD_BYTES;
  if (Number(req.headers['content-length'] ?? 0) > limit) throw tooLarge(maxBytes);
  const state = { received: 0, over: false };
  async function* bounded() {
    for await (const chunk of req as AsyncIterable<Buffer>) {
      state.received += chunk.length;
      if (state.received > limit) {
        state.over = true;
        throw tooLarge(maxBytes);
      }
      yield chunk;
    }
  }
  const body = Readable.toWeb(Readable.from(bounded())) as ReadableStream<Uint8Array>;
  const request = new Request('http://predict.invalid/', { method: 'POST', headers: { 'content-type': contentType }, body, duplex: 'half' } as RequestInit);
  const media = contentType.split(';')[0]!.trim().toLowerCase();
  try {
    if (media === 'application/json') {
      const parsed: unknown = JSON.parse(await request.text());
      if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw Invalid('The JSON body must be an object of predict parameters');
      return { fields: parsed as Record<string, unknown> };
    }
    if (media !== 'multipart/form-data' && media !== 'application/x-www-form-urlencoded') {
      throw Invalid('Send the image as multipart/form-data with a file field, or source in a form or JSON body');
    }
    return fromForm(await request.formData(), maxBytes);
  } catch (error) {
    if (state.over) throw tooLarge(maxBytes);
    if (error instanceof SyntaxError) throw Invalid('Malformed JSON body');
    if (error instanceof TypeError) throw Invalid(`Malformed ${media} body`);
    throw error;
  }
}

async function fromForm(form: FormData, maxBytes: number): Promise<PredictBody> {
  const fields: Record<string, unknown> = {};
  let file: PredictBody['file'];
  for (const [name, value] of form) {
    if (name === 'file') {
      if (typeof value === 'string') throw Invalid('file must be an uploaded file (a multipart file part), not text');
      if (value.size > maxBytes) throw tooLarge(maxBytes);
      file = { bytes: new Uint8Array(await value.arrayBuffer()), name: value.name, type: value.type };
    } else if (typeof value !== 'string') {
      throw Invalid(`${name} must be a text field, not a file`);
    } else {
      fields[name] = value;
    }
  }
  return { fields, ...(file && { file }) };
}

const DATA_URI = /^data:([\w.+-]+\/[\w.+-]+)?((?:;[\w-]+=[^;,]*)*);base64,(.*)$/is;
const BASE64 = /^[A-Za-z0-9+/_-]+={0,2}$/;

/** The bytes a `source` names: an http(s) URL through the guarded fetcher, a base64 data: URI, or base64. */
export async function sourceBytes(source: string, policy: OutboundPolicy, maxBytes: number): Promise<Uint8Array> {
  const text = source.trim();
  if (/^https?:\/\//i.test(text)) {
    try {
      return await fetchBytes(text, { policy, maxBytes, timeoutMs: SOURCE_TIMEOUT_MS, idleTimeoutMs: SOURCE_TIMEOUT_MS });
    } catch (error) {
      if (!(error instanceof OutboundError)) throw error;
      if (error.kind === 'too-large') throw tooLarge(maxBytes);
      throw Invalid(`source could not be fetched: ${error.message}`);
    }
  }
  const dataUri = DATA_URI.exec(text);
  if (/^data:/i.test(text) && !dataUri) throw Invalid('source is a data: URI but not a base64 one (data:image/jpeg;base64,...)');
  const encoded = (dataUri ? dataUri[3]! : text).replace(/\s+/g, '');
  if (!BASE64.test(encoded)) throw Invalid('source must be an http(s) image URL, a data: URI or a base64 string');
  const bytes = Buffer.from(encoded, encoded.includes('-') || encoded.includes('_') ? 'base64url' : 'base64');
  if (bytes.length > maxBytes) throw tooLarge(maxBytes);
  return bytes;
}

/** Container formats of video (ISO BMFF brands that are images, HEIF and AVIF, excepted). */
const IMAGE_BRANDS = new Set(['heic', 'heix', 'hevc', 'heim', 'heis', 'mif1', 'msf1', 'avif', 'avis']);

/** Whether the bytes are a video: MP4/MOV (ISO BMFF), Matroska/WebM, AVI, MPEG, FLV, or declared as video/*. */
export function isVideo(bytes: Uint8Array, declaredType = ''): boolean {
  if (declaredType.toLowerCase().startsWith('video/')) return true;
  const ascii = (from: number, to: number) => Buffer.from(bytes.subarray(from, to)).toString('latin1');
  if (ascii(4, 8) === 'ftyp') return !IMAGE_BRANDS.has(ascii(8, 12).toLowerCase());
  if (bytes[0] === 0x1a && bytes[1] === 0x45 && bytes[2] === 0xdf && bytes[3] === 0xa3) return true;
  if (ascii(0, 4) === 'RIFF' && ascii(8, 12) === 'AVI ') return true;
  if (bytes[0] === 0 && bytes[1] === 0 && bytes[2] === 1 && (bytes[3] === 0xba || bytes[3] === 0xb3)) return true;
  return ascii(0, 3) === 'FLV';
}
