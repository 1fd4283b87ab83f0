import type { EntityManager } from '@mikro-orm/postgresql';
import type { AppConfig } from '@vp/config';
import type { z } from 'zod';
import { newId } from '../db/ids.ts';
import { Forbidden, Invalid, NotFound, Unauthorized } from '../http/errors.ts';
import type { KeyActor } from './actor.ts';
import type { FailedAuthLimit } from './authenticator.ts';
import type { LoginBody, PasswordBody, SessionView } from './auth-session.schemas.ts';
import { LoginLockout } from './login-lockout.ts';
import { checkPasswordRules, hashPassword, verifyPassword } from './password.ts';
import { isSessionActor, lookupSession } from './session-actor.ts';
import {
  deleteExpired,
  deleteSessionByHash,
  deleteUserSessions,
  insertSession,
  passwordHashOf,
  savePasswordHash,
  sessionWorkspace,
  userByUsername,
  type SessionRow,
} from './session.store.ts';
import { cookieHeader, csrfTokenFor, hashSessionToken, newSessionToken, SESSION_COOKIE } from './session-token.ts';

const WRONG_CREDENTIALS = 'Wrong username or password';

export interface SessionDeps {
  config: AppConfig;
  /** Where browsers reach the appliance (the Secure flag and OIDC's redirect URI follow it). */
  baseUrl: string;
  /** The API's failed-authentication limit; absent (vpctl) where nobody signs in. */
  failures?: FailedAuthLimit;
}

/** A new session: its cookie value (only its hash is stored), what GET /api/auth/session shows of it, how it acts. */
export interface NewSession {
  token: string;
  session: z.input<typeof SessionView>;
  actor: KeyActor;
}

/** The user a sign-in names, once known (for the audit log: their failed sign-ins are in their personal workspace's). */
export type SignInUser = (user: { id: string; username: string; homeWorkspaceId: string | null }) => void;

/**
 * Console sessions. A session acts in one workspace (the user's personal one, or a team given at sign-in that they
 * belong to) exactly as the user's key there would: the same lookup of role and profile, every request. Expiry is
 * fixed: SESSION_HOURS after sign-in, not extended by use; signing out deletes the row, so the cookie is dead at once
 * on every replica.
 */
export class SessionService {
  private readonly em: EntityManager;
  private readonly deps: SessionDeps;
  private readonly lockout: LoginLockout;

  constructor(em: EntityManager, deps: SessionDeps) {
    this.em = em;
    this.deps = deps;
    this.lockout = new LoginLockout(deps.failures);
  }

  get secureCookies(): boolean {
    return this.deps.baseUrl.startsWith('https:');
  }

  /** Set-Cookie for a new session, or (no token) one that clears it. */
  cookie(token: string | undefined): string {
    return cookieHeader(SESSION_COOKIE, token ?? '', {
      secure: this.secureCookies,
      maxAgeSeconds: token ? this.deps.config.sessionHours * 3600 : 0,
    });
  }

  /**
   * Password sign-in: 401 for a wrong username or password (alike), 429 once the address or user is over its failures.
   * `named`: told the user when the username is one, right or wrong password.
   */
  async login(body: z.output<typeof LoginBody>, clientAddress: string, named?: SignInUser): Promise<NewSession> {
    this.lockout.refuseIfBlocked(clientAddress, body.username);
    const user = await userByUsername(this.em, body.username);
    if (user) named?.({ id: user.id, username: user.username, homeWorkspaceId: user.home_workspace_id });
    const stored = user ? await passwordHashOf(this.em, user.id) : undefined;
    if (!(await verifyPassword(body.password, stored)) || !user) {
      await this.lockout.countFailure(clientAddress, body.username);
      throw Unauthorized(WRONG_CREDENTIALS);
    }
    return this.open(user.id, body.workspace, 'password');
  }

  /** A session for a user the caller has authenticated (password or OIDC); 403 when the workspace is not theirs. */
  async open(userId: string, workspaceHandle: string | undefined, method: 'password' | 'oidc'): Promise<NewSession> {
    const workspace = await sessionWorkspace(this.em, userId, workspaceHandle);
    if (!workspace)
      throw Forbidden(
        workspaceHandle
          ? `You are not a member of workspace ${workspaceHandle}`
          : 'This user has no personal workspace',
      );
    await deleteExpired(this.em);
    const token = newSessionToken();
    await insertSession(this.em, {
      id: newId(),
      tokenHash: hashSessionToken(token)!,
      userId,
      workspaceId: workspace.id,
      method,
      hours: this.deps.config.sessionHours,
    });
    const found = await lookupSession(this.em, token);
    if (!found) throw Forbidden(`You have no role in workspace ${workspace.handle}`);
    return { token, session: view(found.row, token), actor: found.actor };
  }

  /** The cookie's session; 401 when there is none (no cookie, expired, signed out). */
  async current(token: string | undefined): Promise<z.input<typeof SessionView>> {
    const found = token ? await lookupSession(this.em, token) : undefined;
    if (!found) throw Unauthorized('Not signed in (no session, or it expired)');
    return view(found.row, token!);
  }

  /** Ends the cookie's session; returns how it acted (undefined when it was none: no cookie, expired, signed out). */
  async logout(token: string | undefined): Promise<KeyActor | undefined> {
    const hash = token ? hashSessionToken(token) : undefined;
    if (!hash) return undefined;
    const ended = await lookupSession(this.em, token!);
    await deleteSessionByHash(this.em, hash);
    return ended?.actor;
  }

  /**
   * PUT /api/auth/password: the caller's own password. With an API key, only the key of the user's personal workspace
   * (a team key or a member's key acts for a workspace, not for its holder's sign-in); with a session, the current
   * password too when there is one. The user's other sessions end.
   */
  async changeOwn(
    actor: KeyActor,
    body: z.output<typeof PasswordBody>,
    sessionToken: string | undefined,
    clientAddress: string,
  ): Promise<void> {
    if (isSessionActor(actor)) {
      const stored = await passwordHashOf(this.em, actor.userId);
      if (stored !== undefined) {
        this.lockout.refuseIfBlocked(clientAddress, actor.username);
        if (body.currentPassword === undefined)
          throw Invalid('currentPassword: required to change a password from a session');
        if (!(await verifyPassword(body.currentPassword, stored))) {
          await this.lockout.countFailure(clientAddress, actor.username);
          throw Forbidden('currentPassword: wrong password');
        }
      }
    } else if (actor.workspaceKind !== 'personal' || actor.role !== 'owner') {
      throw Forbidden("A password is set with the key of the user's own personal workspace (or vpctl users password)");
    }
    await this.setFor(actor.userId, body.password, sessionToken && hashSessionToken(sessionToken));
  }

  /** `vpctl users password`: sets the password and ends every session of the user. */
  async setByOperator(username: string, password: string): Promise<void> {
    const user = await userByUsername(this.em, username);
    if (!user) throw NotFound(`No user ${username}`);
    await this.setFor(user.id, password, undefined);
  }

  private async setFor(userId: string, password: string, keepSessionHash: string | undefined): Promise<void> {
    checkPasswordRules(password);
    const hash = await hashPassword(password);
    await this.em.transactional(async (em) => {
      await savePasswordHash(em, userId, hash);
      await deleteUserSessions(em, userId, keepSessionHash);
    });
  }
}

function view(row: SessionRow, token: string): z.input<typeof SessionView> {
  return {
    username: row.username,
    owner: row.handle,
    role: row.role!,
    csrfToken: csrfTokenFor(token),
    expiresAt: new Date(row.expires_at).toISOString(),
  };
}
