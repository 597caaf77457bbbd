-- Each node's current state kept current when it is written, not recomputed at every read.
--
-- status and board judge every node by its last report (its highest reports.id) and its current
-- declaration (its highest generation). Finding them was two index descents per node at every
-- read (10,000 nodes: 20,000 descents, one of them into a million reports). Two tables hold a
-- copy of each instead, one row per node, kept by triggers in the transaction that writes
-- reports or declarations (ingest's batch insert, push, and any other write: an update, a
-- delete, a truncate), so reading the fleet is one ordered scan of each.
--
-- The reports table's digest CHECK is also replaced by its cheaper equivalent: the bounded
-- repetition `{64}` costs PostgreSQL's regex engine 18-33 us a row, the largest CHECK cost of
-- ingest's insert; 'sha256:' followed by hex and 71 characters in all accepts the same strings.

-- A copy of each node's last report (the columns status and board read). A node that never
-- reported has no row.
create table last_reports (
  node text primary key references nodes (name) on delete cascade,
  -- The report this row copies (reports.id).
  report_id bigint not null,
  generation integer not null,
  digest text not null,
  outcome text not null,
  applied integer not null,
  total integer not null,
  trigger text not null,
  problems jsonb not null,
  interval_ms integer,
  reported_at timestamptz not null,
  received_at timestamptz not null
);

-- A copy of each node's current declaration (its last generation), without its body. A node
-- never pushed has no row.
create table current_declarations (
  node text primary key references nodes (name) on delete cascade,
  generation integer not null,
  digest text not null,
  total integer not null,
  pushed_at timestamptz not null
);

-- Recomputes the last_reports rows of `names` from reports (one reports_node_last descent
-- each): after an update or a delete may have changed or removed a node's last report. A node
-- no longer enrolled (deleted in the same statement, its reports cascading) gets no row.
create function last_reports_refresh(names text[]) returns void language sql as $$
  delete from last_reports s where s.node = any(names)
    and not exists (select 1 from reports r where r.node = s.node);
  insert into last_reports (node, report_id, generation, digest, outcome, applied, total, trigger,
    problems, interval_ms, reported_at, received_at)
  select l.node, l.id, l.generation, l.digest, l.outcome, l.applied, l.total, l.trigger,
    l.problems, l.interval_ms, l.reported_at, l.received_at
  from nodes n cross join lateral (
    select * from reports r where r.node >= n.name and r.node <= n.name
    order by r.node, r.id desc limit 1) l
  where n.name = any(names)
  order by l.node
  on conflict (node) do update set report_id = excluded.report_id,
    generation = excluded.generation, digest = excluded.digest, outcome = excluded.outcome,
    applied = excluded.applied, total = excluded.total, trigger = excluded.trigger,
    problems = excluded.problems, interval_ms = excluded.interval_ms,
    reported_at = excluded.reported_at, received_at = excluded.received_at;
$$;

-- Inserted reports: per node, the highest id inserted replaces the row unless the row already
-- copies a higher one (two transactions may commit in either order). Rows are taken in node
-- order, so concurrent inserts lock last_reports rows in one order.
create function last_reports_after_insert() returns trigger language plpgsql as $$
begin
  insert into last_reports (node, report_id, generation, digest, outcome, applied, total, trigger,
    problems, interval_ms, reported_at, received_at)
  select distinct on (node) node, id, generation, digest, outcome, applied, total, trigger,
    problems, interval_ms, reported_at, received_at
  from inserted_reports order by node, id desc
  on conflict (node) do update set report_id = excluded.report_id,
    generation = excluded.generation, digest = excluded.digest, outcome = excluded.outcome,
    applied = excluded.applied, total = excluded.total, trigger = excluded.trigger,
    problems = excluded.problems, interval_ms = excluded.interval_ms,
    reported_at = excluded.reported_at, received_at = excluded.received_at
  where last_reports.report_id < excluded.report_id;
  return null;
end $$;

