import { createHmac } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { OutboundPolicy } from '../../net/guarded-fetch.ts';
import type { AzureCredentials } from '../integration.schemas.ts';
import { MAX_DISCOVER_PAGES, ProviderHttp } from './http.ts';
import { isoTime, objectPage } from './page.ts';
import type {
  BrowseRequest,
  ListRequest,
  ObjectPage,
  ReadRequest,
  StorageProvider,
  StoredObjectPage,
} from './provider.ts';
import { setQuery } from './query.ts';
import { elements, text, type XmlElement } from './xml.ts';

/** The REST version the requests speak (Azurite and Azure Stack Hub accept it too). */
const API_VERSION = '2021-12-02';
/** If-Match's place among the eleven standard headers of a Shared Key string to sign (Content-Encoding first). */
const IF_MATCH = 7;
/** Blobs (or containers) asked for a page: Azure gives up to 5,000, but the XML reader bounds an answer's elements. */
const LIST_PAGE = 1000;

/**
 * Azure Blob Storage: a storage account's containers, with one of its access keys (requests signed here, Shared
 * Key) or a shared access signature (appended to each request). Sent through the guarded fetcher like S3's.
 */
export class AzureProvider implements StorageProvider<AzureCredentials> {
  private readonly http: ProviderHttp;

  constructor(policy: OutboundPolicy) {
    this.http = new ProviderHttp(policy, {
      name: 'Azure Blob',
      missing: 'no such container',
      check: 'credentials.accountName and credentials.endpoint',
    });
  }

  identity(credentials: AzureCredentials): string {
    return credentials.accountName;
  }

  /** With an access key every container is readable; a SAS must allow listing containers (an account SAS). */
  async discover(credentials: AzureCredentials): Promise<string[]> {
    const names: string[] = [];
    let marker: string | undefined;
    for (let page = 0; page === 0 || (marker && page < MAX_DISCOVER_PAGES); page += 1) {
      const listing = await this.get(
        credentials,
        '',
        { comp: 'list', maxresults: String(LIST_PAGE), ...(marker ? { marker } : {}) },
        'list the containers',
      );
      names.push(
        ...elements(listing, 'Container')
          .map((container) => text(container, 'Name') ?? '')
          .filter(Boolean),
      );
      marker = text(listing, 'NextMarker') || undefined;
    }
    return names.sort();
  }

  async checkTarget(credentials: AzureCredentials, target: string): Promise<void> {
    await this.listBlobs(credentials, target, { maxresults: '1' });
  }

  async browse(credentials: AzureCredentials, request: BrowseRequest): Promise<ObjectPage> {
    const listing = await this.listBlobs(
      credentials,
      request.target,
      { prefix: request.prefix, delimiter: '/', maxresults: String(request.limit) },
      request.cursor,
    );
    const folders = elements(listing, 'BlobPrefix').map((entry) => text(entry, 'Name') ?? '');
    return objectPage(request.prefix, folders, blobs(listing), text(listing, 'NextMarker'));
  }

  async list(credentials: AzureCredentials, request: ListRequest): Promise<StoredObjectPage> {
    const listing = await this.listBlobs(
      credentials,
      request.target,
      { prefix: request.prefix, maxresults: String(request.limit ?? LIST_PAGE) },
      request.cursor,
    );
    const objects = blobs(listing)
      .filter((blob) => blob.key && !blob.key.endsWith('/'))
      .map((blob) => ({ ...blob, updatedAt: isoTime(blob.updatedAt) }));
    return { objects, cursor: text(listing, 'NextMarker') || undefined };
  }

  async read(credentials: AzureCredentials, request: ReadRequest): Promise<Readable> {
    // A blob name with a `.` or `..` segment is refused before it is sent: Azure resolves them (Service.keepsDotSegments).
    const { url, path } = this.address(
      credentials,
      `${request.target}/${request.key.split('/').map(encodeURIComponent).join('/')}`,
      {},
    );
    // Listings give an ETag bare (0x8D…), the header wants it quoted.
    const ifMatch =
      request.ifVersion && (request.ifVersion.startsWith('"') ? request.ifVersion : `"${request.ifVersion}"`);
    const headers = authorize(credentials, url, path, new Date(), ifMatch);
    return this.http.stream(
      { url, path, headers, what: `read ${request.key} of container ${request.target}`, missing: 'no such object' },
      request.maxBytes,
      request.signal,
    );
  }

  private listBlobs(
    credentials: AzureCredentials,
    container: string,
    query: Record<string, string>,
    marker?: string,
  ): Promise<XmlElement> {
    return this.get(
      credentials,
      container,
      { restype: 'container', comp: 'list', ...query, ...(marker ? { marker } : {}) },
      `list container ${container}`,
    );
  }

  private get(
    credentials: AzureCredentials,
    path: string,
    query: Record<string, string>,
    what: string,
  ): Promise<XmlElement> {
    const address = this.address(credentials, path, query);
    return this.http.xml({ ...address, headers: authorize(credentials, address.url, address.path), what });
  }

  /**
   * The blob service's URL (host; the query, with the SAS's parameters when there is one) and the path of `path` (a
   * container, a blob; encoded) beneath the endpoint's, sent and signed as is.
   */
  private address(
    credentials: AzureCredentials,
    path: string,
    query: Record<string, string>,
  ): { url: URL; path: string } {
    const url = new URL(credentials.endpoint ?? `https://${credentials.accountName}.blob.core.windows.net`);
    setQuery(url, [...Object.entries(query), ...new URLSearchParams(credentials.sasToken ?? '')]);
    return { url, path: `${url.pathname.replace(/\/$/, '')}/${path}` };
  }
}

function blobs(listing: XmlElement) {
  return elements(listing, 'Blob').map((blob) => ({
    key: text(blob, 'Name') ?? '',
    size: Number(text(blob, 'Content-Length') ?? 0),
    version: text(blob, 'Etag') ?? '',
    updatedAt: text(blob, 'Last-Modified'),
  }));
}

/** The version and date headers, with a Shared Key signature of a GET of `path` (as sent) when the credentials hold a key (a SAS is in the URL). */
export function authorize(
  credentials: AzureCredentials,
  url: URL,
  path: string,
  now = new Date(),
  ifMatch?: string,
): Record<string, string> {
  const headers: Record<string, string> = { 'x-ms-date': now.toUTCString(), 'x-ms-version': API_VERSION };
  const standard = Array<string>(11).fill('');
  if (ifMatch) standard[IF_MATCH] = ifMatch;
  const sent = ifMatch ? { ...headers, 'if-match': ifMatch } : headers;
  if (!credentials.accountKey) return sent;
  // A GET's string to sign: the verb, the eleven standard headers (empty unless sent), the x-ms- headers, then the resource.
  const canonicalHeaders = Object.keys(headers)
    .sort()
    .map((name) => `${name}:${headers[name]}`);
  const params = new Map<string, string[]>();
  for (const [name, value] of url.searchParams)
    params.set(name.toLowerCase(), [...(params.get(name.toLowerCase()) ?? []), value]);
  const canonicalQuery = [...params.keys()]
    .sort()
    .map((name) => `\n${name}:${params.get(name)!.sort().join(',')}`)
    .join('');
  const toSign = ['GET', ...standard, ...canonicalHeaders, `/${credentials.accountName}${path}${canonicalQuery}`].join(
    '\n',
  );
  const signature = createHmac('sha256', Buffer.from(credentials.accountKey, 'base64'))
    .update(toSign, 'utf8')
    .digest('base64');
  return { ...sent, authorization: `SharedKey ${credentials.accountName}:${signature}` };
}
