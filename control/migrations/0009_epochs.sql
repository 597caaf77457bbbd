-- A node's epoch (docs/design.md, "Hostile inputs", rule 6): removing a node ends its epoch, and
-- the name enrolled again is a new node. Each node gets a random epoch when it is enrolled (the
-- column's default; the nodes enrolled before this migration each get their own now), and every
-- declaration pushed to it records the epoch it was pushed with, which its message carries to
-- the node. The node's reports carry the epoch of the declaration they are about: ingest records
-- only a report of the node's current epoch, so that nothing said before a removal is recorded
-- for the node enrolled again under that name.
--
-- Declarations pushed before this migration have no epoch (null): the nodes that hold them send
-- reports without one, which ingest records until the node is pushed a declaration of its epoch.

alter table nodes add column epoch uuid not null default gen_random_uuid();
alter table declarations add column epoch uuid;

-- Whether each node's last report claims what was pushed to it (docs/design.md, "Hostile inputs",
-- rule 7): its generation, with its digest, is one of the node's declarations. Kept with the copy
-- of the last report, so that status and board read it without touching declarations: computed
-- whenever a last_reports row is written (null for an `undeclared` report, which claims nothing),
-- and set when the declaration it claims is recorded after it (a push's transaction commits after
-- its broker confirms, so a fast node's report can be recorded first).
alter table last_reports add column pushed boolean;

create function last_reports_pushed() returns trigger language plpgsql as $$
begin
  new.pushed := case when new.outcome = 'undeclared' then null else exists (
    select 1 from declarations d
    where d.node = new.node and d.generation = new.generation and d.digest = new.digest) end;
  return new;
end $$;

create trigger last_reports_pushed before insert or update on last_reports
  for each row execute function last_reports_pushed();

create function last_reports_after_push() returns trigger language plpgsql as $$
begin
  update last_reports s set pushed = true from inserted_declarations d
  where s.node = d.node and s.generation = d.generation and s.digest = d.digest
    and s.pushed is false;
  return null;
end $$;

create trigger last_reports_after_push after insert on declarations
  referencing new table as inserted_declarations
  for each statement execute function last_reports_after_push();

-- The existing inventory (backfill): the trigger computes each row.
update last_reports set pushed = null;
