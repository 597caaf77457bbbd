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
