// A backup's authentication: an HMAC-SHA256 of backup.json under the operator's backup key, in backup.mac. backup.json
// holds the SHA-256 of every table file and of blobs.jsonl (which holds each copied object's), so the MAC covers the
// whole backup. The key is never written into a backup: whoever can change a backup's files but not the key cannot
// make a restore accept them (a planted owner key, say).
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import { Invalid } from '../http/errors.ts';
import { FILE_MODE, FOLDER_MODE } from './backup-format.ts';

export const MAC_FILE = 'backup.mac';
const ALGORITHM = 'HMAC-SHA256';
/** What is MACed: this, then backup.json's bytes (no other use of the key can produce the same MAC). */
const DOMAIN = 'vp-appliance-backup mac v1\n';
const KEY_HEX = /^[0-9a-f]{64}$/;

const MacFile = z.object({
  algorithm: z.literal(ALGORITHM),
  keyId: z.string(),
  mac: z.string().regex(/^[0-9a-f]{64}$/),
});

/** The operator's backup key: 32 random bytes, kept as hex in a file only its owner reads. */
export class BackupKey {
  private readonly key: Buffer;
  /** Names the key without revealing it: a backup made under another key says which. */
  readonly id: string;

  private constructor(key: Buffer) {
    this.key = key;
    this.id = createHmac('sha256', key).update('key-id').digest('hex').slice(0, 16);
  }

  /** The key in `file`; a clear error when there is none, or not one. */
  static async read(file: string): Promise<BackupKey> {
    let text: string;
    try {
      text = (await readFile(file, 'utf8')).trim();
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
        throw Invalid(
          `no backup key at ${file}: give the key file the backup was made with (--key-file FILE); a backup is not restored without it`,
        );
      }
      throw error;
    }
    if (!KEY_HEX.test(text))
      throw Invalid(`${file} is not a backup key (64 hexadecimal characters, as vpctl backup writes one)`);
    return new BackupKey(Buffer.from(text, 'hex'));
  }

  /** The key in `file`, or a new one written there (mode 0600, its folder 0700 if created); `created` says which. */
  static async readOrCreate(file: string): Promise<{ key: BackupKey; created: boolean }> {
    const key = randomBytes(32);
    await mkdir(dirname(file), { recursive: true, mode: FOLDER_MODE });
    try {
      await writeFile(file, `${key.toString('hex')}\n`, { mode: FILE_MODE, flag: 'wx' });
      return { key: new BackupKey(key), created: true };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      return { key: await BackupKey.read(file), created: false };
    }
  }

  private mac(manifest: Buffer): Buffer {
    return createHmac('sha256', this.key).update(DOMAIN).update(manifest).digest();
  }

  /** Writes backup.mac for backup.json's bytes (before backup.json itself, which marks a finished backup). */
  async sign(dir: string, manifest: Buffer): Promise<void> {
    const file = { algorithm: ALGORITHM, keyId: this.id, mac: this.mac(manifest).toString('hex') };
    await writeFile(join(dir, MAC_FILE), `${JSON.stringify(file)}\n`, { mode: FILE_MODE, flag: 'wx' });
  }

  /** Refuses backup.json's bytes unless backup.mac is this key's MAC of them. */
  async verify(dir: string, manifest: Buffer): Promise<void> {
    let text: string;
    try {
      text = await readFile(join(dir, MAC_FILE), 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT')
        throw Invalid(`the backup has no ${MAC_FILE}: it cannot be authenticated, so it is not restored`);
      throw error;
    }
    let parsed: z.infer<typeof MacFile>;
    try {
      parsed = MacFile.parse(JSON.parse(text));
    } catch {
      throw Invalid(`${MAC_FILE} is not a backup MAC this version reads: the backup is not restored`);
    }
    if (parsed.keyId !== this.id)
      throw Invalid(
        `the backup was made with another backup key (id ${parsed.keyId}; the key given is ${this.id}): give the key file it was made with`,
      );
    if (!timingSafeEqual(Buffer.from(parsed.mac, 'hex'), this.mac(manifest))) {
      throw Invalid(
        `backup.json does not match ${MAC_FILE} under the backup key: the backup was altered, and is not restored`,
      );
    }
  }
}
