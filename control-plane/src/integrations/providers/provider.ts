import type { Readable } from 'node:stream';
/** Storage providers: cloud services, and folders on worker hosts read through their agents (local). */
export const PROVIDERS = ['s3', 'gcs', 'azure', 'local'] as const;
export type ProviderName = (typeof PROVIDERS)[number];

export interface ObjectEntry {
  kind: 'folder' | 'file';
  /** The last path segment (a folder's without its trailing slash). */
  name: string;
  /** The full key: a folder's ends in `/` and is the prefix to browse it. */
  key: string;
  size?: number;
  updatedAt?: string;
}

export interface ObjectPage {
  entries: ObjectEntry[];
  /** Present when there is more: pass it back for the next page. */
  cursor?: string;
}

/** An object found while indexing a prefix: enough to tell later whether it changed. */
export interface StoredObject {
  key: string;
  size: number;
  /** Changes whenever the object's bytes do (an ETag, a generation, an mtime+size). */
  version: string;
  updatedAt?: string;
}

export interface StoredObjectPage {
  objects: StoredObject[];
  /** Present when there is more: pass it back for the next page. */
  cursor?: string;
}

export interface ListRequest {
  target: string;
  /** Every object whose key starts with this, at any depth. */
  prefix: string;
  cursor?: string;
  /** At most this many objects a page; absent: 1,000. */
  limit?: number;
}

export interface ReadRequest {
  target: string;
  key: string;
  /** The read fails (ProviderError 'failing') once the object proves larger than this. */
  maxBytes: number;
  /** A version `list` gave: the read fails (ProviderError 'changed') unless the object is still at it. */
  ifVersion?: string;
  signal?: AbortSignal;
}

export interface BrowseRequest {
  target: string;
  prefix: string;
  cursor?: string;
  limit: number;
}

/**
 * Why a provider did not answer as asked, in words safe to show the caller (nothing the provider sent is
 * quoted): rejected: it said no (credentials, a bucket); refused: the appliance's outbound rules stopped the
 * request before it left; unreachable: the endpoint's name did not resolve or nothing answered there in time;
 * failing: it answered, but with a server error or something that is not an answer; missing: the object read is not
 * there (deleted since it was listed); changed: it is no longer at the version the read asked for.
 */
export class ProviderError extends Error {
  readonly kind: 'rejected' | 'refused' | 'unreachable' | 'failing' | 'missing' | 'changed';
  /** The service's HTTP status, where it answered with one. */
  readonly status: number | undefined;

  constructor(message: string, kind: ProviderError['kind'], status?: number) {
    super(message);
    this.kind = kind;
    this.status = status;
  }
}

/**
 * An answer that is not what the service should have sent: not well-formed, or past a bound. Its message says what,
 * in words of our own (nothing the service sent is quoted); the request becomes a ProviderError 'failing'.
 */
export class AnswerError extends Error {}

/** One kind of storage: reads with the credentials it is given, keeps nothing. */
export interface StorageProvider<Credentials> {
  /** Who the credentials say they are, safe to show (an access key id, never a secret). */
  identity(credentials: Credentials): string;
  /** The buckets (or containers) these credentials can list the objects of. */
  discover(credentials: Credentials): Promise<string[]>;
  /** Passes when the credentials can list `target`'s objects. */
  checkTarget(credentials: Credentials, target: string): Promise<void>;
  /** One page of the folders and files directly beneath a prefix. */
  browse(credentials: Credentials, request: BrowseRequest): Promise<ObjectPage>;
  /** One page of every object beneath a prefix, at any depth, in key order (what an ingest by reference indexes). */
  list(credentials: Credentials, request: ListRequest): Promise<StoredObjectPage>;
  /** One object's bytes, streamed and counted against `maxBytes` (images are read on demand, never copied in). */
  read(credentials: Credentials, request: ReadRequest): Promise<Readable>;
}
