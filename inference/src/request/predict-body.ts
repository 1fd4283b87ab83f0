// What a predict request carries: form fields and one image, from a multipart or urlencoded form (what the SDK sends)
// or JSON, read with a byte bound.
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { type ByteBound, invalid, PredictInputError, tooLarge } from './predict-input-error.ts';

/** Room for the form's fields and boundaries besides the image itself. */
const FORM_OVERHEAD_BYTES = 64 * 1024;
/**
 * A JSON or urlencoded body holds only the parameters and a source of at most 4,096 characters (a URL, or a small
 * image in base64): even all escaped (`\uXXXX`, percent-encoded UTF-8) that is under 40 KB. Refused past this before
 * anything is parsed, so a large body costs no memory or event-loop time; a larger image comes as a multipart file.
 */
const FIELDS_BODY_MAX_BYTES = 64 * 1024;
const FIELD_MEDIA = new Set(['application/json', 'application/x-www-form-urlencoded']);
/**
 * A predict form has the file and at most nine parameters. Parts are counted as the body arrives and a form of more is
 * refused before it is parsed: parsing 20 MiB of empty parts took a second of the event loop.
 */
const MAX_FORM_PARTS = 16;

export interface PredictBody {
  fields: Record<string, unknown>;
  file?: { bytes: Uint8Array; name: string; type: string };
}

/**
 * Reads the request body, never holding more than it may need: the image bound and room for the fields for
 * multipart, FIELDS_BODY_MAX_BYTES for JSON and urlencoded (413 past either, from Content-Length before reading).
 */
export async function readPredictBody(req: IncomingMessage, bound: ByteBound): Promise<PredictBody> {
  const contentType = req.headers['content-type'] ?? '';
  const media = contentType.split(';')[0]!.trim().toLowerCase();
  if (media !== 'multipart/form-data' && !FIELD_MEDIA.has(media)) {
    throw invalid('Send the image as multipart/form-data with a file field, or source in a form or JSON body');
  }
  const multipart = media === 'multipart/form-data';
  const limit = multipart ? bound.maxBytes + FORM_OVERHEAD_BYTES : FIELDS_BODY_MAX_BYTES;
  const refusal = () =>
    multipart
      ? tooLarge(bound)
      : new PredictInputError(
          413,
          `A ${media} predict body holds the parameters and a source of at most 4,096 characters: at most ${limit} bytes; send a larger image as the file of a multipart/form-data body`,
        );
  if (Number(req.headers['content-length'] ?? 0) > limit) throw refusal();
  const tooManyParts = () => invalid(`A predict form has the file and the parameters: at most ${MAX_FORM_PARTS} parts`);
  const countParts = multipart ? partCounter(contentType) : undefined;
  const state = { received: 0, over: false, parts: false };
  async function* bounded() {
    for await (const chunk of req as AsyncIterable<Buffer>) {
      state.received += chunk.length;
      if (state.received > limit) {
        state.over = true;
        throw refusal();
      }
      // Delimiters: one before each part and one closing the form.
      if (countParts && countParts(chunk) > MAX_FORM_PARTS + 1) {
        state.parts = true;
        throw tooManyParts();
      }
      yield chunk;
    }
  }
  const body = Readable.toWeb(Readable.from(bounded())) as ReadableStream<Uint8Array>;
  const request = new Request('http://predict.invalid/', {
    method: 'POST',
    headers: { 'content-type': contentType },
    body,
    duplex: 'half',
  } as RequestInit);
  try {
    if (media === 'application/json') {
      const parsed: unknown = JSON.parse(await request.text());
      if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
        throw invalid('The JSON body must be an object of predict parameters');
      return { fields: parsed as Record<string, unknown> };
    }
    return fromForm(await request.formData(), bound);
  } catch (error) {
    if (state.over) throw refusal();
    if (state.parts) throw tooManyParts();
    if (error instanceof SyntaxError) throw invalid('Malformed JSON body');
    if (error instanceof TypeError) throw invalid(`Malformed ${media} body`);
    throw error;
  }
}

/** Counts the delimiters of a multipart body (`--boundary`) as its chunks arrive; undefined when the type names no boundary. */
function partCounter(contentType: string): ((chunk: Buffer) => number) | undefined {
  const boundary = /;\s*boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  if (!boundary) return undefined;
  const delimiter = Buffer.from(`--${boundary[1] ?? boundary[2]}`);
  let tail = Buffer.alloc(0);
  let count = 0;
  return (chunk) => {
    const text = tail.length ? Buffer.concat([tail, chunk]) : chunk;
    for (let at = text.indexOf(delimiter); at !== -1; at = text.indexOf(delimiter, at + delimiter.length)) count += 1;
    // Shorter than a delimiter: no whole one in it is counted twice, one cut across chunks is found in the next.
    tail = Buffer.from(text.subarray(Math.max(0, text.length - delimiter.length + 1)));
    return count;
  };
}

async function fromForm(form: FormData, bound: ByteBound): Promise<PredictBody> {
  const fields: Record<string, unknown> = {};
  let file: PredictBody['file'];
  for (const [name, value] of form) {
    if (name === 'file') {
      if (typeof value === 'string') throw invalid('file must be an uploaded file (a multipart file part), not text');
      if (value.size > bound.maxBytes) throw tooLarge(bound);
      file = { bytes: new Uint8Array(await value.arrayBuffer()), name: value.name, type: value.type };
    } else if (typeof value !== 'string') {
      throw invalid(`${name} must be a text field, not a file`);
    } else {
      fields[name] = value;
    }
  }
  return { fields, ...(file && { file }) };
}
