// vp-inference-server embed: a dataset analysis's host job (contract.ts EMBED_COMMAND). Downloads the manifest's images
// a batch at a time, embeds them with @vp/inference/embed (the control plane's own preprocessing, so vectors of both
// share one index) on CUDA when the job was given a GPU, and writes EMBED_FILES for the job's outputs. An image that
// cannot be downloaded or decoded is reported and passed over; anything else fails the job (exit 1).
import { createWriteStream } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { once } from 'node:events';
import { embedImages, openEmbedder, type EmbedderSession } from '@vp/inference/embed';
import { MAX_IMAGE_PIXELS } from '@vp/inference/pool';
import { EMBED_FILES, type EmbedResult } from '../contract.ts';
import { log } from '../service-log.ts';
import { readEmbedSettings, readManifest, type EmbedSettings } from './embed-settings.ts';

/** Images downloaded and run together, as the control plane's own analysis does. */
const BATCH = 16;
/** One image's download, headers to last byte. */
const DOWNLOAD_MS = 60_000;

/** The session on the device asked for; cpu (and why) when CUDA's provider or GPU is not there. */
async function open(
  settings: EmbedSettings,
): Promise<{ model: EmbedderSession; device: EmbedResult['device']; deviceNote?: string }> {
  if (settings.device === 'cuda') {
    try {
      return {
        model: await openEmbedder(settings.modelFile, { threads: settings.threads, executionProvider: 'cuda' }),
        device: 'cuda',
      };
    } catch (error) {
      // onnxruntime-node bundles the CPU provider only: CUDA's is installed apart (ONNXRUNTIME_NODE_INSTALL=cuda12).
      const deviceNote = `the CUDA provider did not load (${(error as Error).message.split('\n')[0]}); install it with ONNXRUNTIME_NODE_INSTALL=cuda12`;
      log('WARNING', `embedding on the CPU: ${deviceNote}`);
      return {
        model: await openEmbedder(settings.modelFile, { threads: settings.threads, executionProvider: 'cpu' }),
        device: 'cpu',
        deviceNote,
      };
    }
  }
  return {
    model: await openEmbedder(settings.modelFile, { threads: settings.threads, executionProvider: 'cpu' }),
    device: 'cpu',
  };
}

/** The file's bytes, or why not (an HTTP error, over maxBytes, too slow). */
async function download(url: string, maxBytes: number): Promise<Uint8Array | string> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(DOWNLOAD_MS) });
    if (!response.ok || !response.body) return `HTTP ${response.status}`;
    if (Number(response.headers.get('content-length') ?? 0) > maxBytes) return `over ${maxBytes} bytes`;
    const chunks: Uint8Array[] = [];
    let size = 0;
    // Node's web stream yields the body's bytes (its declared iterator type is any).
    for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
      size += chunk.byteLength;
      if (size > maxBytes) return `over ${maxBytes} bytes`;
      chunks.push(chunk);
    }
    return Buffer.concat(chunks, size);
  } catch (error) {
    return (error as Error).message.split('\n')[0];
  }
}

export async function embedChunk(): Promise<number> {
  let settings: EmbedSettings;
  try {
    settings = readEmbedSettings(process.env);
  } catch (error) {
    log('CRITICAL', (error as Error).message);
    return 2;
  }
  try {
    const { images } = await readManifest(settings.manifestFile);
    const { model, device, deviceNote } = await open(settings);
    log('INFO', 'embedder loaded', { device, images: images.length, input: [model.height, model.width] });
    const result: EmbedResult = { device, ...(deviceNote && { deviceNote }), dims: 0, images: [] };
    const vectors = createWriteStream(EMBED_FILES.vectors);
    for (let start = 0; start < images.length; start += BATCH) {
      const files = await Promise.all(
        images.slice(start, start + BATCH).map((image) => download(image.url, settings.maxBytes)),
      );
      const fetched = files.filter((file) => typeof file !== 'string');
      const { vectors: embedded, errors } = await embedImages(model, fetched, {
        mean: settings.mean,
        std: settings.std,
        maxPixels: MAX_IMAGE_PIXELS,
      });
      let next = 0;
      for (const file of files) {
        if (typeof file === 'string') result.images.push({ stage: 'download', reason: file.slice(0, 500) });
        else {
          const error = errors[next++];
          result.images.push(error === null ? null : { stage: 'decode', reason: error.slice(0, 500) });
        }
      }
      for (const vector of embedded) {
        result.dims = vector.length;
        if (!vectors.write(Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength)))
          await once(vectors, 'drain');
      }
      log('INFO', 'embedded', { done: Math.min(images.length, start + BATCH), of: images.length });
    }
    vectors.end();
    await once(vectors, 'finish');
    await writeFile(EMBED_FILES.result, JSON.stringify(result));
    await model.session.release();
    return 0;
  } catch (error) {
    log('CRITICAL', `embedding failed: ${(error as Error).message.split('\n')[0]}`);
    return 1;
  }
}
