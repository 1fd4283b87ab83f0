// Protocol 4: read-only access to the folders a host's operator shares (VP_WORKER_SHARED_FOLDERS), for storage
// integrations of the `local` provider. The control plane asks (`folder.request`), the agent answers once
// (`folder.result` or `folder.error`); a read answers with its size, then `folder.chunk`s, each sent only while the
// control plane has granted credit for it (`folder.credit`), then `folder.end`. Paths are the user's input: the agent
// checks every one against the shared folders.
import { z } from 'zod';

/** Raw bytes per chunk: base64 makes a frame of about 350 KiB, well under MAX_MESSAGE_BYTES. */
export const FOLDER_CHUNK_BYTES = 256 * 1024;
/** Entries per browse or list page, at most. */
export const MAX_FOLDER_PAGE = 1000;
/** Chunks a read may have in flight before the agent waits for credit. */
export const FOLDER_READ_WINDOW = 4;
/** Shared folders an agent announces, at most. */
export const MAX_SHARED_FOLDERS = 64;

const requestId = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/);
/** An absolute path on the host: a shared folder or one inside it. */
const folderPath = z
  .string()
  .min(1)
  .max(4096)
  .refine((path) => path.startsWith('/') && !path.includes('\0'), 'must be an absolute path');
/** A path relative to the root, as the user typed it: checked by the agent, never trusted. */
const relative = z.string().max(4096);
const cursor = z.string().min(1).max(4096);

export const FolderOp = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('roots') }),
  /** The folders and files directly beneath a prefix (ending in / or empty). */
  z.strictObject({
    kind: z.literal('browse'),
    root: folderPath,
    prefix: relative,
    cursor: cursor.optional(),
    limit: z.int().min(1).max(MAX_FOLDER_PAGE),
  }),
  /** Every file beneath a prefix, at any depth, in key order. */
  z.strictObject({
    kind: z.literal('list'),
    root: folderPath,
    prefix: relative,
    cursor: cursor.optional(),
    limit: z.int().min(1).max(MAX_FOLDER_PAGE),
  }),
  z.strictObject({ kind: z.literal('read'), root: folderPath, key: relative.min(1), maxBytes: z.int().min(1) }),
]);
export type FolderOp = z.infer<typeof FolderOp>;

const name = z.string().max(4096);
const size = z.int().min(0);
export const FolderEntry = z.strictObject({
  kind: z.enum(['folder', 'file']),
  name,
  key: name,
  size: size.optional(),
  updatedAt: z.iso.datetime().optional(),
});
export const FolderObject = z.strictObject({
  key: name,
  size,
  version: z.string().max(128),
  updatedAt: z.iso.datetime(),
});
export type FolderEntry = z.infer<typeof FolderEntry>;
export type FolderObject = z.infer<typeof FolderObject>;

export const FolderResult = z.union([
  z.strictObject({ roots: z.array(folderPath).max(MAX_SHARED_FOLDERS) }),
  z.strictObject({ entries: z.array(FolderEntry).max(MAX_FOLDER_PAGE), cursor: cursor.optional() }),
  z.strictObject({ objects: z.array(FolderObject).max(MAX_FOLDER_PAGE), cursor: cursor.optional() }),
  /** A read: its chunks follow. */
  z.strictObject({ size }),
]);
export type FolderResult = z.infer<typeof FolderResult>;

/**
 * denied: outside the shared folders (or no folder is shared); missing: no such file or folder; tooLarge: past the
 * read's maxBytes; failed: anything else (an I/O error, too many entries).
 */
export const FOLDER_ERRORS = ['denied', 'missing', 'tooLarge', 'failed'] as const;

export const FolderServerMessages = [
  z.strictObject({ type: z.literal('folder.request'), requestId, op: FolderOp }),
  z.strictObject({ type: z.literal('folder.credit'), requestId, chunks: z.int().min(1).max(FOLDER_READ_WINDOW) }),
  z.strictObject({ type: z.literal('folder.cancel'), requestId }),
] as const;

export const FolderAgentMessages = [
  z.strictObject({ type: z.literal('folder.result'), requestId, result: FolderResult }),
  z.strictObject({
    type: z.literal('folder.error'),
    requestId,
    error: z.enum(FOLDER_ERRORS),
    message: z.string().max(4096),
  }),
  z.strictObject({
    type: z.literal('folder.chunk'),
    requestId,
    data: z
      .base64()
      .refine((data) => data.length <= Math.ceil(FOLDER_CHUNK_BYTES / 3) * 4, `at most ${FOLDER_CHUNK_BYTES} bytes`),
  }),
  z.strictObject({ type: z.literal('folder.end'), requestId }),
] as const;
