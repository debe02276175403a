-- The budget counters moved to a file of their own (migrations/budget/), so that
-- budget writes never queue behind page writes. The rows here counted windows of
-- at most an hour; a client's windows start afresh once at the upgrade.
DROP TABLE rate_limit_counters;
