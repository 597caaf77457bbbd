-- Fleet truth: what kind of machine a node is, how often it says it reports, and what left.
-- (A silent server is judged by the reconcile interval its last report carried, against the time
-- the control plane received that report; an episodic node that is away raises no alarm.)

-- server: expected to report at every interval, silence is an alarm. episodic: a laptop or a
-- phone, away for hours or days by design.
alter table nodes
  add column kind text not null default 'server' check (kind in ('server', 'episodic'));

-- The node's reconcile interval (ms) as its report stated it; null for a report from a host that
-- did not state one (hosts before this migration), judged as the link's default.
alter table reports
  add column interval_ms integer check (interval_ms between 1000 and 604800000);

-- What left the mesh: one row per removed node or module, kept as history (the node's own rows,
-- its declarations, reports and assignments, are deleted with it). A node enrolled again under
-- the same name drops its row here. `detail` says what it was (system, kind, enrolment, when it
-- was last heard, how many rows went with it).
create table removals (
  what text not null check (what in ('node', 'module')),
  name text not null,
  removed_at timestamptz not null default now(),
  detail jsonb not null,
  primary key (what, name)
);
