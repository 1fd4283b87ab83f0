import { z } from 'zod';
import { DeploymentRegion } from '../deployments/deployment.schemas.ts';
import { HOST_STATES } from './host.entity.ts';

export const HOST_NAME_PATTERN = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

export const HostName = z
  .string()
  .regex(HOST_NAME_PATTERN, 'must be 1-63 lowercase letters, digits or hyphens, not starting or ending with a hyphen')
  .meta({ description: 'Host name, unique within its workspace', example: 'gpu-01' });

export const HostPath = z.object({ name: HostName });
export const HostCreate = z.object({
  name: HostName,
  region: DeploymentRegion.optional().meta({
    description: 'The deployment region it serves (one of the 42); absent: every region',
  }),
});

export const HostListItem = z.object({
  name: z.string(),
  pool: z.boolean().meta({
    description:
      "true: a host of the appliance-wide pool, which runs every workspace's jobs; listed read-only (the operator connects, rotates and disconnects it with vpctl), with only this workspace's running jobs",
  }),
  state: z.enum(HOST_STATES),
  runningJobs: z.array(z.string()).meta({ description: 'Ids of the jobs the host runs now' }),
  lastHeartbeatAt: z.iso.datetime().nullable(),
  hardware: z.string().nullable().meta({
    description:
      'Summary of the last hardware report, e.g. "2x h100-sxm, 64 CPU cores, 503 GiB"; null before the first',
  }),
  agentVersion: z
    .string()
    .nullable()
    .meta({ description: 'The version of the agent as it last connected; null before its first connection' }),
  agentOutdated: z.boolean().meta({
    description:
      "The agent's version differs from the control plane's release version (upgrade the host's agent); false when unknown",
  }),
  exporters: z.array(z.string()).meta({
    description:
      "Model formats the host's trainer environment exports to (its agent's last report), e.g. onnx, openvino",
  }),
  missingExporters: z.record(z.string(), z.string()).meta({
    description: 'For the other formats the agent knows of, why the host cannot export to them (a missing toolchain)',
  }),
  region: z.string().nullable().meta({ description: 'The deployment region it serves; null: every region' }),
  gpus: z
    .array(
      z.object({
        index: z.number().int(),
        model: z.string(),
        memoryMiB: z.number().int(),
        utilizationPercent: z.number().nullable().meta({ description: 'At the last heartbeat; null when unknown' }),
        memoryUsedMiB: z.number().int().nullable().meta({ description: 'At the last heartbeat; null when unknown' }),
      }),
    )
    .meta({ description: 'Its NVIDIA GPUs (the last hardware report) with their use while it is connected' }),
  load: z
    .object({
      cpuPercent: z.number(),
      memoryUsedBytes: z.number().int(),
      memoryBytes: z.number().int().nullable().meta({ description: 'The host’s memory (its hardware report)' }),
    })
    .nullable()
    .meta({
      description:
        'CPU and memory use at the last heartbeat, while connected; null otherwise, and for agents before protocol 7',
    }),
  services: z.array(z.string()).meta({ description: 'The services its agent runs (inference: deployments’ servers)' }),
  createdAt: z.iso.datetime(),
});
export const HostList = z.object({ hosts: z.array(HostListItem), total: z.number().int() });

export const HostEnrollment = z.object({
  host: z.string().meta({ description: 'Host name' }),
  enrollmentToken: z
    .string()
    .meta({ description: 'One-time token (vpe_ and 32 hex digits); shown only in this response' }),
  expiresAt: z.iso.datetime(),
  command: z.string().meta({
    description: 'What to run on the host',
    example: 'vp-worker enroll --server https://vp.example.com --token vpe_…',
  }),
});

export const HostDisconnected = z.object({ name: z.string(), disconnected: z.literal(true) });

export const EnrollRequest = z.object({
  token: z.string().meta({ description: 'The enrollment token' }),
  hostname: z.string().max(255).optional().meta({ description: "The machine's own hostname, kept for operators" }),
});
export const EnrollResponse = z.object({
  hostId: z.string(),
  name: z.string(),
  workerKey: z
    .string()
    .meta({ description: 'The worker key (vpw_ and 48 hex digits); shown only in this response, kept hashed' }),
});
