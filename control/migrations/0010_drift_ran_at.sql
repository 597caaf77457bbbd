-- The verdicts are computed by the database (control/node_state.ts, fleetSql): status receives
-- only the nodes it lists, and the rules are written once. A drift result's staleness needs the
-- time its run observed, which the summary carries as ISO 8601 text on the node's clock (`ranAt`).
-- PostgreSQL cannot read every time the schema accepts (year 0000, offsets beyond 15:59), and a
-- cast that fails in the fleet read would fail the whole status; so ingest, which reads the
-- summary with its one schema, stores the instant it names beside it: as epoch milliseconds
-- (`ran_at_ms`, for the verdict) and as ISO 8601 in UTC to the millisecond (`ran_at`, as the board
-- shows it). A row without them (a summary of another version, or one whose time this could not
-- read) is judged "unreadable" with the reason, never dropped and never a failed read.

alter table node_drift add column ran_at_ms bigint, add column ran_at text;

-- The rows stored before this migration: each ranAt read here where PostgreSQL can; a row it
-- cannot read keeps no time and is shown unreadable until its node's next report replaces it.
do $$
declare
  d record;
  t timestamptz;
begin
  for d in select node, summary->>'ranAt' as ran_at from node_drift
    where summary->>'status' <> 'unreadable' and jsonb_typeof(summary->'ranAt') = 'string'
  loop
    begin
      t := d.ran_at::timestamptz;
      update node_drift set ran_at_ms = floor(extract(epoch from t) * 1000),
        ran_at = to_char(t at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
        where node = d.node;
    exception when others then
      null;
    end;
  end loop;
end
$$;
