import type { Region } from '@vp/config';
import type { Role } from '../account/roles.ts';
import type { JobScope } from './api-key.entity.ts';

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
  /** Set for a key minted for one training job (see JobScope); null for a user's key. */
  jobScope: JobScope | null;
  /** Set for a deployment's own key: it reaches that deployment's predict and service URL only (routes with deploymentKeys). */
  deploymentId: string | null;
  /**
   * What the account summary shows, loaded with the key and cached with it: every change to these
   * facts is announced like a key change, so the cache never serves them stale.
   */
  profile: {
    workspaceName: string;
    region: Region;
    workspaceCreatedAt: string;
    userName: string;
    teams: Array<{ id: string; handle: string; name: string; region: Region; role: Role }>;
  };
}

export type Actor = AnonymousActor | KeyActor;

export const ANONYMOUS: AnonymousActor = Object.freeze({ kind: 'anonymous' });
