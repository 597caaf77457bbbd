-- The module catalogue: where a built module came from, and every build asked for.

alter table modules
  add column source text,
  add column source_branch text,
  add column source_commit text check (source_commit ~ '^[0-9a-f]{40}$'),
  add column image text,
  add constraint modules_built_has_source check (
    origin <> 'built' or (source is not null and source_commit is not null and image is not null));

create table builds (
  -- The request's id, also its AMQP correlation id.
  id uuid primary key,
  module text not null check (module ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$'),
  source text not null,
  -- The branch "behind" is judged against (the source's default branch when not named).
  source_branch text,
  commit_asked text not null,
  artifact_store text not null check (artifact_store <> ''),
  requested_at timestamptz not null default now(),
  state text not null default 'pending' check (state in ('pending', 'built', 'failed')),
  resolved_commit text check (resolved_commit ~ '^[0-9a-f]{40}$'),
  image text,
  digest text check (digest ~ '^sha256:[0-9a-f]{64}$'),
  reason text,
  builder text,
  finished_at timestamptz,
  check (state <> 'built' or (image is not null and digest is not null and resolved_commit is not null)),
  check (state <> 'failed' or reason is not null)
);

create index builds_module on builds (module, requested_at desc);
