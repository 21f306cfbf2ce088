"""Built-in defaults. Their types are the schema: a file value must match them.

No imports (not even __future__): the capture hook reads this on every run."""


def defaults() -> dict:
    return {
        "embeddingModel": "local",  # "local" (bundled static model), "ollama:<model>" or "model2vec:<folder>"
        # "auto": the Anthropic API when ANTHROPIC_API_KEY is set, else the local extractive
        # summariser; "extractive": always local; "anthropic": the API (idle without a key).
        "summarizerModel": "auto",
        "ollama": {"url": "http://127.0.0.1:11434", "timeoutMs": 30000},
        "anthropic": {
            "url": "https://api.anthropic.com",  # ANTHROPIC_BASE_URL overrides
            "model": "claude-haiku-4-5",
            "dailyCap": 200,  # summaries per day through the API; then extractive
            "minIntervalMs": 2000,  # at most one API summary per this interval
        },
        "retention": {
            "staleHours": 24,  # stale chunks are pruned after this
            "supersededDays": 7,  # superseded chunks are pruned after this
            "prunedDays": 30,  # pruned rows are deleted (audit kept) after this
        },
        "walkers": {
            "filterIntervalMs": 2000,  # safety sweep besides the event trigger
            "filterSettleMs": 100,  # after a new-pending event, wait this long to batch a burst
            "stalenessIntervalMs": 30000,
            "prunerIntervalMs": 300000,
            "embeddingIdleMs": 5000,
            "embeddingBatchSize": 32,
            "embedQueryTimeoutMs": 300,  # a query embedding slower than this: hybrid degrades to keyword
            "dedupeIntervalMs": 60000,
            "dedupeThreshold": 0.97,  # cosine at or above this among live nodes of one kind: near-duplicate
            "summarizerIntervalMs": 30000,
            "summarizerSubtreeThreshold": 25,
            "summaryTokens": 300,  # size of one summary
            # Walkers run at a lower CPU and I/O priority (nice 10, best-effort/7), so a
            # backlog never makes a query or a capture wait; the embed walker answers queries at normal priority.
            "lowPriority": True,
        },
        "capture": {
            "maxBytes": 100000,  # content over this is truncated, original size kept
            "filterMinSize": 50,  # smaller captures are dropped by the filter walker
            # A native Read's symbol chunks under this size join their neighbour (0: one chunk per
            # symbol): a file of many small functions stays tens of nodes, so one Read's writer work is bounded.
            "readSymbolMinBytes": 512,
            "bash": True,  # false: never store Bash output for this project
            "hookTimeoutMs": 100,  # hook waits this long for the writer's ack, then spools
            "dedupeWindowS": 3600,  # same tool output within this window is stored once
            # PostToolUse rewrite: above these sizes (memtree.tokens) the agent sees a
            # preview of a native Read/Grep/Bash output instead of all of it; the store
            # keeps the whole. The defaults are the smallest previews that kept every fact
            # of the context A/B within reach (docs/ARCHITECTURE.md, "Rewriting large native outputs").
            "rewrite": True,
            "rewriteReadTokens": 2000,
            "rewriteGrepTokens": 1000,
            "rewriteBashTokens": 1000,
            "previewTokens": 800,  # budget of one Read preview (an outline)
            "previewTextTokens": 400,  # budget of a Grep or Bash preview, or an excerpt of a text file
        },
        "bash": {"deny": [], "timeoutS": 60, "maxOutputBytes": 1000000},
        # Disk budget per project: over it, the pruner removes superseded, then stale,
        # then the oldest captures (never notes or pinned nodes) and vacuums.
        "storage": {"maxBytes": 1 << 30},
        # deny: extra secret-path globs; allowOutside: globs of paths outside the
        # project that read/grep may open (default: none, after resolving symlinks)
        "path": {"deny": [], "allowOutside": []},
        "supervisor": {
            "heartbeatMs": 1000,
            "missedHeartbeats": 3,  # this many missed beats: SIGKILL, counted as a crash
            "maxRestarts": 5,  # more than this within restartPeriodS: FATAL
            "restartPeriodS": 60,
            "backoffInitialMs": 100,
            "backoffMaxMs": 5000,
            "stableAfterS": 10,  # backoff resets after this long RUNNING
            "shutdownTimeoutS": 5,
            "startTimeoutS": 30,  # READY must arrive within this
            "busyLimitS": 300,  # one handler or tick running longer than this: hung, SIGKILL
        },
        "writer": {"callTimeoutMs": 5000, "spoolDrainMs": 2000, "batchMax": 512},
        # name -> {"module": "memtree.actors.walkers.x", "enabled": bool}; merged
        # over the built-in actor table, so a walker can be disabled or added.
        "actors": {},
    }


# Sections whose keys are free-form (validated by the consumer, not here).
OPEN_SECTIONS = frozenset({"actors"})

# Numbers are never negative; these may also be 0 (every other number must be
# more than 0: a 0 interval would spin, a 0 heartbeat would kill every actor).
ZERO_OK = frozenset(
    {
        "retention.staleHours",
        "retention.supersededDays",
        "retention.prunedDays",
        "walkers.filterSettleMs",
        "capture.filterMinSize",
        "capture.readSymbolMinBytes",
        "capture.hookTimeoutMs",
        "capture.dedupeWindowS",
        "supervisor.maxRestarts",
        "supervisor.backoffInitialMs",
        "supervisor.backoffMaxMs",
        "supervisor.stableAfterS",
        "supervisor.shutdownTimeoutS",
    }
)
