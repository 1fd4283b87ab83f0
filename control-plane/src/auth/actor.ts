import type { Role } from '../account/roles.ts';

export interface AnonymousActor {
  kind: 'anonymous';
}

/** Who a valid API key speaks for: one workspace, one acting user, one role there. */
export interface KeyActor {
  kind: 'key';
  keyId: string;
  keyPrefix: string;
  workspaceId: string;
  workspaceHandle: string;
  workspaceKind: 'personal' | 'team';
  /** The user whose permissions the key carries (for a team key, the team owner). */
  userId: string;
  username: string;
  role: Role;
}

export type Actor = AnonymousActor | KeyActor;

export const ANONYMOUS: AnonymousActor = Object.freeze({ kind: 'anonymous' });
