-- Each node's latest mesh-reconcile verdict, as its link summarised it in its last report
-- (lib/drift.ts, DriftSummary). One row per node that reports one; a report without a summary
-- (the node runs no mesh-reconcile) removes the row, so the board says "not checked".
-- The findings themselves stay on the node: only counts per check and direction come here.

create table node_drift (
  node text primary key references nodes (name) on delete cascade,
  -- The summary as the link sent it (status, ranAt, intervalSeconds, registry, findings counts;
  -- or status "unreadable" with path and problem).
  summary jsonb not null,
  -- The report that carried it: the node's clock, and ours (staleness is judged on our clock from
  -- received_at plus the result's age at the node, reported_at - ranAt, so no clock is compared
  -- with another machine's).
  reported_at timestamptz not null,
  received_at timestamptz not null default now()
);
