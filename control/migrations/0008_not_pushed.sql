-- A link that holds no declaration from the control plane reports so (outcome `undeclared`: it is
-- linked and heard, and was never pushed one), so that status tells it apart from a node never
-- heard at all (`not pushed`, not `never spoke`).
alter table reports drop constraint reports_outcome_check;
alter table reports add constraint reports_outcome_check
  check (outcome in ('applied', 'refused', 'failed', 'undeclared'));
