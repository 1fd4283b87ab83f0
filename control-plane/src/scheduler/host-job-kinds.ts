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
  /**
   * SQL true (on the job, alias j) when the job's own reports say its work completed, though its host never said it
   * ended: a lost attempt of it is then completed rather than run again.
   */
  readonly completedWhen?: string;
  /** With completedWhen: SQL of when its work completed by its own reports (alias j), the end a lost attempt of it gets. */
  readonly completedAt?: string;
  /** After the job ended for good (not when it is requeued), in the transaction that ended it (its subject's status, keys, charges). */
  ended?(em: EntityManager, attempt: HostJobAttempt, outcome: HostJobOutcome): Promise<void>;
}

/** A command given whole in the payload (`{ spec }`): jobs the platform queues for its own use and tests. */
export const HOST_COMMAND_JOB = 'host-command';
export const hostCommandJob: HostJobKind = {
  spec: async (_em, attempt) => attempt.payload.spec as JobSpec,
};