-- Updated reports: every node one of them belonged to, before or after, is recomputed.
create function last_reports_after_update() returns trigger language plpgsql as $$
begin
  perform last_reports_refresh(array(
    select node from old_reports union select node from new_reports));
  return null;
end $$;

-- Deleted reports: the nodes whose last report was deleted are recomputed (retention never
-- deletes a node's last report, so pruning recomputes none).
create function last_reports_after_delete() returns trigger language plpgsql as $$
begin
  perform last_reports_refresh(array(
    select distinct s.node from last_reports s join old_reports o on o.id = s.report_id));
  return null;
end $$;

create function last_reports_after_truncate() returns trigger language plpgsql as $$
begin
  delete from last_reports;
  return null;
end $$;

create trigger last_reports_insert after insert on reports
  referencing new table as inserted_reports
  for each statement execute function last_reports_after_insert();
create trigger last_reports_update after update on reports
  referencing old table as old_reports new table as new_reports
  for each statement execute function last_reports_after_update();
create trigger last_reports_delete after delete on reports
  referencing old table as old_reports
  for each statement execute function last_reports_after_delete();
create trigger last_reports_truncate after truncate on reports
  for each statement execute function last_reports_after_truncate();

-- The same for declarations, by generation (declarations_pkey).
create function current_declarations_refresh(names text[]) returns void language sql as $$
  delete from current_declarations c where c.node = any(names)
    and not exists (select 1 from declarations d where d.node = c.node);
  insert into current_declarations (node, generation, digest, total, pushed_at)
  select l.node, l.generation, l.digest, l.total, l.pushed_at
  from nodes n cross join lateral (
    select * from declarations d where d.node = n.name order by d.generation desc limit 1) l
  where n.name = any(names)
  order by l.node
  on conflict (node) do update set generation = excluded.generation, digest = excluded.digest,
    total = excluded.total, pushed_at = excluded.pushed_at;
$$;

create function current_declarations_after_insert() returns trigger language plpgsql as $$
begin
  insert into current_declarations (node, generation, digest, total, pushed_at)
  select distinct on (node) node, generation, digest, total, pushed_at
  from inserted_declarations order by node, generation desc
  on conflict (node) do update set generation = excluded.generation, digest = excluded.digest,
    total = excluded.total, pushed_at = excluded.pushed_at
  where current_declarations.generation < excluded.generation;
  return null;
end $$;

create function current_declarations_after_change() returns trigger language plpgsql as $$
begin
  if tg_op = 'UPDATE' then
    perform current_declarations_refresh(array(
      select node from old_declarations union select node from new_declarations));
  else
    perform current_declarations_refresh(array(select distinct node from old_declarations));
  end if;
  return null;
end $$;

create function current_declarations_after_truncate() returns trigger language plpgsql as $$
begin
  delete from current_declarations;
  return null;
end $$;

create trigger current_declarations_insert after insert on declarations
  referencing new table as inserted_declarations
  for each statement execute function current_declarations_after_insert();
create trigger current_declarations_update after update on declarations
  referencing old table as old_declarations new table as new_declarations
  for each statement execute function current_declarations_after_change();
create trigger current_declarations_delete after delete on declarations
  referencing old table as old_declarations
  for each statement execute function current_declarations_after_change();
create trigger current_declarations_truncate after truncate on declarations
  for each statement execute function current_declarations_after_truncate();

-- The existing inventory (backfill): every node's last report and current declaration.
insert into last_reports (node, report_id, generation, digest, outcome, applied, total, trigger,
  problems, interval_ms, reported_at, received_at)
select distinct on (node) node, id, generation, digest, outcome, applied, total, trigger,
  problems, interval_ms, reported_at, received_at
from reports order by node, id desc;
insert into current_declarations (node, generation, digest, total, pushed_at)
select distinct on (node) node, generation, digest, total, pushed_at
from declarations order by node, generation desc;

alter table reports drop constraint reports_digest_check,
  add constraint reports_digest_check
    check (digest ~ '^sha256:[0-9a-f]+$' and length(digest) = 71);
