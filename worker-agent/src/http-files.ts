// A job's files to and from the control plane (or the store its URLs name), by node:http(s). undici's fetch moved them
// at half the speed on 2 cores: 5.5 MB of weights streamed into a file in 79–118 ms against 28–55 ms, time on every
// export's critical path.
import { createWriteStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { request as httpRequest, type ClientRequest, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { pipeline } from 'node:stream/promises';

/** Read and write in 1 MiB: Node's 64 KiB default costs a 10 MB artifact a quarter more time. */
const CHUNK_BYTES = 1024 * 1024;
/** An error answer's body is read this far (its message). */
const MAX_ERROR_BODY_BYTES = 64 * 1024;

/** Saves the body of a GET of `url` to `target`; any answer but a 2xx fails (the URLs name the bytes: no redirect). */
export async function downloadTo(url: string, target: string): Promise<void> {
  const response = await send(url, { method: 'GET' }, (outgoing) => outgoing.end());
  const status = response.statusCode ?? 0;
  if (status < 200 || status >= 300) {
    response.resume();
    throw new Error(`HTTP ${status}`);
  }
  await pipeline(response, createWriteStream(target, { highWaterMark: CHUNK_BYTES }));
}

/** PUTs the file to `url`; the answer's status and, for an error, the start of its body. */
export async function uploadFrom(
  url: string,
  file: string,
  headers: OutgoingHttpHeaders,
  signal: AbortSignal,
): Promise<{ status: number; body: string }> {
  signal.throwIfAborted();
  // Opened before the request: a stream that opens its own file and is destroyed first (a cancel aborting the
  // request) emits the open's failure (the job's dir removed meanwhile) to no listener, and that ends the agent.
  const handle = await open(file);
  try {
    let sent: Promise<void> = Promise.resolve();
    const response = await send(url, { method: 'PUT', headers, signal }, (outgoing) => {
      sent = pipeline(handle.createReadStream({ highWaterMark: CHUNK_BYTES, autoClose: false }), outgoing);
      // Handled from the start: a request that fails outright rejects below, and this with it.
      sent.catch(() => undefined);
    });
    // The server may answer (an error) before the body is all sent: that answer counts, not the cut upload.
    await sent.catch(() => undefined);
    const status = response.statusCode ?? 0;
    if (status >= 200 && status < 300) {
      response.resume();
      return { status, body: '' };
    }
    let body = '';
    for await (const chunk of response) {
      if (body.length < MAX_ERROR_BODY_BYTES) body += String(chunk);
    }
    return { status, body: body.slice(0, MAX_ERROR_BODY_BYTES) };
  } finally {
    await handle.close();
  }
}

function send(
  url: string,
  options: { method: string; headers?: OutgoingHttpHeaders; signal?: AbortSignal },
  write: (outgoing: ClientRequest) => void,
): Promise<IncomingMessage> {
  const request = new URL(url).protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const outgoing = request(url, options, resolve).on('error', reject);
    write(outgoing);
  });
}
