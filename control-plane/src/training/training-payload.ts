import type { TrainArgs } from './train-args.ts';

export const TRAINING_JOB = 'training';

/** What a training job carries from its start to every attempt on a host. */
export interface TrainingPayload {
  modelId: string;
  /** The user whose key started it: the job key acts as them. */
  userId: string;
  datasetId: string;
  /** captureDatasetVersion: the saved version the trainer reads. */
  datasetVersion?: number;
  /** Fine-tuning: the model whose weights `trainArgs.model` names. */
  weightsModelId?: string;
  trainArgs: TrainArgs;
  gpuType: string;
  estimatedCostCents: number;
}
