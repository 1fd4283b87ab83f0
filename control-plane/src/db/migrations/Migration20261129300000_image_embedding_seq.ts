import { Migration } from '@mikro-orm/migrations';

export class Migration20261129300000_image_embedding_seq extends Migration {
  override name = 'Migration20261129300000_image_embedding_seq';

  override up(): void | Promise<void> {
    // A number per stored vector, new each time a vector is written: the similarity index's key, and the watermark from
    // which each control plane adds what was written since (see VectorIndex). Numbers are never reused.
    this.addSql(`create sequence "image_embeddings_seq";`);
    this.addSql(
      `alter table "image_embeddings" add column "seq" bigint not null default nextval('image_embeddings_seq');`,
    );
    this.addSql(`alter sequence "image_embeddings_seq" owned by "image_embeddings"."seq";`);
    this.addSql(`create unique index "image_embeddings_seq_unique" on "image_embeddings" ("seq");`);
    this.addSql(`create index "image_embeddings_model_id_seq_index" on "image_embeddings" ("model_id", "seq");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "image_embeddings" drop column "seq";`);
  }
}
