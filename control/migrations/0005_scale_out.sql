-- Scale-out: a report delivered twice is recorded once.
--
-- A report can reach the control plane twice: the link republishes a journaled report whose
-- publisher confirm was lost with its broker member, and the broker redelivers a report whose
-- acknowledgement was lost after the batch holding it committed. Both copies are the same bytes
-- (the link sends the journaled file as it is), so the sha256 of the message body identifies a
-- report. Reports recorded before this migration have none and are never compared.

alter table reports add column identity bytea check (identity is null or octet_length(identity) = 32);

create unique index reports_identity on reports (node, identity) where identity is not null;
