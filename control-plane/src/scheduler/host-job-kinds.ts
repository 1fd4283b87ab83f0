import type { EntityManager } from '@mikro-orm/postgresql';
import type { JobSpec } from '@vp/protocol';

/** A host job's attempt, as its kind sees it when the job is assigned or ends. */
export interface HostJobAttempt {
  id: string;
  kind: string;
  workspaceId: string;
  subjectId: string | null;
  payload: Record<string, unknown>;
  attempt: number;
  hostId: string;
  gpuIndexes: number[];
}

export type HostJobOutcome = 'completed' | 'failed' | 'cancelled';

/** What the scheduler needs from one kind of job that runs on worker hosts. */
export interface HostJobKind {
  /** The command for this attempt, built when it is assigned (a JobFailure fails the job instead). */
  spec(em: EntityManager, attempt: HostJobAttempt): Promise<JobSpec>;
  /** Set when the job stops by itself on a cancel (a trainer told through its webhooks): its host stops it only after this. */
  readonly cancelGraceSeconds?: number;
  /** After the job ended for good (not when it is requeued), in its own transaction. */
  ended?(em: EntityManager, attempt: HostJobAttempt, outcome: HostJobOutcome): Promise<void>;
}

/** A command given whole in the payload (`{ spec }`): jobs the platform queues for its own use and tests. */
export const HOST_COMMAND_JOB = 'host-command';
export const hostCommandJob: HostJobKind = {
  spec: async (_em, attempt) => attempt.payload.spec as JobSpec,
};
