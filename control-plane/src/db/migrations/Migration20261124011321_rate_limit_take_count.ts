import { Migration } from '@mikro-orm/migrations';

export class Migration20261124011321_rate_limit_take_count extends Migration {
  override name = 'Migration20261124011321_rate_limit_take_count';

  override up(): void | Promise<void> {
    // rate_limit_take for p_count takes of one bucket at once: one counter update however many of a batch's requests
    // share the bucket. Takes one after another each fit while previous × weight + current + 1 <= limit, so as many
    // as fit are allowed (the first ones) and counted; the rest are refused and not counted. The three-argument form
    // stays for replicas still running the previous release during an upgrade.
    this.addSql(`
      create function rate_limit_take(p_bucket text, p_limit integer, p_window_ms bigint, p_count integer)
      returns table (allowed integer, current_hits integer, previous_hits integer, window_start_ms bigint, now_ms bigint)
      language plpgsql as $$
      #variable_conflict use_column
      declare
        v_now bigint := floor(extract(epoch from clock_timestamp()) * 1000);
        v_start bigint := v_now - v_now % p_window_ms;
        v_weight double precision := 1 - (v_now - v_start)::double precision / p_window_ms;
        v_previous integer;
        v_current integer;
        v_allowed integer;
      begin
        select w.hits into v_previous from rate_limit_windows w
          where w.bucket = p_bucket and w.window_start_ms = v_start - p_window_ms;
        v_previous := coalesce(v_previous, 0);
        insert into rate_limit_windows (bucket, window_start_ms, hits) values (p_bucket, v_start, 0)
          on conflict (bucket, window_start_ms) do nothing;
        select w.hits into v_current from rate_limit_windows w
          where w.bucket = p_bucket and w.window_start_ms = v_start for update;
        v_allowed := greatest(0, least(p_count, floor(p_limit - v_previous * v_weight - v_current)));
        if v_allowed > 0 then
          update rate_limit_windows w set hits = w.hits + v_allowed where w.bucket = p_bucket and w.window_start_ms = v_start;
        end if;
        return query select v_allowed, v_current + v_allowed, v_previous, v_start, v_now;
      end $$;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop function if exists rate_limit_take(text, integer, bigint, integer);`);
  }
}
