-- The inventory: nodes, modules, which modules each node runs, what each node was told
-- (declarations, by generation) and what each node said (reports).
-- No table holds a broker credential: the broker keeps its own salted hash and nothing else
-- keeps anything.

create table nodes (
  name text primary key check (name ~ '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$'),
  system text not null check (system in ('arch', 'alpine', 'android', 'debian')),
  enrolled_at timestamptz not null default now()
);

create table modules (
  name text primary key check (name ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$'),
  -- Counts up from 1 each time the module's content changes.
  version integer not null check (version >= 1),
  -- sha256 of body, "sha256:<hex>".
  digest text not null check (digest ~ '^sha256:[0-9a-f]{64}$'),
  -- The declaration fragment (JSON, version 1) exactly as handed over.
  body text not null,
  -- handed-over (module add), built (from a source and commit), shipped (with the control plane).
  origin text not null check (origin in ('handed-over', 'built', 'shipped')),
  updated_at timestamptz not null default now()
);

create table assignments (
  node text not null references nodes (name) on delete cascade,
  module text not null references modules (name),
  -- Resources are rendered in assignment order.
  position bigserial not null,
  assigned_at timestamptz not null default now(),
  primary key (node, module)
);

create table declarations (
  node text not null references nodes (name) on delete cascade,
  generation integer not null check (generation >= 1),
  digest text not null check (digest ~ '^sha256:[0-9a-f]{64}$'),
  body text not null,
  -- Resources in body, for "3 of 8" before the node has said anything.
  total integer not null check (total >= 0),
  pushed_at timestamptz not null default now(),
  primary key (node, generation)
);

create table reports (
  id bigserial primary key,
  node text not null references nodes (name) on delete cascade,
  generation integer not null check (generation >= 0),
  digest text not null check (digest ~ '^sha256:[0-9a-f]{64}$'),
  outcome text not null check (outcome in ('applied', 'refused', 'failed')),
  applied integer not null check (applied >= 0),
  total integer not null check (total >= 0),
  trigger text not null check (trigger in ('push', 'start', 'interval')),
  problems jsonb not null,
  changes jsonb not null,
  host_version text not null,
  -- The node's clock, and ours.
  reported_at timestamptz not null,
  received_at timestamptz not null default now()
);

-- The last report of a node: an index-only descent per node (status, board, push --behind).
create index reports_node_last on reports (node, id desc);
