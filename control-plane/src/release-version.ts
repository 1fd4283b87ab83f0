// The appliance release this control plane belongs to, read once: an installed release's root holds the offline
// bundle's manifest (install.sh copies it there as bundle-manifest.json), whose version names the bundle and the worker
// distribution in it; a checkout has none and goes by its package.json.
import { existsSync, readFileSync } from 'node:fs';

const root = new URL('../../', import.meta.url);
const versionIn = (file: string) =>
  (JSON.parse(readFileSync(new URL(file, root), 'utf8')) as { version: string }).version;

export const RELEASE_VERSION = existsSync(new URL('bundle-manifest.json', root))
  ? versionIn('bundle-manifest.json')
  : versionIn('package.json');
