// A PUT /camera body (CameraSettings), checked like predict's parameters (the same conf, iou and imgsz rules), and the
// camera URL's credentials, kept out of everything the server says about it.
import { invalidBody, PredictParameters } from '@vp/inference/request';
import { z } from 'zod';

const MAX_URL_CHARS = 4096;

const CameraUrl = z
  .string({ error: 'must be an rtsp:// or rtsps:// URL' })
  .max(MAX_URL_CHARS, `must be at most ${MAX_URL_CHARS} characters`)
  // oxlint-disable-next-line no-control-regex -- rejects control characters in a URL on purpose
  .refine((text) => !/[\u0000-\u0020\u007f]/.test(text), 'must not hold spaces or control characters')
  .refine((text) => {
    const url = URL.parse(text);
    return (url?.protocol === 'rtsp:' || url?.protocol === 'rtsps:') && url.hostname !== '';
  }, 'must be an rtsp:// or rtsps:// URL with a host');

const Settings = z.strictObject({
  url: CameraUrl,
  fps: z.number({ error: 'must be a number from 0.1 to 30' }).min(0.1).max(30),
  ...PredictParameters.pick({ conf: true, iou: true, imgsz: true }).shape,
});

/** Checked settings, predict's defaults filled in (imgsz: the model's own size when undefined). */
export type CameraConfig = z.output<typeof Settings>;

/** Throws PredictInputError (400) naming each field that is wrong. */
export function parseCameraSettings(body: unknown): CameraConfig {
  const parsed = Settings.safeParse(body);
  if (!parsed.success) throw invalidBody(parsed.error);
  return parsed.data;
}

/** The URL as it may be shown: its password masked. */
export function maskedUrl(text: string): string {
  const url = new URL(text);
  if (url.password) url.password = '***';
  return url.href;
}

/** Removes the URL's password (as written, and decoded) from text that may quote it, such as ffmpeg's errors. */
export function secretsRemover(text: string): (said: string) => string {
  const { password } = new URL(text);
  const secrets = [...new Set([password, safeDecode(password)])].filter((secret) => secret !== '');
  return (said) => secrets.reduce((out, secret) => out.replaceAll(secret, '***'), said);
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
