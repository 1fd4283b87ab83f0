import { createReadStream, existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { extname, join } from 'node:path';
import type { Middleware } from 'koa';
import type { AppState } from '../http/app-context.ts';
import { CONSOLE_DIST } from './console-build.ts';

/**
 * The console's own files only: no inline script or style element (React sets style properties through the DOM,
 * which CSP allows), no other origin, except the S3 store's for images: with it, thumbnails and images are presigned
 * URLs of the store (with the disk store, the appliance's own signed /files URLs).
 */
export function consoleCsp(imageOrigin?: string): string {
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    `img-src 'self' blob:${imageOrigin ? ` ${imageOrigin}` : ''}`,
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
};

/** Hashed build outputs, one folder deep; file names of Vite's making only. */
const ASSET_PATH = /^\/assets\/[A-Za-z0-9_.-]+$/;
const ROOT_FILES = new Set(['/favicon.svg']);

/**
 * The console's page addresses (the hosted platform's): `/`, `/signin`, `/{owner}/datasets[/{slug}[/...]]`,
 * `/{owner}/projects`, `/{owner}/{project}` and `/{owner}/{project}/{model}` (the trainer's "View results at" link);
 * /api, /files, /reference-files, /svc and /assets are never pages (`GET /api/datasets/{owner}` is the API's,
 * whatever the browser accepts).
 */
const PAGE_PATH =
  /^\/(?:signin\/?|(?!(?:api|files|reference-files|svc|assets)\/)[a-z0-9][a-z0-9-]{0,31}\/(?:datasets(?:\/[^/]+)*|[^/]+(?:\/[^/]+)?)\/?)?$/i;

/**
 * Serves console/dist: hashed assets cached for a year, index.html (never cached) for a browser opening a page.
 * `imageOrigin`: where the blob store's direct URLs point (S3), allowed for images.
 */
export function consoleAssets(imageOrigin?: string, dist = CONSOLE_DIST): Middleware<AppState> {
  const csp = consoleCsp(imageOrigin);
  // Read per request (a small file): a rebuild while the server runs changes the asset names it points to.
  const index = () => readFile(join(dist, 'index.html')).catch(() => undefined);
  return async (ctx, next) => {
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      await next();
      return;
    }
    const path = ctx.path;
    if (ASSET_PATH.test(path) || ROOT_FILES.has(path)) {
      const file = join(dist, path);
      const type = TYPES[extname(path)];
      if (!type || !existsSync(file)) {
        await next();
        return;
      }
      ctx.type = type;
      ctx.set('X-Content-Type-Options', 'nosniff');
      ctx.set(
        'Cache-Control',
        path.startsWith('/assets/') ? 'public, max-age=31536000, immutable' : 'public, max-age=3600',
      );
      ctx.body = createReadStream(file);
      return;
    }
    // A program asking for JSON at an unknown address still gets the API's 404, not a page.
    const html = PAGE_PATH.test(path) && (ctx.get('accept') || '').includes('text/html') ? await index() : undefined;
    if (!html) {
      await next();
      return;
    }
    ctx.type = 'text/html; charset=utf-8';
    ctx.set('Content-Security-Policy', csp);
    ctx.set('Cache-Control', 'no-cache');
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Referrer-Policy', 'same-origin');
    ctx.body = html;
  };
}
