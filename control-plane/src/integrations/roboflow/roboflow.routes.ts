import type { z } from 'zod';
import { defineRoute } from '../../http/define-route.ts';
import { ErrorBody } from '../../http/openapi.ts';
import { RoboflowImportBody, RoboflowPreviewBody } from './roboflow.schemas.ts';
import { refuseRoboflow, ROBOFLOW_OFFLINE } from './roboflow.service.ts';

/** A Roboflow route: its body is checked (400), then the role (403); every other request is answered 501. */
const offlineRoute = (path: string, summary: string, body: z.ZodType) =>
  defineRoute({
    method: 'POST',
    path,
    tag: 'Roboflow',
    summary: `${summary}: needs the internet, which this appliance does not have (editor)`,
    description:
      'The body is checked first (400), then the role (403); every other request is answered 501, saying what to do instead.',
    auth: 'key',
    limit: 'mutation',
    request: { body },
    response: { status: 501, description: ROBOFLOW_OFFLINE, schema: ErrorBody },
    errors: [403],
    handler: (ctx) => refuseRoboflow(ctx.state.actor),
  });

export const roboflowRoutes = [
  offlineRoute(
    '/api/integrations/roboflow/preview',
    'List the datasets a Roboflow key can import',
    RoboflowPreviewBody,
  ),
  offlineRoute(
    '/api/integrations/roboflow/import',
    'Import Roboflow dataset versions into the workspace',
    RoboflowImportBody,
  ),
];
