import { Migration } from '@mikro-orm/migrations';
import { openToken, sealToken, tokenCipher } from '../../deployments/deployment-tokens.ts';

interface RevisionToken {
  id: string;
  workspaceId: string;
}

/**
 * Deployment revisions' tokens sealed (deployments/deployment-tokens.ts) instead of kept in the clear. Existing rows are
 * sealed under the appliance secret of the process that migrates (the control plane at start, or vpctl with the
 * appliance's environment); down opens them again. Running servers keep their tokens: only how the row keeps it changes.
 */
export class Migration20261205000000_deployment_tokens_sealed extends Migration {
  override name = 'Migration20261205000000_deployment_tokens_sealed';

  override async up(): Promise<void> {
    await this.execute(
      `alter table "deployment_revisions" add column "token_key_id" varchar(16) null, add column "token_sealed" bytea null;`,
    );
    const rows = (await this.execute(
      `select r.id, d.workspace_id as "workspaceId", r.token from "deployment_revisions" r join "deployments" d on d.id = r.deployment_id`,
    )) as Array<RevisionToken & { token: string }>;
    if (rows.length > 0) {
      const cipher = tokenCipher(this.config);
      for (const row of rows) {
        const { tokenKeyId, tokenSealed } = sealToken(cipher, row.token, row.workspaceId);
        await this.execute(`update "deployment_revisions" set "token_key_id" = ?, "token_sealed" = ? where "id" = ?`, [
          tokenKeyId,
          tokenSealed,
          row.id,
        ]);
      }
    }
    await this.execute(
      `alter table "deployment_revisions" drop column "token", alter column "token_key_id" set not null, alter column "token_sealed" set not null;`,
    );
  }

  override async down(): Promise<void> {
    await this.execute(`alter table "deployment_revisions" add column "token" varchar(64) null;`);
    const rows = (await this.execute(
      `select r.id, d.workspace_id as "workspaceId", r.token_key_id as "tokenKeyId", r.token_sealed as "tokenSealed"
       from "deployment_revisions" r join "deployments" d on d.id = r.deployment_id`,
    )) as Array<RevisionToken & { tokenKeyId: string; tokenSealed: Buffer }>;
    if (rows.length > 0) {
      const cipher = tokenCipher(this.config);
      for (const row of rows)
        await this.execute(`update "deployment_revisions" set "token" = ? where "id" = ?`, [
          openToken(cipher, row),
          row.id,
        ]);
    }
    await this.execute(
      `alter table "deployment_revisions" drop column "token_key_id", drop column "token_sealed", alter column "token" set not null;`,
    );
  }
}
