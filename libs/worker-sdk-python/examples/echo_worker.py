"""A runnable echo worker: ``python3 libs/worker-sdk-python/examples/echo_worker.py``.

  PO_API_KEY          required, the application's API key
  PO_WORKER_BASE_URL  the worker routes' base URL (default PO_BASE_URL)
  PO_BASE_URL         the API base URL (default http://127.0.0.1:8080)
  PO_INSTANCE_ID      default {hostname}-{pid}; unique per process
  PO_HANDLERS         comma list of names the echo handler serves (default echo)
  PO_CONCURRENCY      default 4

Ctrl+C (or SIGTERM) drains: running stages finish, then the worker announces its shutdown.
"""
import logging
import os
import socket
import sys

try:
    import po_worker
except ImportError:  # not installed: use the package next to this example
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
    import po_worker


def echo(ctx: po_worker.StageContext) -> str:
    return ctx.input


def main() -> int:
    env = os.environ
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    api_key = env.get("PO_API_KEY", "")
    if not api_key:
        print("PO_API_KEY is required: the API key of the application whose stages to run.", file=sys.stderr)
        return 1
    base_url = env.get("PO_BASE_URL") or "http://127.0.0.1:8080"
    names = [n.strip() for n in (env.get("PO_HANDLERS") or "echo").split(",") if n.strip()]
    try:
        worker = po_worker.Worker(
            base_url=base_url,
            worker_base_url=env.get("PO_WORKER_BASE_URL") or base_url,
            api_key=api_key,
            instance_id=env.get("PO_INSTANCE_ID") or f"{socket.gethostname()}-{os.getpid()}",
            worker_name="echo-worker-python",
            concurrency=int(env.get("PO_CONCURRENCY") or 4),
            handlers={name: echo for name in names},
        )
        worker.run()
    except (po_worker.WorkerConfigError, ValueError) as err:
        print(err, file=sys.stderr)
        return 1
    except Exception as err:
        print(f"echo worker could not start: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
