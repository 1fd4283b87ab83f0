import { createReadStream } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Middleware } from 'koa';
import type { AppState } from './app-context.ts';

const swaggerDir = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
};

const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Vision Platform API reference</title>
<link rel="stylesheet" href="/api/docs/assets/swagger-ui.css"><link rel="icon" href="/api/docs/assets/favicon-32x32.png"></head>
<body><div id="ui"></div><script src="/api/docs/assets/swagger-ui-bundle.js"></script>
<script src="/api/docs/init.js"></script></body></html>`;

const INIT = `window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#ui', deepLinking: true, persistAuthorization: true });`;

/** /openapi.json and the interactive reference at /api/docs, served from local files (no CDN). */
export function docsMiddleware(document: () => string): Middleware<AppState> {
  return async (ctx, next) => {
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      await next();
      return;
    }
    if (ctx.path === '/openapi.json') {
      ctx.type = 'application/json';
      ctx.body = document();
    } else if (ctx.path === '/api/docs' || ctx.path === '/api/docs/') {
      ctx.type = 'text/html; charset=utf-8';
      ctx.set('Content-Security-Policy', "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'");
      ctx.body = PAGE;
    } else if (ctx.path === '/api/docs/init.js') {
      ctx.type = 'text/javascript; charset=utf-8';
      ctx.body = INIT;
    } else if (ctx.path.startsWith('/api/docs/assets/') && ASSETS[ctx.path.slice(17)]) {
      const name = ctx.path.slice(17);
      ctx.type = ASSETS[name];
      ctx.set('Cache-Control', 'public, max-age=86400');
      ctx.body = createReadStream(join(swaggerDir, name));
    } else {
      await next();
    }
  };
}
