-- Settings of the control plane that outlive one command, one row each. The first:
-- `public_broker`, the broker address nodes reach (the URLs `node enroll` and `node rotate` print a
-- node's credential in), kept so that the next enrollment uses it without being told again. A
-- value is an address only: never a credential (mesh-control refuses a URL that carries one).
create table settings (
  name text primary key check (name ~ '^[a-z][a-z0-9_]{0,62}$'),
  value text not null,
  updated_at timestamptz not null default now()
);
