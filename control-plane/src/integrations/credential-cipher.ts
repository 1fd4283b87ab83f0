import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';

const ALGORITHM = 'aes-256-gcm';
const IV_BYTES = 12;
const TAG_BYTES = 16;
const INFO = 'vp storage-integration credentials v1';

/** Credentials sealed under one key: the key's id (which secret made it), then iv ‖ tag ‖ ciphertext. */
export interface SealedCredentials {
  keyId: string;
  ciphertext: Buffer;
}

/** The key a secret derives and its id: the id names the key without revealing anything of it. */
function deriveKey(secret: string): { key: Buffer; id: string } {
  const key = Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), INFO, 32));
  return { key, id: createHmac('sha256', key).update('key-id').digest('hex').slice(0, 16) };
}

/** Credentials could not be opened: sealed under a secret this appliance no longer has, or altered. */
export class CredentialsUnreadable extends Error {}

/**
 * AES-256-GCM with a key derived (HKDF) from the appliance's secret. Each ciphertext records the id of its key,
 * so after the secret changes the rows sealed under the old one are found and re-sealed (`vpctl integrations reseal`); the
 * workspace id is the associated data, so a ciphertext copied to another workspace's row does not open.
 */
export class CredentialCipher {
  private readonly current: { key: Buffer; id: string };
  private readonly keys: Map<string, Buffer>;

  /** `secret`: the appliance's; `previous`: secrets it had before, still readable (key rotation). */
  constructor(secret: string, previous: readonly string[] = []) {
    this.current = deriveKey(secret);
    this.keys = new Map([...previous.map(deriveKey), this.current].map(({ id, key }) => [id, key]));
  }

  get keyId(): string {
    return this.current.id;
  }

  seal(credentials: object, workspaceId: string): SealedCredentials {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv(ALGORITHM, this.current.key, iv).setAAD(Buffer.from(workspaceId));
    const body = Buffer.concat([cipher.update(JSON.stringify(credentials), 'utf8'), cipher.final()]);
    return { keyId: this.current.id, ciphertext: Buffer.concat([iv, cipher.getAuthTag(), body]) };
  }

  open(sealed: SealedCredentials, workspaceId: string): unknown {
    const key = this.keys.get(sealed.keyId);
    if (!key)
      throw new CredentialsUnreadable(
        `sealed under key ${sealed.keyId}, which this appliance's secret does not derive`,
      );
    const iv = sealed.ciphertext.subarray(0, IV_BYTES);
    const tag = sealed.ciphertext.subarray(IV_BYTES, IV_BYTES + TAG_BYTES);
    try {
      const decipher = createDecipheriv(ALGORITHM, key, iv).setAAD(Buffer.from(workspaceId)).setAuthTag(tag);
      const text = Buffer.concat([
        decipher.update(sealed.ciphertext.subarray(IV_BYTES + TAG_BYTES)),
        decipher.final(),
      ]).toString('utf8');
      return JSON.parse(text);
    } catch {
      throw new CredentialsUnreadable("the sealed credentials do not open (altered, or not this workspace's)");
    }
  }
}
