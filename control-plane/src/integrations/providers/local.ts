import { posix } from 'node:path';
import { PassThrough, type Readable } from 'node:stream';
import { HostFolderError, type HostFolders } from '../../workers/host-folders.ts';
import type { LocalCredentials } from '../integration.schemas.ts';
import {
  ProviderError,
  type BrowseRequest,
  type ListRequest,
  type ObjectPage,
  type ReadRequest,
  type StorageProvider,
  type StoredObjectPage,
} from './provider.ts';

const LIST_PAGE = 1000;

/**
 * One spelling of a folder on a host (`/share/./imgs`, `/share//imgs/` and `/share/imgs` are one target): `.`, `..`
 * and repeated or trailing slashes resolved as text. Symlinks are the agent's to resolve.
 */
export function normalizedFolder(path: string): string {
  const normal = posix.normalize(path);
  return normal.length > 1 ? normal.replace(/\/+$/, '') : normal;
}

/**
 * Folders on a worker host (`keyId` is the host's id), listed and read by its agent, which serves only the folders its
 * operator shares (VP_WORKER_SHARED_FOLDERS) and refuses any path leading outside them. A target is such a folder (an
 * absolute path on the host); keys are paths relative to it. Whether the caller may use the host is checked by the
 * caller (hostOfWorkspace), not here: the provider sees credentials only.
 */
export class LocalFolderProvider implements StorageProvider<LocalCredentials> {
  private readonly folders: HostFolders | undefined;

  /** Without `folders` (outside the server, vpctl) every request answers that the host is unreachable. */
  constructor(folders: HostFolders | undefined) {
    this.folders = folders;
  }

  identity(credentials: LocalCredentials): string {
    return credentials.keyId;
  }

  async discover(credentials: LocalCredentials): Promise<string[]> {
    const result = await this.ask(credentials, { kind: 'roots' }, 'list its shared folders');
    return 'roots' in result ? result.roots : [];
  }

  async checkTarget(credentials: LocalCredentials, target: string): Promise<void> {
    await this.ask(credentials, { kind: 'browse', root: target, prefix: '', limit: 1 }, `list folder ${target}`);
  }

  async browse(credentials: LocalCredentials, request: BrowseRequest): Promise<ObjectPage> {
    const { target, prefix, cursor, limit } = request;
    const result = await this.ask(
      credentials,
      { kind: 'browse', root: target, prefix, cursor, limit },
      `list folder ${target}`,
    );
    return 'entries' in result ? { entries: result.entries, cursor: result.cursor } : { entries: [] };
  }

  async list(credentials: LocalCredentials, request: ListRequest): Promise<StoredObjectPage> {
    const { target, prefix, cursor } = request;
    const result = await this.ask(
      credentials,
      { kind: 'list', root: target, prefix, cursor, limit: LIST_PAGE },
      `list folder ${target}`,
    );
    return 'objects' in result ? { objects: result.objects, cursor: result.cursor } : { objects: [] };
  }

  async read(credentials: LocalCredentials, request: ReadRequest): Promise<Readable> {
    const what = `read ${request.key} of folder ${request.target}`;
    if (request.ifVersion !== undefined) await this.checkVersion(credentials, request, what);
    try {
      const stream = await this.host(credentials).read(
        credentials.keyId,
        { kind: 'read', root: request.target, key: request.key, maxBytes: request.maxBytes },
        request.signal,
      );
      // Errors past the first byte (a dropped socket, a file that grew) reach the reader as ProviderErrors too; a
      // reader that stops early cancels the read on the host.
      const out = new PassThrough();
      stream.on('error', (error) => out.destroy(asProviderError(error, credentials, what, true)));
      out.on('close', () => stream.destroy());
      return stream.pipe(out);
    } catch (error) {
      throw asProviderError(error, credentials, what, true);
    }
  }

  /** An agent reads whatever is there: the file's version is listed first (the exact key comes first among those it prefixes). */
  private async checkVersion(credentials: LocalCredentials, request: ReadRequest, what: string): Promise<void> {
    const [listed] = (await this.list(credentials, { target: request.target, prefix: request.key })).objects;
    const failed = `worker host ${credentials.keyId} could not ${what}`;
    if (listed?.key !== request.key) throw new ProviderError(`${failed}: no such file`, 'missing');
    if (listed.version !== request.ifVersion)
      throw new ProviderError(`${failed}: it changed since it was listed`, 'changed');
  }

  private async ask(credentials: LocalCredentials, op: Parameters<HostFolders['ask']>[1], what: string) {
    try {
      return await this.host(credentials).ask(credentials.keyId, op);
    } catch (error) {
      throw asProviderError(error, credentials, what);
    }
  }

  private host(credentials: LocalCredentials): HostFolders {
    if (!this.folders)
      throw new ProviderError(`worker host ${credentials.keyId} is not reachable from this process`, 'unreachable');
    return this.folders;
  }
}

/**
 * An offline or silent host is unreachable; a file past maxBytes fails the read (as the interface says); a file read
 * that is not there is missing; the rest is refused.
 */
function asProviderError(error: unknown, credentials: LocalCredentials, what: string, read = false): Error {
  if (!(error instanceof HostFolderError)) return error as Error;
  const message = `worker host ${credentials.keyId} could not ${what}: ${error.message}`;
  if (error.kind === 'offline' || error.kind === 'timeout') return new ProviderError(error.message, 'unreachable');
  if (error.kind === 'failed' || error.kind === 'tooLarge') return new ProviderError(message, 'failing');
  if (read && error.kind === 'missing') return new ProviderError(message, 'missing');
  return new ProviderError(message, 'rejected');
}
