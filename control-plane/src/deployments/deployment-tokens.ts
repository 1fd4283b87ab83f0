// A revision's bearer token for its inference server. The control plane presents it on every request it sends that
// server, so it cannot be kept hashed: it is kept sealed (integrations/credential-cipher.ts, under the appliance
// secret, the deployment's workspace as associated data), never in the clear, so the database or a backup alone
// gives no way into a deployment's server.
import { randomBytes } from 'node:crypto';
import type { Configuration } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { applianceSecret } from '../db/appliance-secret.ts';
import { CredentialCipher, CredentialsUnreadable } from '../integrations/credential-cipher.ts';
import { setSealedToken, tokensUnderOtherKeys, type SealedToken } from './deployment-revision.store.ts';

export type { SealedToken } from './deployment-revision.store.ts';

const ciphers = new WeakMap<Configuration, CredentialCipher>();

/** The cipher of the appliance secret the ORM was opened with (one per ORM: its key is derived once). */
export function tokenCipher(config: Configuration): CredentialCipher {
  let cipher = ciphers.get(config);
  if (!cipher) ciphers.set(config, (cipher = new CredentialCipher(applianceSecret(config))));
  return cipher;
}

export function sealToken(
  cipher: CredentialCipher,
  token: string,
  workspaceId: string,
): { tokenKeyId: string; tokenSealed: Buffer } {
  const sealed = cipher.seal({ token }, workspaceId);
  return { tokenKeyId: sealed.keyId, tokenSealed: sealed.ciphertext };
}

/** A new revision's token (32 random bytes, hex), sealed for its row: it is opened when its server is started. */
export function newSealedToken(em: EntityManager, workspaceId: string): { tokenKeyId: string; tokenSealed: Buffer } {
  return sealToken(tokenCipher(em.config), randomBytes(32).toString('hex'), workspaceId);
}

/** Opens a sealed token; CredentialsUnreadable when the secret that sealed it is no longer the appliance's. */
export function openToken(cipher: CredentialCipher, sealed: SealedToken): string {
  const opened = cipher.open(
    { keyId: sealed.tokenKeyId, ciphertext: Buffer.from(sealed.tokenSealed) },
    sealed.workspaceId,
  ) as { token?: unknown };
  if (typeof opened?.token !== 'string') throw new CredentialsUnreadable('the sealed token holds no token');
  return opened.token;
}

/** Why a token does not open: the secret changed (and the tokens were not re-sealed), or the row was altered. */
export const TOKEN_UNREADABLE =
  "its token does not open under this appliance's SIGNING_SECRET (after changing it, run vpctl integrations reseal with the previous one)";

/** The token of a revision's row, with the appliance secret of `em`'s ORM; CredentialsUnreadable saying TOKEN_UNREADABLE. */
export function revisionToken(em: EntityManager, sealed: SealedToken): string {
  try {
    return openToken(tokenCipher(em.config), sealed);
  } catch (error) {
    if (error instanceof CredentialsUnreadable) throw new CredentialsUnreadable(TOKEN_UNREADABLE);
    throw error;
  }
}

/**
 * After the appliance secret changed (key rotation): tokens sealed under an earlier secret's key are opened with
 * `previousSecrets` and sealed again under the current one. Revisions no given secret opens are named, untouched.
 */
export async function resealTokens(
  em: EntityManager,
  previousSecrets: string[],
): Promise<{ resealed: number; unreadable: string[] }> {
  const cipher = new CredentialCipher(applianceSecret(em.config), previousSecrets);
  const unreadable: string[] = [];
  let resealed = 0;
  for (const row of await tokensUnderOtherKeys(em, cipher.keyId)) {
    try {
      await setSealedToken(em, row.id, sealToken(cipher, openToken(cipher, row), row.workspaceId));
      resealed += 1;
    } catch (error) {
      if (!(error instanceof CredentialsUnreadable)) throw error;
      unreadable.push(row.id);
    }
  }
  return { resealed, unreadable };
}
