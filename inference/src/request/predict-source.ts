// The image of a predict request given as `source` rather than a file, and the refusal of video.
import { type ByteBound, invalid, tooLarge } from './predict-input-error.ts';

const DATA_URI = /^data:([\w.+-]+\/[\w.+-]+)?((?:;[\w-]+=[^;,]*)*);base64,(.*)$/is;
const BASE64 = /^[A-Za-z0-9+/_-]+={0,2}$/;

/** An http(s) URL: fetched by whoever may fetch (the control plane's guarded fetcher), never by the inference server. */
export const isUrlSource = (source: string) => /^https?:\/\//i.test(source.trim());

/** The bytes of a base64 data: URI or a base64 `source` (a URL source is the caller's to fetch). */
export function decodeSource(source: string, bound: ByteBound): Uint8Array {
  const text = source.trim();
  const dataUri = DATA_URI.exec(text);
  if (/^data:/i.test(text) && !dataUri)
    throw invalid('source is a data: URI but not a base64 one (data:image/jpeg;base64,...)');
  const encoded = (dataUri ? dataUri[3]! : text).replace(/\s+/g, '');
  if (!BASE64.test(encoded)) throw invalid('source must be an http(s) image URL, a data: URI or a base64 string');
  const bytes = Buffer.from(encoded, encoded.includes('-') || encoded.includes('_') ? 'base64url' : 'base64');
  if (bytes.length > bound.maxBytes) throw tooLarge(bound);
  return bytes;
}

/** Container formats of video (ISO BMFF brands that are images, HEIF and AVIF, excepted). */
const IMAGE_BRANDS = new Set(['heic', 'heix', 'hevc', 'heim', 'heis', 'mif1', 'msf1', 'avif', 'avis']);

/** Whether the bytes are a video: MP4/MOV (ISO BMFF), Matroska/WebM, AVI, MPEG, FLV, or declared as video/*. */
export function isVideo(bytes: Uint8Array, declaredType = ''): boolean {
  if (declaredType.toLowerCase().startsWith('video/')) return true;
  const ascii = (from: number, to: number) => Buffer.from(bytes.subarray(from, to)).toString('latin1');
  if (ascii(4, 8) === 'ftyp') return !IMAGE_BRANDS.has(ascii(8, 12).toLowerCase());
  if (bytes[0] === 0x1a && bytes[1] === 0x45 && bytes[2] === 0xdf && bytes[3] === 0xa3) return true;
  if (ascii(0, 4) === 'RIFF' && ascii(8, 12) === 'AVI ') return true;
  if (bytes[0] === 0 && bytes[1] === 0 && bytes[2] === 1 && (bytes[3] === 0xba || bytes[3] === 0xb3)) return true;
  return ascii(0, 3) === 'FLV';
}
