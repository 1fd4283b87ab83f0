import { api, ApiError, unwrap } from '../api/client.ts';

export interface UploadTarget {
  assetType: 'datasets' | 'models';
  assetId: string;
}

/** Content types the upload API takes for dataset archives, by the file's ending (browsers often give none). */
const ARCHIVE_TYPES: [RegExp, string][] = [
  [/\.zip$/i, 'application/zip'],
  [/\.(tar\.gz|tgz)$/i, 'application/gzip'],
  [/\.tar$/i, 'application/x-tar'],
  [/\.ndjson$/i, 'application/x-ndjson'],
];

export function archiveContentType(file: File): string {
  return ARCHIVE_TYPES.find(([ending]) => ending.test(file.name))?.[1] ?? (file.type || 'application/octet-stream');
}

/**
 * Uploads one file the way every client does: a signed upload URL from the API, one PUT of the bytes (XMLHttpRequest,
 * the one browser API that reports upload progress), then completion. The signed URL is the appliance's own, sent to
 * the origin this console was loaded from. A failed PUT leaves nothing behind, so trying again starts over cleanly.
 * Resolves to the upload session's id, which the ingest takes.
 */
export async function uploadFile(
  file: File,
  target: UploadTarget,
  onProgress: (sent: number, total: number) => void,
  signal?: AbortSignal,
): Promise<string> {
  const contentType = archiveContentType(file);
  const signed = unwrap(
    await api.POST('/api/upload/signed-url', {
      body: { ...target, filename: file.name, contentType, totalBytes: file.size },
    }),
  );
  const url = new URL(signed.uploadUrl);
  await put(
    `${url.pathname}${url.search}`,
    file,
    { ...signed.headers, 'Content-Type': contentType },
    onProgress,
    signal,
  );
  unwrap(await api.POST('/api/upload/complete', { body: { sessionId: signed.sessionId } }));
  return signed.sessionId;
}

function put(
  path: string,
  file: File,
  headers: Record<string, string>,
  onProgress: (sent: number, total: number) => void,
  signal?: AbortSignal,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const request = new XMLHttpRequest();
    request.open('PUT', path);
    for (const [name, value] of Object.entries(headers)) request.setRequestHeader(name, value);
    request.upload.onprogress = (event) => onProgress(event.loaded, event.lengthComputable ? event.total : file.size);
    request.onload = () => {
      if (request.status >= 200 && request.status < 300) return resolve();
      reject(
        new ApiError(request.status, errorOf(request.responseText) ?? `The upload was refused (${request.status})`),
      );
    };
    request.onerror = () => reject(new ApiError(0, 'The upload was interrupted (network error); try again'));
    request.onabort = () => reject(new ApiError(0, 'The upload was cancelled'));
    signal?.addEventListener('abort', () => request.abort(), { once: true });
    request.send(file);
  });
}

function errorOf(body: string): string | undefined {
  try {
    const parsed: unknown = JSON.parse(body);
    const error = (parsed as { error?: unknown }).error;
    return typeof error === 'string' ? error : undefined;
  } catch {
    return undefined;
  }
}
