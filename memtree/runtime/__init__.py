"""What every actor process runs on: its env, the request client, PYTHONPATH, priority, CPU, logs, sweep."""
