-- The worker-gateways cache live worker sessions for a few seconds; a session that is superseded,
-- has its expiry or key changed, or is deleted is announced at commit, so every cache drops it at
-- once (decision 0099). Heartbeats and other updates announce nothing.
CREATE FUNCTION po_notify_worker_session_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('po_worker_sessions', OLD.token_hash);
  RETURN NULL;
END
$$;

CREATE TRIGGER worker_sessions_changed AFTER UPDATE OF token_hash, superseded_at, expires_at, api_key_id OR DELETE ON "worker_sessions"
  FOR EACH ROW EXECUTE FUNCTION po_notify_worker_session_change();
