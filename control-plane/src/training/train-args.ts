// trainArgs as the spec's training start takes them, and the `yolo train` command line they become.
import { z } from 'zod';

/** Set by the platform for every run (where it reports, what it trains, on which device), never by the caller. */
export const RESERVED_ARGS = ['project', 'name', 'device', 'resume', 'save_dir', 'exist_ok'] as const;
const ARG_NAME = /^[a-z_][a-z0-9_]{0,63}$/;
const Scalar = z.union([
  z
    .string()
    .max(1000)
    .regex(/^[^\s=]*$/, 'must not contain spaces or ='),
  z.number(),
  z.boolean(),
  z.null(),
]);

export const TrainArgs = z
  .object({
    model: z.string().min(1).max(300).meta({
      description:
        'A model YAML (train from scratch, e.g. yolo11n.yaml) or ul://owner/project/model (fine-tune from its weights)',
    }),
    data: z.string().min(1).max(300).meta({ description: 'ul://owner/datasets/slug' }),
    epochs: z.number().int().min(1).max(10_000),
  })
  .catchall(z.union([Scalar, z.array(Scalar).max(100)]))
  .superRefine((args, ctx) => {
    for (const name of Object.keys(args)) {
      if (!ARG_NAME.test(name))
        ctx.addIssue({ code: 'custom', path: [name], message: 'is not an ultralytics argument name' });
      if ((RESERVED_ARGS as readonly string[]).includes(name))
        ctx.addIssue({ code: 'custom', path: [name], message: 'is set by the platform' });
    }
  })
  .meta({
    description:
      'ultralytics train arguments: model, data and epochs required; others (imgsz, batch, patience, …) passed through',
  });
export type TrainArgs = z.output<typeof TrainArgs>;

/** A model YAML the ultralytics package ships (yolo11n.yaml, yolov8s-seg.yaml): no download needed. */
export const MODEL_YAML = /^[A-Za-z0-9._-]+\.ya?ml$/;

interface Target {
  owner: string;
  project: string;
  model: string;
  gpuCount: number;
}

/** The job's GPUs as its container sees them (0..n-1), or cpu. */
const deviceOf = (gpuCount: number) =>
  gpuCount === 0 ? 'cpu' : Array.from({ length: gpuCount }, (_, index) => index).join(',');

/** An argument's value as the schema takes it (a scalar or a list of them), or one the platform sets. */
type ArgValue = z.output<typeof Scalar> | Array<z.output<typeof Scalar>>;

const format = (value: ArgValue): string =>
  Array.isArray(value)
    ? `[${value.map(format).join(',')}]`
    : value === null
      ? 'None'
      : typeof value === 'boolean'
        ? value
          ? 'True'
          : 'False'
        : String(value);

/**
 * `yolo train k=v ...`: the caller's arguments, with where it reports (project owner/project, name = the model)
 * and the device: the job's GPUs as the container sees them (0..n-1), or cpu.
 */
export function trainCommand(args: TrainArgs, target: Target): string[] {
  const device = deviceOf(target.gpuCount);
  const fixed: Record<string, ArgValue> = {
    project: `${target.owner}/${target.project}`,
    name: target.model,
    exist_ok: true,
    device,
  };
  const { model, data, epochs, ...rest } = args;
  return [
    'yolo',
    'train',
    ...Object.entries({ model, data, epochs, ...rest, ...fixed }).map(([name, value]) => `${name}=${format(value)}`),
  ];
}

/**
 * `yolo train resume model=<checkpoint>`: the checkpoint carries every argument (and where it reports); the data
 * reference, this host's device and a save dir in this work dir are given again.
 */
export function resumeCommand(args: TrainArgs, target: Target, checkpoint: string): string[] {
  return [
    'yolo',
    'train',
    'resume',
    `model=${checkpoint}`,
    `data=${args.data}`,
    `device=${deviceOf(target.gpuCount)}`,
    `save_dir=runs/${target.model}`,
  ];
}
