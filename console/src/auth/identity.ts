import { useQuery, useQueryClient } from '@tanstack/react-query';
import { api, ApiError, unwrap } from '../api/client.ts';
import { forgetCredentials, rememberCsrfToken, storedKey } from '../api/credentials.ts';

/** Who this tab acts as: the workspace its pages default to, and how it signed in. */
export interface Identity {
  owner: string;
  username: string;
  role: string;
  via: 'key' | 'session';
}

const IDENTITY_KEY = ['identity'] as const;

/** A pasted key: the account summary names its workspace. Otherwise the session cookie, if any. */
async function loadIdentity(): Promise<Identity | null> {
  if (storedKey()) {
    const summary = unwrap(await api.GET('/api/account/summary'));
    return { owner: summary.username, username: summary.actingUser.username, role: summary.role, via: 'key' };
  }
  const answer = await api.GET('/api/auth/session');
  // 401: no session; 404: an appliance without the sign-in routes.
  if (answer.response.status === 401 || answer.response.status === 404) return null;
  const { session } = unwrap(answer);
  rememberCsrfToken(session.csrfToken);
  return { owner: session.owner, username: session.username, role: session.role, via: 'session' };
}

export function useIdentity() {
  return useQuery({
    queryKey: IDENTITY_KEY,
    queryFn: loadIdentity,
    staleTime: 60_000,
    retry: (count, error) => !(error instanceof ApiError && error.status < 500) && count < 2,
  });
}

export function useSignOut() {
  const queries = useQueryClient();
  return async (identity: Identity | null | undefined) => {
    if (identity?.via === 'session') await api.POST('/api/auth/logout');
    forgetCredentials();
    queries.clear();
  };
}

export function useRefreshIdentity() {
  const queries = useQueryClient();
  return () => queries.resetQueries({ queryKey: IDENTITY_KEY });
}

const EDITING_ROLES = new Set(['owner', 'admin', 'editor']);

/**
 * Whether the pages of `owner` show edit controls: only in the signed-in workspace, and not to a viewer. The API
 * decides either way; this only keeps a viewer from being offered what would be refused.
 */
export function useCanEdit(owner: string): boolean {
  const identity = useIdentity().data;
  return !!identity && identity.owner === owner && EDITING_ROLES.has(identity.role);
}
