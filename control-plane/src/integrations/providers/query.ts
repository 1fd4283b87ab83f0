/** RFC 3986 encoding, as SigV4 wants it (encodeURIComponent leaves !'()* alone). */
export function encode(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/**
 * Sets the URL's query, RFC 3986-encoded. Not through url.searchParams, whose form encoding sends a space as `+`:
 * SigV4 signs it as %20 and a service may read `+` as itself, so a prefix with a space was refused or misread.
 */
export function setQuery(url: URL, params: Iterable<[string, string]>): void {
  url.search = [...params].map(([name, value]) => `${encode(name)}=${encode(value)}`).join('&');
}
