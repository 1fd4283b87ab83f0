import { z } from 'zod';
import { Handle, Slug } from '../account/handle.ts';
import { OwnerPath, Region, Task, Timestamp } from '../datasets/dataset.schemas.ts';
import { ObjectId } from '../db/ids.ts';
import { limitQuery } from '../http/pagination.ts';
import { MetadataObject } from '../validation/metadata.ts';
import { CPU_SIZES, DEPLOYMENT_REGIONS, MEMORY_SIZES_GI } from './deployment-sizes.ts';

export const DEPLOYMENT_STATUSES = ['creating', 'deploying', 'ready', 'stopping', 'stopped', 'failed'] as const;
export type DeploymentStatus = (typeof DEPLOYMENT_STATUSES)[number];

const Status = z.enum(DEPLOYMENT_STATUSES, { error: `must be one of ${DEPLOYMENT_STATUSES.join(', ')}` });
export const DeploymentRegion = z.enum(DEPLOYMENT_REGIONS, {
  error: 'must be one of the 42 deployment regions (us-central1, europe-west4, asia-east1, …)',
});
const Cpu = z
  .union(
    CPU_SIZES.map((size) => z.literal(size)),
    { error: `must be one of ${CPU_SIZES.join(', ')}` },
  )
  .meta({ description: 'vCPU cores' });
const MemoryGi = z
  .union(
    MEMORY_SIZES_GI.map((size) => z.literal(size)),
    { error: `must be one of ${MEMORY_SIZES_GI.join(', ')}` },
  )
  .meta({ description: 'Memory in GiB' });
const Name = z.string().trim().min(1).max(128);
const CameraUrl = z
  .string()
  .max(2048)
  .regex(/^rtsps?:\/\/[^\s]+$/i, 'must be an rtsp:// or rtsps:// URL')
  .meta({ description: 'An RTSP or RTSPS camera stream' });

export const DeploymentPath = OwnerPath.extend({ deployment: Slug });

export const DeploymentListQuery = limitQuery(20, 100).extend({
  status: Status.optional(),
  model: z
    .string()
    .regex(/^[a-z0-9]+(-[a-z0-9]+)*\/[a-z0-9]+(-[a-z0-9]+)*$/, 'must be {project}/{model}')
    .max(257)
    .optional()
    .meta({
      description:
        'Project and model URL names separated by a slash; required without a key of the workspace (a public model)',
    }),
});

export const DeploymentCreate = z.strictObject({
  project: Slug,
  model: Slug,
  deployment: Slug.meta({ description: 'The URL name; unique in the workspace' }),
  name: Name,
  region: DeploymentRegion,
  cpu: Cpu.default(1),
  memoryGi: MemoryGi.default(2),
});

export const DeploymentCreated = z.object({
  id: ObjectId,
  deployment: Slug,
  status: z.literal('creating'),
  message: z.string(),
  region: z.string().meta({ description: 'The deployment region' }),
  apiKey: z.string().meta({
    description:
      'The deployment’s own key (apiKeyId), shown this once: it reaches this deployment’s predict and service URL only',
  }),
});

const Resources = z.object({
  cpu: z.number(),
  memoryGi: z.number(),
  minInstances: z.number().int().meta({ description: '0 for the default size (it scales to zero when idle), else 1' }),
  maxInstances: z.number().int(),
});

export const DeploymentListItem = z.object({
  id: ObjectId,
  owner: Handle,
  project: Slug.optional(),
  model: Slug.optional(),
  task: Task.optional(),
  deployment: Slug,
  name: z.string(),
  status: Status,
  statusMessage: z.string().optional(),
  region: z.string().meta({ description: 'The deployment region' }),
  serviceUrl: z
    .string()
    .optional()
    .meta({
      description:
        'The deployment’s own URL: `<appliance>/svc/<id>`, kept across renames and replaces. It answers POST `/predict` (as the platform’s ' +
        'predict), GET `/health`, and GET `/camera`: the camera’s state (`off`, `connecting`, `streaming`, `failed` with `error`), frames ' +
        'read and predicted, the newest frame’s `latest.results` and its detections per class (`counts`). Keys: the workspace’s or the deployment’s own.',
    }),
  resources: Resources.meta({ description: 'The size the live revision runs with' }),
  metered: z.boolean().optional().meta({ description: 'Every size but the default (1 CPU, 2 GiB) is metered' }),
  deployedAt: Timestamp.optional().meta({ description: 'When the live revision took traffic' }),
  apiKeyId: ObjectId.optional().meta({
    description: 'Owner only: the deployment’s own key, which reaches this deployment’s predict and service URL only',
  }),
  camera: z.string().optional().meta({ description: 'Owner only: the RTSP/RTSPS camera the server reads' }),
  cameraApplying: z.boolean().optional().meta({ description: 'Owner only: a camera change is being applied' }),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
export const DeploymentView = DeploymentListItem.extend({ metadata: z.record(z.string(), z.unknown()) });

export const DeploymentList = z.object({
  deployments: z.array(DeploymentListItem),
  total: z.number().int(),
  region: Region,
});
export const DeploymentRead = z.object({ deployment: DeploymentView, region: Region });

const Rename = z.strictObject({ name: Name.meta({ description: 'Rename: the URL name becomes a slug of it' }) });
const SetMetadata = z.strictObject({ metadata: MetadataObject });
const Stop = z.strictObject({ action: z.literal('stop') });
const Start = z.strictObject({ action: z.literal('start') });
const Replace = z
  .strictObject({
    action: z.literal('replace'),
    project: Slug.optional().meta({
      description: 'The new model’s project; default: the project of the model deployed now',
    }),
    model: Slug.meta({ description: 'The new model (completed, with weights)' }),
    cpu: Cpu.optional(),
    memoryGi: MemoryGi.optional(),
  })
  .meta({ description: 'Rolls out another model (and optionally another size) with zero downtime' });
const Resize = z
  .strictObject({ action: z.literal('resize'), cpu: Cpu.optional(), memoryGi: MemoryGi.optional() })
  .refine((body) => body.cpu !== undefined || body.memoryGi !== undefined, 'send cpu, memoryGi or both')
  .meta({ description: 'Rolls out the same model at another size with zero downtime' });
const Camera = z
  .strictObject({
    action: z.literal('camera'),
    url: CameraUrl.nullable(),
    fps: z.number().min(0.1).max(30).default(1).meta({ description: 'Frames predicted per second (default 1)' }),
  })
  .meta({
    description:
      'Saves the camera the server reads (custom sizes only), or removes it with url null; every later revision (replace, resize, restart) ' +
      'reads it too. Its results: GET `<serviceUrl>/camera`',
  });

export const DeploymentUpdate = z
  .union([Rename, SetMetadata, Stop, Start, Replace, Resize, Camera], {
    error:
      'send one of: {name}, {metadata}, {action: "stop"}, {action: "start"}, {action: "replace", model, project?, cpu?, memoryGi?}, ' +
      '{action: "resize", cpu?, memoryGi?}, {action: "camera", url}',
  })
  .meta({ description: 'One change per call (see the description)' });
export type DeploymentUpdate = z.output<typeof DeploymentUpdate>;

export const DeploymentUpdated = z.object({
  success: z.literal(true),
  status: Status,
  message: z.string(),
  deployment: Slug.optional().meta({ description: 'The current URL name (after a rename)' }),
});

export const DeploymentDeleted = z.object({ success: z.literal(true) });
