// The appliance's secret, attached to the ORM that opened its database: SQL that keeps a column sealed under it (a
// deployment revision's token), and a migration that seals or opens existing rows, find it from their EntityManager
// or migration without every caller passing it along. An ORM opened without it (a test's scratch database) seals
// nothing: asking for it there is an error.
import type { Configuration } from '@mikro-orm/core';

const EXTENSION = '@vp/appliance-secret';

/** `secret` is read on first use (once): opening a database to look at it needs no secret. */
export function attachApplianceSecret(orm: { config: Configuration }, secret: () => string): void {
  orm.config.registerExtension(EXTENSION, secret);
}

export function applianceSecret(config: Configuration): string {
  const secret = config.getExtension<string>(EXTENSION);
  if (secret === undefined)
    throw new Error("this database was opened without the appliance's secret (openDatabase attaches it)");
  return secret;
}
