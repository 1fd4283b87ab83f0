import type { Middleware } from 'koa';
import { SERVICE_URL_PREFIX } from '../deployments/deployment-service-url.ts';
import type { AppState } from '../http/app-context.ts';
import type { RouteDefinition } from '../http/define-route.ts';

/**
 * The page behind the "View results at <appliance>/owner/project/model" link the trainer and `ul cloud train` print: a
 * person opening it in a browser sees the model's status, metrics and links, not a JSON 404. A browser sends no API
 * key, so the page holds no data itself: its script reads the public API (`GET /api/models/...` and `/training`),
 * anonymously for a public project, else with a key the person pastes (kept in this tab's sessionStorage only).
 */
const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Model — Vision Platform</title><link rel="stylesheet" href="/model-page/style.css"></head>
<body><main>
<p><a href="/api/docs">API reference</a></p>
<h1 id="title">Model</h1>
<p id="status" role="status" aria-live="polite">Loading…</p>
<form id="key-form" hidden><label for="key">API key (kept in this tab only)</label>
<input id="key" type="password" autocomplete="off" required><button type="submit">Show the model</button></form>
<section id="details" hidden><h2>Training</h2><dl id="training"></dl><h2>Metrics</h2><dl id="metrics"></dl><h2>Links</h2><ul id="links"></ul></section>
</main><script src="/model-page/page.js"></script></body></html>`;

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;margin:0;color:#1b1f24;background:#f6f7f9}
main{max-width:46rem;margin:2rem auto;padding:0 1rem}dl{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1.5rem}
dt{color:#57606a}dd{margin:0;font-variant-numeric:tabular-nums}input{font:inherit;padding:.3rem;margin:0 .5rem}
button{font:inherit;padding:.3rem .8rem}a:focus,button:focus,input:focus{outline:3px solid #0969da;outline-offset:2px}`;

const SCRIPT = `(() => {
  const [owner, project, model] = location.pathname.split('/').filter(Boolean).map(decodeURIComponent);
  const api = '/api/models/' + [owner, project, model].map(encodeURIComponent).join('/');
  const $ = (id) => document.getElementById(id);
  $('title').textContent = owner + ' / ' + project + ' / ' + model;
  const rows = (list, entries) => {
    list.replaceChildren();
    for (const [name, value] of entries) {
      if (value === undefined || value === null || value === '') continue;
      const term = document.createElement('dt'); term.textContent = name;
      const detail = document.createElement('dd'); detail.textContent = typeof value === 'number' ? String(Math.round(value * 10000) / 10000) : String(value);
      list.append(term, detail);
    }
  };
  const link = (text, href) => { const item = document.createElement('li'); const a = document.createElement('a'); a.href = href; a.textContent = text; item.append(a); $('links').append(item); };
  const read = async (path) => {
    const key = sessionStorage.getItem('vp-key');
    const answer = await fetch(path, { headers: key ? { authorization: 'Bearer ' + key } : {} });
    return { status: answer.status, body: await answer.json().catch(() => ({})) };
  };
  const show = async () => {
    const found = await read(api);
    if (found.status === 401 || found.status === 403 || found.status === 404) {
      $('status').textContent = sessionStorage.getItem('vp-key') ? 'This key cannot see the model (' + (found.body.error || found.status) + ').' : 'Sign in with an API key of a workspace that can see this model.';
      $('key-form').hidden = false;
      return;
    }
    if (found.status !== 200) { $('status').textContent = 'The appliance answered ' + found.status + ': ' + (found.body.error || 'try again'); return; }
    const m = found.body.model;
    const job = (await read(api + '/training')).body.job;
    $('status').textContent = 'Status: ' + m.status + (job && job.progress ? ' — epoch ' + job.progress.currentEpoch + ' of ' + job.progress.totalEpochs + ' (' + Math.round(job.progress.percentage) + ' %)' : '');
    rows($('training'), [['Task', m.task], ['Epochs', m.epochs], ['Best epoch', m.bestEpoch], ['Started', m.startedAt], ['Completed', m.completedAt], ['Error', job && job.error ? job.error.message : undefined]]);
    rows($('metrics'), Object.entries(m.metrics || {}));
    $('links').replaceChildren();
    link('The model (JSON)', api);
    link('Its training (JSON)', api + '/training');
    link('API reference', '/api/docs');
    $('key-form').hidden = true;
    $('details').hidden = false;
  };
  $('key-form').addEventListener('submit', (event) => { event.preventDefault(); sessionStorage.setItem('vp-key', $('key').value.trim()); show(); });
  show().catch(() => { $('status').textContent = 'The appliance could not be reached; reload to try again.'; });
})();`;

const ASSETS: Record<string, [string, string]> = {
  '/model-page/style.css': ['text/css; charset=utf-8', STYLE],
  '/model-page/page.js': ['text/javascript; charset=utf-8', SCRIPT],
};

/** owner/project/model as the trainer's link spells them: three URL names. */
const MODEL_PATH = /^\/([a-z0-9][a-z0-9._-]{0,99})\/[a-z0-9][a-z0-9._-]{0,99}\/[a-z0-9][a-z0-9._-]{0,99}\/?$/i;

/** `routes`: the app's, whose first path segments (api, files, reference-files, …) are never an owner here. */
export function modelPage(routes: RouteDefinition[]): Middleware<AppState> {
  const reserved = new Set([...routes.map((route) => route.path.split('/')[1]), SERVICE_URL_PREFIX.split('/')[1]]);
  return async (ctx, next) => {
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      await next();
      return;
    }
    const asset = ASSETS[ctx.path];
    const owner = MODEL_PATH.exec(ctx.path)?.[1];
    if (asset) {
      ctx.type = asset[0];
      ctx.set('Cache-Control', 'public, max-age=3600');
      ctx.body = asset[1];
    } else if (owner !== undefined && !reserved.has(owner)) {
      ctx.type = 'text/html; charset=utf-8';
      ctx.set('Content-Security-Policy', "default-src 'self'; frame-ancestors 'none'");
      ctx.body = PAGE;
    } else {
      await next();
    }
  };
}
