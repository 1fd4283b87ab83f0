import { Migration } from '@mikro-orm/migrations';

export class Migration20261124070000_model_train_results extends Migration {
  override name = 'Migration20261124070000_model_train_results';

  override up(): void | Promise<void> {
    // train_results becomes the per-epoch list clients read; the plots and the validation extremes it held move to
    // their own columns, and the rest of the old summary (metrics, best epoch) already has columns.
    this.addSql(`alter table "models" add "plots" jsonb null, add "validation_extremes" jsonb null;`);
    this.addSql(`
      update "models" set "plots" = "train_results" -> 'plots',
        "validation_extremes" = case when coalesce("train_results" -> 'extremes', 'null'::jsonb) <> 'null'::jsonb
          then jsonb_build_object('population', "train_results" -> 'validation' -> 'population', 'extremes', "train_results" -> 'extremes') end,
        "train_results" = null
      where jsonb_typeof("train_results") = 'object';`);
  }

  override down(): void | Promise<void> {
    this.addSql(
      `update "models" set "train_results" = jsonb_build_object('plots', "plots", 'extremes', "validation_extremes" -> 'extremes') where "plots" is not null or "validation_extremes" is not null;`,
    );
    this.addSql(`alter table "models" drop column "plots", drop column "validation_extremes";`);
  }
}
