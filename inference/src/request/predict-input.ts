// A predict request as both the control plane's predict and a deployment's inference server read it: the body within
// its byte bound, the parameters checked, and exactly one image (a file, or a source), which must not be a video.
import type { IncomingMessage } from 'node:http';
import { readPredictBody } from './predict-body.ts';
import { type ByteBound, invalid, invalidBody } from './predict-input-error.ts';
import { PredictParameters } from './predict-parameters.ts';
import { decodeSource, isUrlSource, isVideo } from './predict-source.ts';

const VIDEO_REFUSED =
  'Video input is not supported by this appliance: send one image (JPEG, PNG, WebP, BMP, TIFF, …) per request, or frames extracted from the video';

export interface PredictInput {
  parameters: PredictParameters;
  image: Uint8Array;
}

/** Fetches an http(s) `source`; throws PredictInputError for what the caller got wrong. */
export type UrlFetcher = (url: string) => Promise<Uint8Array>;

export async function readPredictInput(
  req: IncomingMessage,
  bound: ByteBound,
  fetchUrl: UrlFetcher,
): Promise<PredictInput> {
  const body = await readPredictBody(req, bound);
  const parsed = PredictParameters.safeParse(body.fields);
  if (!parsed.success) throw invalidBody(parsed.error);
  const parameters = parsed.data;
  if (body.file && parameters.source !== undefined) throw invalid('Send file or source, not both');
  if (!body.file && parameters.source === undefined)
    throw invalid('Send the image as file (multipart/form-data) or source (URL or base64)');
  const source = parameters.source ?? '';
  const image = body.file
    ? body.file.bytes
    : isUrlSource(source)
      ? await fetchUrl(source.trim())
      : decodeSource(source, bound);
  if (isVideo(image, body.file?.type)) throw invalid(VIDEO_REFUSED);
  return { parameters, image };
}
